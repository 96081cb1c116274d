#!/usr/bin/env python3
"""fp8 recipe overheads on one H200, run 14, with plain torch ops (Transformer Engine is checked for
and used only if importable), against the GEMM time fp8 saves.
Per tensor (bf16 input, e4m3 output), each step timed alone (CUDA-graph replay, median of 5 replays of
a >= 4 ms batch; inputs larger than L2 are not rotated: each op streams its tensor from HBM):
  amax        x.abs().amax()                        (current scaling: one read of x)
  scale       448 / amax (clamped)                  (a tiny kernel)
  cast        (x * scale).to(float8_e4m3fn)         (delayed scaling: this alone, amax fused in TE)
  transpose   x8.t().contiguous()                   (the transposed copy for the weight gradient)
  current     amax + scale + cast + transpose chained (current scaling, unfused torch ops)
  delayed     cast + transpose                        (delayed scaling, scale from history)
  compiled    torch.compile of the current-scaling chain (fused by Inductor), if it compiles; timed
              eagerly (events around >= 4 ms of calls: includes launch gaps)
Tensors: the activation x [4096, 8192] and Llama-70B TP8 weights fc1 [7168, 8192], fc2 [8192, 3584],
qkv [1280, 8192], proj [8192, 1024]; and the output gradient of fc1 [4096, 7168].
GEMM side: bf16 torch.mm vs torch._scaled_mm (e4m3, tensor-wise scales) at the four TP8 shapes.
Writes fp8_overheads.csv. Usage: fp8_overheads.py OUTDIR [--deadline S]
"""
import csv, os, statistics, sys, time
import torch

F8 = torch.float8_e4m3fn
TENSORS = [("act_x", 4096, 8192), ("w_fc1", 7168, 8192), ("w_fc2", 8192, 3584), ("w_qkv", 1280, 8192),
           ("w_proj", 8192, 1024), ("grad_fc1_out", 4096, 7168)]
GEMMS = [("fc1", 4096, 7168, 8192), ("fc2", 4096, 8192, 3584), ("qkv", 4096, 1280, 8192), ("proj", 4096, 8192, 1024)]


def ev():
    return torch.cuda.Event(enable_timing=True)


def bench_graph(fn, target=0.004, replays=5):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    a, b = ev(), ev()
    a.record(); fn(); b.record(); b.synchronize()
    r = max(1, min(500, int(target / max(a.elapsed_time(b) * 1e-3, 1e-6))))
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(r):
            fn()
    g.replay()
    v = []
    for _ in range(replays):
        a.record(); g.replay(); b.record(); b.synchronize()
        v.append(a.elapsed_time(b) * 1e-3 / r)
    return statistics.median(v)


def bench_eager(fn, target=0.004, replays=5):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    a, b = ev(), ev()
    a.record(); fn(); b.record(); b.synchronize()
    r = max(1, min(500, int(target / max(a.elapsed_time(b) * 1e-3, 1e-6))))
    v = []
    for _ in range(replays):
        a.record()
        for _ in range(r):
            fn()
        b.record(); b.synchronize()
        v.append(a.elapsed_time(b) * 1e-3 / r)
    return statistics.median(v)


def main():
    outdir = sys.argv[1]
    deadline = time.time() + float(sys.argv[sys.argv.index("--deadline") + 1]) if "--deadline" in sys.argv else 1e18
    try:
        import transformer_engine  # noqa: F401
        te = transformer_engine.__version__
    except Exception as e:  # noqa: BLE001
        te = f"absent ({type(e).__name__})"
    print(f"# transformer_engine: {te}", flush=True)
    rows = []

    def current(x):
        amax = x.abs().amax().float()
        sc = 448.0 / torch.clamp(amax, min=1e-12)
        x8 = (x * sc).to(F8)
        return x8, x8.t().contiguous(), sc
    try:
        compiled = torch.compile(current, fullgraph=True)
    except Exception:  # noqa: BLE001
        compiled = None
    for name, r, c in TENSORS:
        if time.time() > deadline:
            break
        x = torch.empty(r, c, device="cuda", dtype=torch.bfloat16).uniform_(-3, 3)
        amax = x.abs().amax().float()
        sc = 448.0 / amax
        x8 = (x * sc).to(F8)
        res = {}
        res["amax"] = bench_graph(lambda: x.abs().amax())
        res["scale"] = bench_graph(lambda: 448.0 / torch.clamp(amax, min=1e-12))
        res["cast"] = bench_graph(lambda: (x * sc).to(F8))
        res["transpose"] = bench_graph(lambda: x8.t().contiguous())
        res["current"] = bench_graph(lambda: current(x))
        res["delayed"] = bench_graph(lambda: ((x * sc).to(F8)).t().contiguous())
        if compiled is not None:
            try:
                compiled(x); torch.cuda.synchronize()
                res["compiled"] = bench_eager(lambda: compiled(x))  # eager: no outer graph around Inductor's
            except Exception as e:  # noqa: BLE001
                print(f"compile failed: {type(e).__name__}: {str(e)[:200]}", flush=True)
                compiled = None
        n = r * c
        min_bytes = {"amax": 2 * n, "scale": 8, "cast": 3 * n, "transpose": 2 * n, "current": 2 * n + 3 * n + 2 * n,
                     "delayed": 3 * n + 2 * n, "compiled": 2 * n + n + n}
        for op, t in res.items():
            rows.append(dict(kind="recipe", tensor=name, rows=r, cols=c, op=op, seconds=t,
                             GBps_min_bytes=min_bytes[op] / t / 1e9 if op != "scale" else float("nan")))
        print(f"{name:14} {r}x{c}: " + " ".join(f"{op}={t*1e6:.1f}us" for op, t in res.items()), flush=True)
        del x, x8
    for name, m, n, k in GEMMS:
        if time.time() > deadline:
            break
        x = torch.empty(m, k, device="cuda", dtype=torch.bfloat16).uniform_(-1, 1)
        w = torch.empty(n, k, device="cuda", dtype=torch.bfloat16).uniform_(-1, 1)
        x8, w8 = x.to(F8), w.to(F8)
        one = torch.ones((), device="cuda", dtype=torch.float32)
        tb = bench_graph(lambda: torch.mm(x, w.t()))
        t8 = bench_graph(lambda: torch._scaled_mm(x8, w8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
        for op, t in (("gemm_bf16", tb), ("gemm_fp8", t8)):
            rows.append(dict(kind="gemm", tensor=name, rows=m, cols=n, op=op, seconds=t,
                             GBps_min_bytes=2.0 * m * n * k / t / 1e12))  # here: TFLOP/s
        print(f"gemm {name} {m}x{n}x{k}: bf16 {tb*1e6:.1f} us, fp8 {t8*1e6:.1f} us, saved {(tb-t8)*1e6:.1f} us", flush=True)
    with open(os.path.join(outdir, "fp8_overheads.csv"), "w", newline="") as f:
        f.write(f"# transformer_engine: {te}; torch {torch.__version__}. GBps_min_bytes: recipe rows = minimum bytes / s "
                f"(GB/s); gemm rows = TFLOP/s\n")
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader(); w.writerows(rows)


if __name__ == "__main__":
    main()
