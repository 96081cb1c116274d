#!/usr/bin/env python3
"""Run 29: interference on attention kernels (issues 14/15), one H200.

Run 14 measured how much a GEMM slows beside a kernel that holds k SMs (and streams HBM), run 26 the same
for memory-bound kernels (0.99-1.04 beside held SMs); the simulator applies the GEMM curve to every
compute kernel beside communication. DeepSeek's published F&B pair shows its flash attention at about
its alone price with all of it beside DeepEP's 20 SMs (docs/moe-dualpipe.md). This run times attention
the same way (run 14's method and side kernels, as run 26 used them, unchanged):
  attn_fwd_mla     cuDNN SDPA forward, causal, [1, 128 heads, 4096] d_qk 192, d_v 128 (DeepSeek-V3's MLA)
  attn_fwdbwd_mla  the same forward and its backward
  attn_fwd_gqa     cuDNN SDPA forward, causal, [1, 8 q / 1 kv heads, 8192] d 128 (Llama-70B at TP 8)
  attn_fwdbwd_gqa  the same forward and its backward
  fc1 GEMM         the run-14 fc1 shape (4096x7168x8192 bf16), the control that ties this run to runs 14 and 26
each alone and beside: hold k (k SMs held, no traffic), copy k (k SMs streaming HBM), fma k; k = 8, 16,
20 (DeepEP's SM budget), 32. Each case paired with an alone window right before it; passes alternate.
Output: interference.csv (per window), interference_summary.txt (median per kernel, case, k).
Usage: attn_interference.py OUTDIR [--deadline S] [--passes N]
"""
import ctypes, csv, datetime, math, os, statistics, sys, time
import numpy as np
import torch
import cupy as cp

HERE = os.path.dirname(os.path.abspath(__file__))
SMEM = 120 * 1024           # dynamic shared memory per side block: one block per SM
MAX_NS = 3_000_000_000      # side kernel guard
COPY_BYTES = 2 << 30        # side_copy source (and destination) buffer
CE_BYTES = 2 << 30          # one cudaMemcpyAsync (the whole buffer: few commands in the stream queue)
KS = [8, 16, 20, 32]
CE_KINDS = ["ce", "cebatch"]
FULL_HOLD_S = 0.5
SHAPES = [  # name, M, N, K (the GEMM control), or an attention kernel (K = 0)
    ("attn_fwd_mla", 0, 0, 0),
    ("attn_fwdbwd_mla", 0, 0, 0),
    ("attn_fwd_gqa", 0, 0, 0),
    ("attn_fwdbwd_gqa", 0, 0, 0),
    ("fc1", 4096, 7168, 8192),
]
ATTN = {  # name: (heads, kv heads, seq, d_qk, d_v)
    "mla": (128, 128, 4096, 192, 128),
    "gqa": (8, 1, 8192, 128, 128),
}
WINDOW_S = 0.2


class Mapped:
    """n uint32 of pinned host memory mapped into the device (cudaHostAllocPortable | Mapped)."""
    def __init__(self, n):
        try:
            self.hptr = cp.cuda.runtime.hostAlloc(4 * n, 3)
        except AttributeError:  # cudaHostAlloc through CuPy's pinned pool; under UVA it is mapped
            self._mem = cp.cuda.alloc_pinned_memory(4 * n)
            self.hptr = self._mem.ptr
        try:
            self.dptr = cp.cuda.runtime.hostGetDevicePointer(self.hptr, 0)
        except AttributeError:  # unified addressing: the device pointer is the host pointer
            self.dptr = self.hptr
        self.arr = np.ctypeslib.as_array((ctypes.c_uint32 * n).from_address(self.hptr))
        self.arr[:] = 0


class Side:
    def __init__(self):
        src = open(os.path.join(HERE, "side_kernels.cu")).read()
        self.k = {}
        for name in ("side_copy", "side_hold", "side_fma", "side_hold_full"):
            f = cp.RawKernel(src, name)
            if name != "side_hold_full":
                f.max_dynamic_shared_size_bytes = SMEM
            self.k[name] = f
        self.started, self.one = Mapped(1024), Mapped(1)
        self.one.arr[0] = 1
        self.dflag = torch.zeros(4, dtype=torch.int32, device="cuda")
        self.sF = torch.cuda.Stream()
        self.src = torch.randint(-2**31, 2**31 - 1, (COPY_BYTES // 4,), dtype=torch.int32, device="cuda")
        self.dst = torch.empty_like(self.src)
        self.nchunks = COPY_BYTES // (1 << 20)
        self.out = torch.zeros(3 * 1024, dtype=torch.int64, device="cuda")
        self.kblocks = 0

    def launch(self, kind, k, stream, smem=SMEM):
        self.started.arr[:] = 0
        self.out.zero_()
        self.dflag.zero_()
        torch.cuda.synchronize()
        f = self.k["side_" + kind]
        args = tuple(np.uint64(v) for v in (self.src.data_ptr(), self.dst.data_ptr(), self.nchunks,
                                            self.dflag.data_ptr(), self.started.dptr, self.out.data_ptr(), MAX_NS))
        with cp.cuda.ExternalStream(stream.cuda_stream):
            if kind == "hold_full":
                f((k,), (1024,), args, shared_mem=0)
            else:
                f((k,), (512,), args, shared_mem=smem)
        self.kblocks = k
        t0 = time.time()
        while int(self.started.arr[:k].sum()) < k:
            if time.time() - t0 > 2.0:
                return int(self.started.arr[:k].sum())
        return k

    def stop(self, stream):
        cp.cuda.runtime.memcpyAsync(self.dflag.data_ptr(), self.one.hptr, 4, 1, self.sF.cuda_stream)
        stream.synchronize()
        o = self.out.view(-1, 3)[: self.kblocks].cpu().numpy().astype(np.float64)
        span = (o[:, 2].max() - o[:, 1].min()) * 1e-9
        return float(o[:, 0].sum()), span, span * 1e9 >= MAX_NS * 0.99


def ev():
    return torch.cuda.Event(enable_timing=True)


class Gemm:
    def __init__(self, name, m, n, k):
        self.name, self.m, self.n, self.k = name, m, n, k
        if k > 0:
            self.xs = [torch.empty(m, k, device="cuda", dtype=torch.bfloat16).uniform_(-1, 1) for _ in range(3)]
            self.ws = [torch.empty(n, k, device="cuda", dtype=torch.bfloat16).uniform_(-1, 1) for _ in range(3)]
            self.cs = [torch.empty(m, n, device="cuda", dtype=torch.bfloat16) for _ in range(3)]
            fn = lambda i: torch.mm(self.xs[i % 3], self.ws[i % 3].t(), out=self.cs[i % 3])
            self.bytes = 2.0 * (m * k + n * k + m * n)
        else:
            from torch.nn.attention import SDPBackend, sdpa_kernel
            import torch.nn.functional as F
            h, hk, s, dqk, dv = ATTN[name.rsplit("_", 1)[1]]
            bwd = "fwdbwd" in name
            mk = lambda hh, d: torch.randn(1, hh, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=bwd)
            self.q, self.kk, self.v = mk(h, dqk), mk(hk, dqk), mk(hk, dv)
            self.g = torch.randn(1, h, s, dv, device="cuda", dtype=torch.bfloat16)
            gqa = h != hk
            # causal attention FLOPs: 2 s^2 h (d_qk + d_v) / 2 forward, 2.5x that for the backward
            self.bytes = s * s * h * (dqk + dv) * (3.5 if bwd else 1.0)
            def fn(i):
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    if bwd:
                        o = F.scaled_dot_product_attention(self.q, self.kk, self.v, is_causal=True, enable_gqa=gqa)
                        o.backward(self.g)
                    else:
                        with torch.no_grad():
                            F.scaled_dot_product_attention(self.q, self.kk, self.v, is_causal=True, enable_gqa=gqa)
        self.stream = torch.cuda.Stream()
        with torch.cuda.stream(self.stream):
            for i in range(6):
                fn(i)
        torch.cuda.synchronize()
        a, b = ev(), ev()
        ts = []
        for i in range(10):
            a.record(); fn(i); b.record(); b.synchronize(); ts.append(a.elapsed_time(b) * 1e-3)
        self.single = statistics.median(ts)
        self.calls = max(8, int(WINDOW_S / self.single))
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph, stream=self.stream):
            for i in range(self.calls):
                fn(i)
        self.window()

    def window(self):
        """One replay on self.stream: (seconds per call, start event, end event, host t0, host t1)."""
        e0, e1 = ev(), ev()
        h0 = time.time()
        with torch.cuda.stream(self.stream):
            e0.record(self.stream)
            self.graph.replay()
            e1.record(self.stream)
        e1.synchronize()
        h1 = time.time()
        return e0.elapsed_time(e1) * 1e-3 / self.calls, e0, e1, h0, h1


class _Loc(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _Attr(ctypes.Structure):  # struct cudaMemcpyAttributes (CUDA 13.0 driver_types.h)
    _fields_ = [("srcAccessOrder", ctypes.c_int), ("srcLocHint", _Loc), ("dstLocHint", _Loc), ("flags", ctypes.c_uint)]


_batch = []


def batch_fn():
    """cudaMemcpyBatchAsync of the libcudart this process loaded (CUDA 13 signature, no failIdx)."""
    if not _batch:
        path = None
        for line in open("/proc/self/maps"):
            if "libcudart.so" in line:
                path = line.split()[-1]
                break
        lib = ctypes.CDLL(path or "libcudart.so.13")
        f = lib.cudaMemcpyBatchAsync
        f.restype = ctypes.c_int
        f.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t),
                      ctypes.c_size_t, ctypes.POINTER(_Attr), ctypes.POINTER(ctypes.c_size_t), ctypes.c_size_t,
                      ctypes.c_void_p]
        _batch.append((f, path))
        print(f"cudaMemcpyBatchAsync from {path}", flush=True)
    return _batch[0][0]


def ce_launch(side, stream, n, batch=False):
    """n D2D copies of CE_BYTES on stream (cudaMemcpyAsync, or cudaMemcpyBatchAsync with
    PreferOverlapWithCompute), an event before each and after the last."""
    evs = [ev() for _ in range(n + 1)]
    evs[0].record(stream)
    per = COPY_BYTES // CE_BYTES
    for i in range(n):
        off = (i % per) * CE_BYTES
        d, s_ = side.dst.data_ptr() + off, side.src.data_ptr() + off
        if batch:
            attr = _Attr(1, _Loc(1, 0), _Loc(1, 0), 1)  # stream order, device 0, PreferOverlapWithCompute
            rc = batch_fn()((ctypes.c_void_p * 1)(d), (ctypes.c_void_p * 1)(s_), (ctypes.c_size_t * 1)(CE_BYTES), 1,
                            ctypes.byref(attr), (ctypes.c_size_t * 1)(0), 1, ctypes.c_void_p(stream.cuda_stream))
            if rc != 0:
                raise RuntimeError(f"cudaMemcpyBatchAsync returned {rc}")
        else:
            cp.cuda.runtime.memcpyAsync(d, s_, CE_BYTES, 3, stream.cuda_stream)
        evs[i + 1].record(stream)
    return evs


def ce_rate(evs, e0=None, window_ms=None):
    """Bytes (read + written) per second of the copies inside [e0, e0 + window_ms] (all if e0 is None)."""
    nbytes, secs = 0, 0.0
    for i in range(len(evs) - 1):
        if e0 is not None:
            s, e = e0.elapsed_time(evs[i]), e0.elapsed_time(evs[i + 1])
            if s < 0 or e > window_ms:
                continue
        nbytes += 2 * CE_BYTES
        secs += evs[i].elapsed_time(evs[i + 1]) * 1e-3
    return (nbytes / secs if secs > 0 else float("nan")), nbytes / (2 * CE_BYTES)


def main():
    outdir = sys.argv[1]
    deadline = time.time() + float(sys.argv[sys.argv.index("--deadline") + 1]) if "--deadline" in sys.argv else 1e18
    passes = int(sys.argv[sys.argv.index("--passes") + 1]) if "--passes" in sys.argv else 3
    quick = "--quick" in sys.argv
    global WINDOW_S
    if quick:
        WINDOW_S = 0.05
    props = torch.cuda.get_device_properties(0)
    print(f"# {props.name}, {props.multi_processor_count} SMs, torch {torch.__version__}, cupy {cp.__version__}", flush=True)
    side = Side()
    sB, sC = torch.cuda.Stream(), torch.cuda.Stream()
    rows, side_rows = [], []
    log = open(os.path.join(outdir, "interference_windows.csv"), "w", newline="")
    lw = csv.writer(log)
    lw.writerow(["what", "shape", "case", "k", "pass", "host_t0", "host_t1"])

    # --- each side load alone ---------------------------------------------------------------
    def side_alone(p):
        for kind in ("copy", "hold", "fma"):
            for k in KS + ([66, 132] if kind == "copy" else []):
                if kind != "copy" and k not in (16, 32):
                    continue
                h0 = time.time()
                got = side.launch(kind, k, sB)
                time.sleep(0.2 if not quick else 0.05)
                b, span, guard = side.stop(sB)
                lw.writerow(["side_alone", "", kind, k, p, h0, time.time()])
                side_rows.append(dict(pas=p, case=kind, k=k, started=got, bytes=b, seconds=span,
                                      GBps=b / span / 1e9, guard_hit=int(guard), done_before_release=""))
        for cek in CE_KINDS:
            h0 = time.time()
            evs = ce_launch(side, sC, 8, batch=(cek == "cebatch"))
            sC.synchronize()
            bw, n = ce_rate(evs)
            lw.writerow(["side_alone", "", cek, 0, p, h0, time.time()])
            side_rows.append(dict(pas=p, case=cek, k=0, started=0, bytes=n * 2 * CE_BYTES,
                                  seconds=evs[0].elapsed_time(evs[-1]) * 1e-3, GBps=bw / 1e9, guard_hit=0))
            # the copies while every thread slot of every SM is held for FULL_HOLD_S: a copy that needs
            # SMs cannot start until the hold ends (its span then exceeds FULL_HOLD_S)
            h0 = time.time()
            nfull = 2 * props.multi_processor_count
            got = side.launch("hold_full", nfull, sB)
            evs = ce_launch(side, sC, 4, batch=(cek == "cebatch"))
            time.sleep(FULL_HOLD_S)
            done = int(evs[-1].query())
            _, span, guard = side.stop(sB)
            sC.synchronize()
            bw, n = ce_rate(evs)
            lw.writerow(["side_alone", "", cek + "_under_full_hold", 0, p, h0, time.time()])
            side_rows.append(dict(pas=p, case=cek + "_under_full_hold", k=nfull, started=got,
                                  bytes=n * 2 * CE_BYTES, seconds=evs[0].elapsed_time(evs[-1]) * 1e-3,
                                  GBps=bw / 1e9, guard_hit=int(guard), done_before_release=done))
        return {c: statistics.median([r["seconds"] / 8 for r in side_rows if r["case"] == c]) for c in CE_KINDS}

    global CE_KINDS
    try:  # is cudaMemcpyBatchAsync there and accepted?
        evs = ce_launch(side, sC, 1, batch=True)
        sC.synchronize()
    except Exception as e:  # noqa: BLE001
        print(f"cebatch unavailable: {type(e).__name__}: {e}", flush=True)
        CE_KINDS = ["ce"]
    t_ce = side_alone(0)
    print(f"side alone (pass 0): " + ", ".join(f"{r['case']}{r['k']}={r['GBps']:.0f}GB/s ({r['seconds']*1e3:.1f} ms)" for r in side_rows), flush=True)

    cases = [("copy", k) for k in KS] + [("hold", k) for k in KS] + [("fma", 20)]
    gemms = {}
    for name, m, n, k in SHAPES:
        try:
            gemms[name] = Gemm(name, m, n, k)
        except Exception as e:  # noqa: BLE001  (a capture the backend refuses: the shape is left out, logged)
            print(f"{name}: left out: {type(e).__name__}: {str(e)[:200]}", flush=True)
            torch.cuda.synchronize()
            continue
        g = gemms[name]
        print(f"{name} {m}x{n}x{k}: single {g.single*1e6:.1f} us, {g.calls} calls per window", flush=True)
    shapes = [sh for sh in SHAPES if sh[0] in gemms]

    stopped = False
    for p in range(1, passes + 1):
        order = cases if p % 2 else cases[::-1]
        for name, m, n, k in shapes:
            g = gemms[name]
            for kind, ks in order:
                if time.time() > deadline:
                    stopped = True
                    break
                t_alone, _, _, ha0, ha1 = g.window()
                lw.writerow(["gemm_alone", name, kind, ks, p, ha0, ha1])
                side_b = side_s = float("nan"); started = guard = 0; ncopies = 0
                if kind in CE_KINDS:
                    n_ce = int(math.ceil(g.calls * t_alone * 1.5 / t_ce[kind])) + 3
                    evs = ce_launch(side, sC, n_ce, batch=(kind == "cebatch"))
                    t_case, e0, e1, h0, h1 = g.window()
                    sC.synchronize()
                    bw, ncopies = ce_rate(evs, e0, e0.elapsed_time(e1))
                    started = int(e0.elapsed_time(evs[0]) <= 0 and e0.elapsed_time(evs[-1]) >= e0.elapsed_time(e1))  # copies cover the window
                    side_s = (ncopies * 2 * CE_BYTES) / bw if ncopies else float("nan")
                    side_b = ncopies * 2 * CE_BYTES
                else:
                    sk = "copy" if kind == "copy_nosmem" else kind
                    started = side.launch(sk, ks, sB, smem=0 if kind == "copy_nosmem" else SMEM)
                    t_case, e0, e1, h0, h1 = g.window()
                    side_b, side_s, guard = side.stop(sB)
                lw.writerow(["gemm_case", name, kind, ks, p, h0, h1])
                fl = 2.0 * m * n * k if k > 0 else g.bytes
                rows.append(dict(pas=p, shape=name, m=m, n=n, k=k, case=kind, kside=ks, calls=g.calls,
                                 alone_us=t_alone * 1e6, case_us=t_case * 1e6, slowdown=t_case / t_alone,
                                 alone_tflops=fl / t_alone / 1e12, case_tflops=fl / t_case / 1e12,  # TB/s for memory kernels
                                 side_GBps=side_b / side_s / 1e9 if side_s == side_s and side_s > 0 else float("nan"),
                                 side_started=started, ce_copies_inside=ncopies, guard_hit=int(guard)))
            if stopped:
                break
        print(f"pass {p} done at {time.strftime('%H:%M:%S')}", flush=True)
        if stopped:
            print("deadline: stopped", flush=True)
            break
    if not stopped and time.time() < deadline:
        side_alone(passes + 1)
    log.close()
    # the kernels each GEMM runs (profiler after all timing, never before: README of validation/)
    try:
        from torch.profiler import profile, ProfilerActivity
        with open(os.path.join(outdir, "gemm_kernels.txt"), "w") as kf:
            for name, g in gemms.items():
                if g.k == 0:
                    continue
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    torch.mm(g.xs[0], g.ws[0].t(), out=g.cs[0]); torch.cuda.synchronize()
                names = sorted({e.name for e in prof.events() if e.device_type.name == "CUDA"})
                kf.write(f"{name} {g.m}x{g.n}x{g.k}: {names}\n")
                print(f"{name}: {names}", flush=True)
    except Exception as e:  # noqa: BLE001
        print(f"kernel names: {type(e).__name__}: {e}", flush=True)

    with open(os.path.join(outdir, "interference.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader(); w.writerows(rows)
    with open(os.path.join(outdir, "side_alone.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(side_rows[0].keys()))
        w.writeheader(); w.writerows(side_rows)

    # summary: median over passes
    lines = ["# GEMM slowdown (case / paired alone window), median over passes; side GB/s median",
             f"{'shape':6} {'case':12} {'k':>4} {'n':>2} {'alone_us':>9} {'slowdown':>8} {'min':>6} {'max':>6} {'side_GBps':>9}"]
    for name, *_ in shapes:
        for kind, ks in cases:
            rs = [r for r in rows if r["shape"] == name and r["case"] == kind and r["kside"] == ks]
            if not rs:
                continue
            sl = [r["slowdown"] for r in rs]
            sg = [r["side_GBps"] for r in rs if r["side_GBps"] == r["side_GBps"]]
            lines.append(f"{name:6} {kind:12} {ks:4d} {len(rs):2d} {statistics.median(r['alone_us'] for r in rs):9.1f} "
                         f"{statistics.median(sl):8.3f} {min(sl):6.3f} {max(sl):6.3f} "
                         f"{statistics.median(sg) if sg else float('nan'):9.0f}")
    lines.append("# side loads alone (GB/s read + written), median over passes")
    keys = sorted({(r["case"], r["k"]) for r in side_rows})
    for kind, k in keys:
        v = [r["GBps"] for r in side_rows if r["case"] == kind and r["k"] == k]
        lines.append(f"side_alone {kind:20} k={k:3d} {statistics.median(v):8.0f} GB/s  (n={len(v)})")
    open(os.path.join(outdir, "interference_summary.txt"), "w").write("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
