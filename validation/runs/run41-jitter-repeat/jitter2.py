#!/usr/bin/env python3
"""Run 41: run 40 again, longer, and with fp8 GEMMs (one H200).

Three questions run 40 left: (1) does its table reproduce (the machine may be another H200: the GPU's serial
and UUID are recorded this time, nvidia-smi-q.txt); (2) how much do long windows (seconds: a data-parallel
step) still vary, which needs a longer run than run 40's 40 s; (3) does an fp8 layer, whose GEMMs hold the
clock lower under the cap, wander more?

Method as run 40 (run40-interval-jitter/jitter.py, imported): after a warm-up to the capped state, each
workload back to back with a CUDA event after every unit. Workloads: the bf16 Llama-3-70B TP8 layer forward
(run 40's) for DURATION_BF16 seconds; the same layer with its four GEMMs in fp8 (torch._scaled_mm, e4m3
operands with tensor-wise scales; the activation cast to fp8 before each GEMM, the weights kept in fp8) for
DURATION_FP8 seconds. Outputs: intervals_<workload>.csv, summary.txt (windows of 1 to 4096 units).
Usage: jitter2.py OUTDIR [--bf16 S] [--fp8 S] [--warmup S]
"""
import os, sys, time, statistics
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "run40-interval-jitter"))
import torch
import torch.nn.functional as F
import jitter as j40

OUT = sys.argv[1] if len(sys.argv) > 1 else "out"
def arg(name, default):
    return float(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default
BF16_S, FP8_S, WARMUP = arg("--bf16", 120.0), arg("--fp8", 40.0), arg("--warmup", 15.0)
os.makedirs(OUT, exist_ok=True)
dev = torch.device("cuda")
bf, f8 = torch.bfloat16, torch.float8_e4m3fn
T, H, D, HQ, HKV, FFN = j40.T, j40.H, j40.D, j40.HQ, j40.HKV, j40.FFN


def fp8_layer_unit():
    x = torch.randn(T, H, device=dev, dtype=bf)
    one = torch.ones((), device=dev, dtype=torch.float32)
    # _scaled_mm(a, b): a row-major (M, K), b column-major (K, N): keep W as (N, K) row-major and pass W.t().
    def w(n, k):
        return (torch.randn(n, k, device=dev, dtype=bf) * 0.01).to(f8)
    wqkv, wo, w1, w2 = w((HQ + 2 * HKV) * D, H), w(H, HQ * D), w(2 * FFN, H), w(H, FFN)
    g = torch.ones(H, device=dev, dtype=bf)
    def mm(a, wt):
        return torch._scaled_mm(a.to(f8), wt.t(), scale_a=one, scale_b=one, out_dtype=bf)
    def run():
        hn = F.rms_norm(x, (H,), g)
        qkv = mm(hn, wqkv)
        q = qkv[:, : HQ * D].view(1, T, HQ, D).transpose(1, 2)
        k = qkv[:, HQ * D : (HQ + HKV) * D].view(1, T, HKV, D).transpose(1, 2)
        v = qkv[:, (HQ + HKV) * D :].view(1, T, HKV, D).transpose(1, 2)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        a = mm(o.transpose(1, 2).reshape(T, HQ * D).contiguous(), wo)
        r = x + a
        h2 = F.rms_norm(r, (H,), g)
        u = mm(h2, w1)
        s = F.silu(u[:, :FFN]) * u[:, FFN:]
        return r + mm(s.contiguous(), w2)
    return run


def main():
    print(f"torch {torch.__version__} device {torch.cuda.get_device_name()} bf16 {BF16_S} s fp8 {FP8_S} s warm-up {WARMUP} s")
    fns = {"layer70b_tp8": j40.layer_unit(), "layer70b_tp8_fp8": fp8_layer_unit()}
    fns["layer70b_tp8_fp8"]()   # fails early if this torch has no fp8 _scaled_mm
    torch.cuda.synchronize()
    print("warm-up")
    j40.timed(fns["layer70b_tp8"], WARMUP)
    results = {}
    for name, secs in (("layer70b_tp8", BF16_S), ("layer70b_tp8_fp8", FP8_S)):
        t = time.time()
        d = j40.timed(fns[name], secs)
        results[name] = d
        print(f"{name}: {len(d)} units in {time.time() - t:.1f} s, mean {statistics.fmean(d):.4f} ms")
        with open(os.path.join(OUT, f"intervals_{name}.csv"), "w") as f:
            f.write("start_ms,duration_ms\n")
            s = 0.0
            for x in d:
                f.write(f"{s:.4f},{x:.5f}\n")
                s += x
    with open(os.path.join(OUT, "summary.txt"), "w") as out:
        out.write(f"torch {torch.__version__} device {torch.cuda.get_device_name()}\n")
        for name, d in results.items():
            summarise(name, d, out)
    print(open(os.path.join(OUT, "summary.txt")).read())


def summarise(name, d, out):
    # Run 40's summary with windows up to 4096 units (windows overlap; E[max] from windows at random starts).
    import random
    rng = random.Random(12345)
    out.write(f"\n{name}: {len(d)} units, mean {statistics.fmean(d):.4f} ms, median {statistics.median(d):.4f} ms\n")
    out.write("  k units  windows  mean ms    cv      E[max of N] / mean for N = 2 8 64 512\n")
    pre = [0.0]
    for x in d:
        pre.append(pre[-1] + x)
    for k in (1, 16, 256, 1024, 4096):
        w = [pre[i + k] - pre[i] for i in range(0, len(d) - k + 1)]
        if len(w) < 4 * k:
            continue
        m = statistics.fmean(w)
        cv = statistics.pstdev(w) / m
        ratios = [j40.max_of_n(w, n, 400 if n <= 64 else 100, rng) / m for n in (2, 8, 64, 512)]
        out.write(f"  {k:7d}  {len(w):7d}  {m:9.3f}  {cv:.5f}  " + " ".join(f"{r:.4f}" for r in ratios) +
                  f"   (independent windows: {len(d) // k})\n")
    tenth = max(1, len(d) // 10)
    m = statistics.fmean(d)
    out.write("  tenths of the run, mean / whole mean: " +
              " ".join(f"{statistics.fmean(d[i:i + tenth]) / m:.4f}" for i in range(0, tenth * 10, tenth)) + "\n")


if __name__ == "__main__":
    main()
