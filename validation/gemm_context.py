#!/usr/bin/env python3
"""Why GEMMs run faster inside a training step than in the probe's samples (validation/README.md,
"Remaining misses": the run-8 kernel trace's s1.3b seq-4096 GEMMs took 6.5-11% less than the same
shapes timed alone). Four contexts for the same shape, torch.matmul (run 10 showed torch and the
probe time the same call alike), median per context, alternated pass by pass:
  batch_cold   the probe's rule: a CUDA graph of >= 2 ms of back-to-back calls, buffer sets rotated over
               4x L2 (every operand cold), median of replays (gemm_torch.bench_graph)
  batch_warm   the same with one buffer set (operands stay in L2 when they fit)
  single_cold  one call at a time after the GPU idled SLEEP_MS (power headroom), operands cold: events
               around that one call, median of REPS
  single_warm  one call right after a copy kernel wrote its activation input (x in L2, as after a norm in
               a step), after the same idle: events around the GEMM only
Run with nvidia-smi logging clocks and power beside it (validation/runs/run12-context/).
Usage: gemm_context.py OUT.csv [--passes N] [--shapes "M,N,K;..."]
"""
import csv, os, statistics, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemm_torch as gt  # noqa: E402
import torch  # noqa: E402

# s1.3b seq 4096 forward GEMMs as the run-8 trace lists them (m = tokens, n = out, k = in), with their
# in-step durations (us), and the s7b-8L ones (run 8, seq 4096)
SHAPES = [(4096, 4096, 2048), (4096, 2048, 2048), (4096, 11264, 2048), (4096, 2048, 5632),
          (4096, 6144, 4096), (4096, 4096, 4096), (4096, 28672, 4096), (4096, 4096, 14336)]
SLEEP_MS, REPS = 5.0, 25


def single(fn, before, reps):
    a, b = gt.events()
    v = []
    for i in range(reps):
        torch.cuda.synchronize()
        time.sleep(SLEEP_MS * 1e-3)   # the GPU idles (no kernel) before the call
        if before is not None:
            before(i)
        a.record(); fn(i); b.record(); b.synchronize()
        v.append(a.elapsed_time(b) * 1e-3)
    return statistics.median(v)


def main():
    out = sys.argv[1]
    opt = lambda name, d: type(d)(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else d
    passes = opt("--passes", 3)
    shapes = SHAPES
    if "--shapes" in sys.argv:
        shapes = [tuple(int(x) for x in s.split(",")) for s in opt("--shapes", "").split(";") if s]
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    torch.backends.cuda.preferred_blas_library("cublaslt")
    rows = []
    for (m, n, k) in shapes:
        sets, xs, ws, cs = gt.gemm_buffers(m, n, k, l2)
        src = torch.empty(m, k, device="cuda", dtype=torch.bfloat16).uniform_(-1, 1)
        cold = lambda i: torch.matmul(xs[i % sets], ws[i % sets].t(), out=cs[i % sets])
        warm = lambda i: torch.matmul(xs[0], ws[i % sets].t(), out=cs[0])   # x just written; weights cold
        write_x = lambda i: xs[0].copy_(src)
        res = {c: [] for c in ("batch_cold", "batch_warm", "single_cold", "single_warm")}
        for p in range(passes):
            order = list(res) if p % 2 == 0 else list(res)[::-1]
            for c in order:
                if c == "batch_cold":
                    res[c].append(gt.bench_graph(cold, sets))
                elif c == "batch_warm":
                    res[c].append(gt.bench_graph(lambda i: torch.matmul(xs[0], ws[0].t(), out=cs[0]), 1))
                elif c == "single_cold":
                    res[c].append(single(cold, None, REPS))
                else:
                    res[c].append(single(warm, write_x, REPS))
        med = {c: statistics.median(v) for c, v in res.items()}
        r = dict(m=m, n=n, k=k, sets=sets, **{f"{c}_us": round(v * 1e6, 2) for c, v in med.items()},
                 **{f"{c}_vs_batch_cold": round(med[c] / med["batch_cold"], 4) for c in med})
        rows.append(r)
        print(f"{m:6d} {n:6d} {k:6d}  batch cold {med['batch_cold'] * 1e6:8.1f} us | warm x{r['batch_warm_vs_batch_cold']:.3f}"
              f" | single cold x{r['single_cold_vs_batch_cold']:.3f} | single warm-x x{r['single_warm_vs_batch_cold']:.3f}",
              flush=True)
        del xs, ws, cs, src
        torch.cuda.empty_cache()
    with open(out, "w", newline="") as f:
        f.write(f"# GEMM time by context (validation/gemm_context.py), torch.matmul on cuBLASLt, {passes} passes; "
                f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}; idle before single calls {SLEEP_MS} ms; "
                f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n")
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main()
