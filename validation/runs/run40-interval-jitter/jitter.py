#!/usr/bin/env python3
"""Run 40: how much identical compute intervals vary on one GPU under sustained load (one H200).

Why: a synchronous collective (tensor-parallel all-reduce, expert all-to-all, data-parallel
reduce-scatter) starts when the slowest member of its group arrives. The simulator's ranks are
identical and deterministic, so every member arrives at once. If one GPU's compute intervals vary
(clock and power management under the 700 W cap, memory refresh, scheduling), a group of N waits
for the slowest of N draws at every synchronisation, and the loss grows with N.

Method: after a warm-up that brings the GPU to its power-capped state, each workload runs back to
back for DURATION seconds with a CUDA timing event recorded after every unit (one unit = one
transformer-layer forward at Llama-3-70B TP8 shapes, or one GEMM): the intervals between
consecutive events are the units' durations on the GPU (the host stays ahead: the launch queue is
full). nvidia-smi samples the clocks every 100 ms (run.sh). Outputs:
  intervals_<workload>.csv   one line per unit: start (ms from the first event), duration (ms)
  summary.txt                per workload and window of k consecutive units: mean, coefficient of
                             variation, and E[max of N windows] / mean for N = 2 .. 1024, from
                             windows drawn at random start positions (fixed seed)
Usage: jitter.py OUTDIR [--duration S] [--warmup S]
"""
import csv, math, os, random, statistics, sys, time
import torch
import torch.nn.functional as F

OUT = sys.argv[1] if len(sys.argv) > 1 else "out"
def arg(name, default):
    return float(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default
DURATION = arg("--duration", 40.0)
WARMUP = arg("--warmup", 15.0)
os.makedirs(OUT, exist_ok=True)
dev = torch.device("cuda")
torch.manual_seed(0)
bf = torch.bfloat16

# Llama-3-70B at TP 8, 4096 tokens per micro-batch: hidden 8192, 64 query heads / 8 KV heads (8 and 1
# per rank), head_dim 128, ffn 28672 (3584 per rank, gated: fc1 out 7168).
T, H, D = 4096, 8192, 128
HQ, HKV, FFN = 8, 1, 3584


def layer_unit():
    x = torch.randn(T, H, device=dev, dtype=bf)
    wqkv = torch.randn(H, (HQ + 2 * HKV) * D, device=dev, dtype=bf) * 0.01
    wo = torch.randn(HQ * D, H, device=dev, dtype=bf) * 0.01
    w1 = torch.randn(H, 2 * FFN, device=dev, dtype=bf) * 0.01
    w2 = torch.randn(FFN, H, device=dev, dtype=bf) * 0.01
    g = torch.ones(H, device=dev, dtype=bf)
    def run():
        hn = F.rms_norm(x, (H,), g)
        qkv = hn @ wqkv
        q = qkv[:, : HQ * D].view(1, T, HQ, D).transpose(1, 2)
        k = qkv[:, HQ * D : (HQ + HKV) * D].view(1, T, HKV, D).transpose(1, 2)
        v = qkv[:, (HQ + HKV) * D :].view(1, T, HKV, D).transpose(1, 2)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        a = o.transpose(1, 2).reshape(T, HQ * D) @ wo
        r = x + a
        h2 = F.rms_norm(r, (H,), g)
        u = h2 @ w1
        s = F.silu(u[:, :FFN]) * u[:, FFN:]
        return r + s @ w2
    return run


def gemm_unit():
    a = [torch.randn(T, H, device=dev, dtype=bf) for _ in range(2)]
    b = [torch.randn(H, 2 * FFN, device=dev, dtype=bf) for _ in range(2)]
    c = torch.empty(T, 2 * FFN, device=dev, dtype=bf)
    state = [0]
    def run():
        i = state[0] = state[0] ^ 1
        torch.mm(a[i], b[i], out=c)
    return run


WORKLOADS = [("layer70b_tp8", layer_unit), ("gemm_fc1_70b_tp8", gemm_unit)]


def timed(fn, seconds):
    """fn back to back for `seconds` of host time, an event after every unit; returns durations (ms)."""
    events = [torch.cuda.Event(enable_timing=True)]
    events[0].record()
    t0 = time.time()
    while time.time() - t0 < seconds:
        for _ in range(32):
            fn()
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            events.append(e)
    torch.cuda.synchronize()
    return [events[i].elapsed_time(events[i + 1]) for i in range(len(events) - 1)]


def max_of_n(windows, n, draws, rng):
    return statistics.fmean(max(rng.choice(windows) for _ in range(n)) for _ in range(draws))


def summarise(name, d, out):
    rng = random.Random(12345)
    out.write(f"\n{name}: {len(d)} units, mean {statistics.fmean(d):.4f} ms, median {statistics.median(d):.4f} ms\n")
    out.write("  k units  windows  mean ms    cv      E[max of N] / mean for N = 2 8 64 512 1024\n")
    for k in (1, 4, 16, 64, 256):
        w = [sum(d[i : i + k]) for i in range(0, len(d) - k + 1)]
        if len(w) < 100:
            continue
        m = statistics.fmean(w)
        cv = statistics.pstdev(w) / m
        ratios = [max_of_n(w, n, 400 if n <= 64 else 100, rng) / m for n in (2, 8, 64, 512, 1024)]
        out.write(f"  {k:7d}  {len(w):7d}  {m:8.3f}  {cv:.5f}  " + " ".join(f"{r:.4f}" for r in ratios) + "\n")
    # Drift: the mean of each tenth of the run over the whole run's mean.
    tenth = max(1, len(d) // 10)
    m = statistics.fmean(d)
    out.write("  tenths of the run, mean / whole mean: " +
              " ".join(f"{statistics.fmean(d[i:i + tenth]) / m:.4f}" for i in range(0, tenth * 10, tenth)) + "\n")


def main():
    print(f"torch {torch.__version__} device {torch.cuda.get_device_name()} duration {DURATION} s warm-up {WARMUP} s")
    fns = {name: build() for name, build in WORKLOADS}
    print("warm-up")
    timed(fns["layer70b_tp8"], WARMUP)
    results = {}
    for name, _ in WORKLOADS:
        t = time.time()
        d = timed(fns[name], DURATION)
        results[name] = d
        print(f"{name}: {len(d)} units in {time.time() - t:.1f} s, mean {statistics.fmean(d):.4f} ms")
        with open(os.path.join(OUT, f"intervals_{name}.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["start_ms", "duration_ms"])
            s = 0.0
            for x in d:
                w.writerow([f"{s:.4f}", f"{x:.5f}"])
                s += x
    with open(os.path.join(OUT, "summary.txt"), "w") as out:
        out.write(f"torch {torch.__version__} device {torch.cuda.get_device_name()}\n")
        for name, d in results.items():
            summarise(name, d, out)
    print(open(os.path.join(OUT, "summary.txt")).read())


if __name__ == "__main__":
    main()
