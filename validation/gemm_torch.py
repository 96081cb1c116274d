#!/usr/bin/env python3
"""Honesty check: the probe's GEMMs against torch.matmul on the same GPU, same algorithm.

Method (run 4, 2026-11-29; runs 1-3 are in validation/README.md):
- shapes: the probe's own ([[gemm]] entries of PROBE.toml), bf16 (fp8: probe cuBLASLt vs
  torch._scaled_mm, which is cuBLASLt too);
- four sides per bf16 shape, in two pairs that call the SAME library entry point with the
  SAME workspace, so that both members of a pair run the same cuBLAS kernel:
    probe_lt     probe, cublasLtMatmul, first heuristic, 64 MiB workspace (the calibration API)
    torch_lt     torch.matmul with torch.backends.cuda.preferred_blas_library('cublaslt') and
                 a 64 MiB cuBLASLt workspace (CUBLASLT_WORKSPACE_SIZE=65536 KiB, set below
                 before torch starts; TORCH_CUBLASLT_UNIFIED_WORKSPACE=0 so that it is not
                 capped at the 32 MiB cuBLAS workspace)
    probe_gemmex probe, cublasGemmEx with a 32 MiB cublasSetWorkspace, CUBLAS_DEFAULT_MATH,
                 CUBLAS_GEMM_DEFAULT_TENSOR_OP: the call torch.matmul makes by default
                 (aten/src/ATen/cuda/CUDABlas.cpp gemm_internal_cublas_bfloat16_helper;
                 32 MiB = torch's default cuBLAS workspace on sm90)
    torch_cublas torch.matmul, default backend (cuBLAS, cublasGemmEx)
  and the run-3 comparison (probe_lt vs torch_cublas) falls out of the same samples;
- same library: the probe is started with LD_LIBRARY_PATH pointing at the libcublasLt
  torch has loaded (read from /proc/self/maps), so both processes run one cuBLAS build;
  a second probe on its own (toolkit) cuBLAS answers name-only requests as a control;
- which kernel ran: the probe reads the kernel names of each call from a captured CUDA
  graph (cuFuncGetName); torch's come from torch.profiler; same_kernel_* compares them;
- timing: probe and torch alternate, `--passes N` times per shape (order flipped every
  pass), median of each side; each sample: CUDA events around a CUDA-graph replay of a
  batch of >= 2 ms of calls, median of 9 replays; `--eager` also times host launches;
- inputs: uniform random in [-1, 1) on both sides, buffer sets rotated over >= 4x L2,
  layout x[m,k] @ w[n,k]^T.
Writes OUT.csv (one row per shape; ratios = torch_s / probe_s = probe TFLOP/s over torch's).
Usage: gemm_torch.py PROBE.toml OUT.csv --probe PROBE_BINARY [--passes N] [--dtype bf16]
       [--deadline SECONDS] [--eager]
"""
import os

LT_WS_MIB, BLAS_WS_MIB = 64, 32
os.environ.setdefault("CUBLASLT_WORKSPACE_SIZE", str(LT_WS_MIB * 1024))  # KiB (CublasHandlePool.cpp)
os.environ.setdefault("TORCH_CUBLASLT_UNIFIED_WORKSPACE", "0")

import csv, statistics, subprocess, sys, time, tomllib  # noqa: E402
import torch  # noqa: E402

REPEATS, TARGET_S, MAX_INNER = 9, 2e-3, 4096
SIDES = ["probe_lt", "torch_lt", "probe_gemmex", "torch_cublas"]
PAIRS = [("probe_lt", "torch_lt"), ("probe_gemmex", "torch_cublas")]


def events():
    return torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)


def bench_eager(fn, sets):
    for i in range(3):
        fn(i % sets)
    torch.cuda.synchronize()
    a, b = events()
    a.record(); fn(0); b.record(); b.synchronize()
    inner = max(1, min(MAX_INNER, int(TARGET_S / max(a.elapsed_time(b) * 1e-3, 1e-7))))
    v, idx = [], 0
    for _ in range(REPEATS):
        a.record()
        for _ in range(inner):
            fn(idx % sets); idx += 1
        b.record(); b.synchronize()
        v.append(a.elapsed_time(b) * 1e-3 / inner)
    return statistics.median(v)


def bench_graph(fn, sets):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for i in range(3):
            fn(i % sets)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g1 = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g1):
        fn(0)
    g1.replay()
    a, b = events()
    a.record(); g1.replay(); b.record(); b.synchronize()
    inner = max(1, min(MAX_INNER, int(TARGET_S / max(a.elapsed_time(b) * 1e-3, 1e-7))))
    del g1
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(inner):
            fn(i % sets)
    g.replay()
    v = []
    for _ in range(REPEATS):
        a.record(); g.replay(); b.record(); b.synchronize()
        v.append(a.elapsed_time(b) * 1e-3 / inner)
    del g
    return statistics.median(v)


_profiler_error = []


def torch_kernel_names(fn):
    """Kernel names of one call, from torch.profiler (CUPTI); '?' if the profiler fails."""
    try:
        from torch.profiler import profile, ProfilerActivity
        fn(0); torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn(0); torch.cuda.synchronize()
        names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        return " + ".join(names) if names else "?"
    except Exception as e:  # record once, never abort the check
        if not _profiler_error:
            _profiler_error.append(str(e))
            print(f"torch.profiler failed: {str(e).splitlines()[0][:200]}", file=sys.stderr)
        return "?"


def torch_times(m, n, k, dt, l2, backend, eager, names):
    """(graph_s, eager_s or nan, kernel names or None) of torch on BACKEND ('cublas'/'cublaslt')."""
    torch.backends.cuda.preferred_blas_library(backend)
    eb = 1 if dt == "fp8_e4m3" else 2
    per = (m * k + n * k) * eb + m * n * 2
    sets = max(1, min(4096, -(-4 * l2 // per)))
    xs = [torch.empty(m, k, device="cuda", dtype=torch.bfloat16).uniform_(-1, 1) for _ in range(sets)]
    ws = [torch.empty(n, k, device="cuda", dtype=torch.bfloat16).uniform_(-1, 1) for _ in range(sets)]
    cs = [torch.empty(m, n, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
    if dt == "bf16":
        fn = lambda i: torch.matmul(xs[i], ws[i].t(), out=cs[i])
    else:
        xs = [x.to(torch.float8_e4m3fn) for x in xs]
        ws = [w.to(torch.float8_e4m3fn) for w in ws]
        one = torch.ones((), device="cuda", dtype=torch.float32)
        fn = lambda i: torch._scaled_mm(xs[i], ws[i].t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    try:
        kern = torch_kernel_names(fn) if names else None
        return bench_graph(fn, sets), (bench_eager(fn, sets) if eager else float("nan")), kern
    finally:
        del xs, ws, cs
        torch.cuda.empty_cache()


class Probe:
    """One `probe --serve` process; request() sends 'dt m n k api ws mode' and parses the answer."""

    def __init__(self, binary, out, eager, env=None):
        args = [binary, "--serve", "--out", out, "--no-nccl"] + ([] if eager else ["--graph-only"])
        self.p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
                                  env=env)
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError("probe --serve ended before READY")
            if line.startswith("READY"):
                self.ready = line.strip()
                break

    def request(self, m, n, k, dt, api="lt", ws=LT_WS_MIB, mode="time"):
        self.p.stdin.write(f"{'fp8' if dt == 'fp8_e4m3' else 'bf16'} {m} {n} {k} {api} {ws} {mode}\n")
        self.p.stdin.flush()
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError("probe --serve ended")
            if line.startswith("RESULT"):
                head, algo, kern = (line.rstrip("\n").split("\t") + ["", ""])[:3]
                _, e, g = head.split()
                return float(g), float(e) if float(e) > 0 else float("nan"), algo, kern
            if line.startswith("ERROR"):
                return float("nan"), float("nan"), line.strip(), ""

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=60)


def loaded_library(fragment):
    """Path of the shared library whose name contains FRAGMENT in this process (or None)."""
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            if fragment in os.path.basename(path):
                return path
    return None


def demangle(names):
    """c++filt over ' + '-joined kernel-name strings (cuFuncGetName gives mangled C++ names)."""
    flat = sorted({x for s in names for x in s.split(" + ") if x.startswith("_Z")})
    if not flat:
        return {}
    try:
        out = subprocess.run(["c++filt"], input="\n".join(flat), capture_output=True, text=True, timeout=60).stdout
        return dict(zip(flat, out.splitlines()))
    except Exception:
        return {}


def norm(s, dm):
    """Comparable kernel list: demangled, without 'void ' and argument lists, no non-kernel nodes."""
    out = []
    for x in s.split(" + "):
        x = dm.get(x, x)
        if x.startswith("<node type") or x.startswith("Memset") or x.startswith("Memcpy"):
            continue
        if x.startswith("void "):
            x = x[5:]
        depth, cut = 0, len(x)
        for i, ch in enumerate(x):  # drop the trailing '(args)'
            if ch == "<":
                depth += 1
            elif ch == ">":
                depth -= 1
            elif ch == "(" and depth == 0:
                cut = i
                break
        out.append(x[:cut].strip())
    return " + ".join(out)


def summary(rows, key, label, pick=lambda r: True):
    r = [x[key] for x in rows if x[key] == x[key] and pick(x)]
    if not r:
        return f"{label}: no samples"
    within = sum(1 for x in r if abs(x - 1) <= 0.03)
    return (f"{label}: {within}/{len(r)} within 3%, {sum(1 for x in r if abs(x - 1) <= 0.05)} within 5%; "
            f"median {statistics.median(r):.4f}; min {min(r):.4f} max {max(r):.4f}")


def main():
    probe_toml, out = sys.argv[1], sys.argv[2]
    binary = sys.argv[sys.argv.index("--probe") + 1]
    # --passes N: alternate probe and torch N times per shape (order flipped every pass), median of
    # each side (one sample varies by up to 12-18% on this machine, run 2). --dtype D: only D.
    # --deadline S: if the projected time passes S seconds, later shapes get fewer passes (>= 3;
    # the passes column says how many each shape got). --eager: also time host-launched batches.
    opt = lambda name, d: type(d)(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else d
    passes, only, deadline = opt("--passes", 1), opt("--dtype", ""), opt("--deadline", 0.0)
    eager = "--eager" in sys.argv
    with open(probe_toml, "rb") as f:
        shapes = [(g["label"], g["dtype"], g["m"], g["n"], g["k"]) for g in tomllib.load(f).get("gemm", [])]
    if only:
        shapes = [x for x in shapes if x[1] == only]
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    a = torch.randn(64, 64, device="cuda", dtype=torch.bfloat16)
    torch.matmul(a, a)  # loads torch's cuBLAS
    torch.cuda.synchronize()
    default_backend = str(torch.backends.cuda.preferred_blas_library())
    torch_lt_lib = loaded_library("libcublasLt.so")
    env = dict(os.environ)
    if torch_lt_lib:
        env["LD_LIBRARY_PATH"] = os.path.dirname(torch_lt_lib) + ":" + env.get("LD_LIBRARY_PATH", "")
    probe = Probe(binary, out + ".probe.toml", eager, env)
    own = Probe(binary, out + ".ownlib.probe.toml", False)  # the probe's own cuBLAS: name-only control
    head = (f"# probe vs torch.matmul, same API and workspace per pair, alternating shape by shape; "
            f"{torch.cuda.get_device_name(0)}, torch {torch.__version__} (cuda {torch.version.cuda}); "
            f"torch default blas backend {default_backend}; torch libcublasLt {torch_lt_lib}; "
            f"probe (same-lib) {probe.ready}; probe (own lib, name-only control) {own.ready}; "
            f"CUBLASLT_WORKSPACE_SIZE={os.environ['CUBLASLT_WORKSPACE_SIZE']} KiB, "
            f"TORCH_CUBLASLT_UNIFIED_WORKSPACE={os.environ['TORCH_CUBLASLT_UNIFIED_WORKSPACE']}; "
            f"ratios = torch_s / probe_s (probe TFLOP/s over torch TFLOP/s); times: CUDA graph replay")
    print(head, flush=True)
    f = open(out, "w", newline="")
    f.write(head + "\n")
    w, rows, t0 = None, [], time.time()
    for i, (label, dt, m, n, k) in enumerate(shapes):
        sides = SIDES if dt == "bf16" else ["probe_lt", "torch_lt"]
        npass = passes
        if deadline and i:
            per_pass = (time.time() - t0) / sum(r["passes"] for r in rows)
            left = deadline - (time.time() - t0)
            npass = max(3, min(passes, int(left / per_pass / (len(shapes) - i))))
        samples = {s: [] for s in sides}
        eag = {s: [] for s in sides}
        kern = {s: "" for s in sides}
        algo = ""
        try:
            for p in range(npass):
                order = []
                for a_, b_ in (PAIRS if p % 2 == 0 else PAIRS[::-1]):
                    if a_ in sides:
                        order += [a_, b_] if (i + p) % 2 == 0 else [b_, a_]
                for s in order:
                    first = p == 0
                    if s == "probe_lt":
                        g, e, al, kn = probe.request(m, n, k, dt, "lt", LT_WS_MIB)
                        algo = al
                    elif s == "probe_gemmex":
                        g, e, al, kn = probe.request(m, n, k, dt, "gemmex", BLAS_WS_MIB)
                    else:
                        g, e, kn = torch_times(m, n, k, dt, l2, "cublaslt" if s == "torch_lt" else "cublas",
                                               eager, first)
                    if first:
                        kern[s] = kn
                    samples[s].append(g)
                    eag[s].append(e)
            kern["probe_lt32"] = probe.request(m, n, k, dt, "lt", 32, "name")[3]
            kern["ownlib_lt64"] = own.request(m, n, k, dt, "lt", LT_WS_MIB, "name")[3]
        except Exception as ex:  # record, never abort the check
            print(f"{dt} {m}x{n}x{k}: {str(ex).splitlines()[0][:200]}", file=sys.stderr)
        torch.backends.cuda.preferred_blas_library("cublas")
        med = {s: statistics.median(v) if len(v) == npass else float("nan") for s, v in samples.items()}
        emed = {s: statistics.median(v) if len(v) == npass else float("nan") for s, v in eag.items()}
        fl = 2.0 * m * n * k
        rat = lambda t, p: round(med.get(t, float("nan")) / med.get(p, float("nan")), 4)
        r = dict(label=label, dtype=dt, m=m, n=n, k=k, passes=npass)
        for s in SIDES:
            r[f"{s}_s"] = med.get(s, float("nan"))
        for s in SIDES:
            r[f"{s}_tflops"] = round(fl / med[s] * 1e-12, 2) if med.get(s, float("nan")) == med.get(s) else float("nan")
        r["ratio_lt"] = rat("torch_lt", "probe_lt")                 # same API (cuBLASLt), same workspace
        r["ratio_cublas"] = rat("torch_cublas", "probe_gemmex")     # same API (cublasGemmEx), same workspace
        r["ratio_run3"] = rat("torch_cublas", "probe_lt")           # the run-3 comparison (API differs)
        r["ratio_eager_lt"] = round(emed["torch_lt"] / emed["probe_lt"], 4) if eager else float("nan")
        r["probe_lt_algo"] = algo
        for s in SIDES + ["probe_lt32", "ownlib_lt64"]:
            r[f"{s}_kernels"] = kern.get(s, "")
        for s in SIDES:
            r[f"{s}_samples_us"] = ";".join(f"{x * 1e6:.2f}" for x in samples.get(s, []))
        rows.append(r)
        if w is None:
            w = csv.DictWriter(f, fieldnames=list(r.keys()) + ["same_kernel_lt", "same_kernel_cublas",
                                                               "same_kernel_lt32", "same_kernel_ownlib"])
            w.writeheader()
        print(f"{dt:8s} {label[:28]:28s} {m:6d} {n:6d} {k:6d} x{npass} lt: probe {r['probe_lt_tflops']:7.1f} "
              f"torch {r['torch_lt_tflops']:7.1f} r {r['ratio_lt']:.4f} | gemmex: probe {r['probe_gemmex_tflops']:7.1f} "
              f"torch {r['torch_cublas_tflops']:7.1f} r {r['ratio_cublas']:.4f} | run3-style r {r['ratio_run3']:.4f}",
              flush=True)
    probe.close()
    own.close()
    # kernel identity, after demangling the probe's names (cuFuncGetName) to torch.profiler's form
    dm = demangle([r[c] for r in rows for c in r if c.endswith("_kernels")])
    for r in rows:
        same = lambda a, b: (norm(r[a], dm) == norm(r[b], dm)) if r[a] not in ("", "?") and r[b] not in ("", "?") else ""
        r["same_kernel_lt"] = same("probe_lt_kernels", "torch_lt_kernels")
        r["same_kernel_cublas"] = same("probe_gemmex_kernels", "torch_cublas_kernels")
        r["same_kernel_lt32"] = same("probe_lt_kernels", "probe_lt32_kernels")
        r["same_kernel_ownlib"] = same("probe_lt_kernels", "ownlib_lt64_kernels")
        for c in [c for c in r if c.endswith("_kernels")]:
            r[c] = norm(r[c], dm) if r[c] not in ("", "?") else r[c]
        w.writerow(r)
    f.close()
    long_enough = lambda x: x["probe_lt_s"] >= 15e-6  # one call >= 15 us: not launch-sized
    for dt in ("bf16", "fp8_e4m3"):
        rs = [x for x in rows if x["dtype"] == dt]
        if not rs:
            continue
        for key, what in (("ratio_lt", "cuBLASLt both sides, 64 MiB"), ("ratio_cublas", "cublasGemmEx both sides, 32 MiB"),
                          ("ratio_run3", "probe cuBLASLt vs torch default (run-3 comparison)")):
            print("gemm honesty " + summary(rs, key, f"{dt} {key} ({what})"))
            print("gemm honesty " + summary(rs, key, f"{dt} {key}, one call >= 15 us", long_enough))
        for key in ("same_kernel_lt", "same_kernel_cublas", "same_kernel_lt32", "same_kernel_ownlib"):
            v = [x[key] for x in rs]
            print(f"gemm honesty {dt} {key}: {sum(1 for x in v if x is True)} same, "
                  f"{sum(1 for x in v if x is False)} different, {sum(1 for x in v if x == '')} unknown")
        for x in rs:
            if abs(x["ratio_lt"] - 1) > 0.03 or x["same_kernel_lt"] is False:
                print(f"  outside 3% or other kernel (lt): {x['label'][:30]} {x['m']}x{x['n']}x{x['k']} "
                      f"r {x['ratio_lt']} same {x['same_kernel_lt']} probe {x['probe_lt_samples_us']} "
                      f"torch {x['torch_lt_samples_us']}")
    print(f"gemm honesty: {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
