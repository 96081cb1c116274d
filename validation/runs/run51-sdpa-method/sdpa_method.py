#!/usr/bin/env python3
"""Run 51: one GPU's fused attention timed two ways, to check the Blackwell calibrations' method.

The B200, GB200 and GB300 attention calibrations are fitted from cuDNN frontend's published SDPA
tables (validation/cudnn_sdpa), whose every time is ONE call between two CUDA events after a sleep
(benchmark_bf16_sdpa.py: 5 warm-up + 10 iterations, new random inputs each, median), so each holds the
host's dispatch. mfusim fits them without a per-call intercept (attention_intercept = false). Here the
same calls are timed on this GPU (an H200) both ways:
  per_call      exactly the benchmark's loop (its shapes: batch 1, 128 query / 8 key-value heads, d 128,
                causal, 512 .. 32k tokens; backends pyt_cudnn and pyt_flash_attention);
  back_to_back  5 calls between the events (median of 7 repeats / 5), the device time a training
                step's queued kernels see (validation/attention_sdpa.py --back-to-back, run 22);
and training-like shapes (32 / 8 and 64 / 8 heads at 4k-16k) back to back.
Writes OUT/per_call.csv in the benchmark's own CSV format (validation/cudnn_sdpa) and OUT/b2b.csv.
Usage: sdpa_method.py OUTDIR
"""
import os, statistics, sys, time
import numpy as np
import torch
import torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend

OUT = sys.argv[1]
dev = torch.device("cuda")
BACKENDS = {"pyt_cudnn": SDPBackend.CUDNN_ATTENTION, "pyt_flash_attention": SDPBackend.FLASH_ATTENTION}
SEQS = [512, 1024, 2048, 4096, 8192, 16384, 32768]


def flops(b, s, skv, h, d, causal, bwd):
    return 4.0 * b * s * skv * h * d * (0.5 if causal else 1.0) * (2.5 if bwd else 1.0)


def per_call(backend, s, hq=128, hkv=8, d=128, warm=5, iters=10):
    """benchmark_bf16_sdpa.py's loop: one call per event pair, a sleep after each, new inputs each iteration."""
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fw, bw = [], []
    for i in range(warm + iters):
        q = torch.randn(1, hq, s, d, dtype=torch.bfloat16, device=dev, requires_grad=True)
        k = torch.randn(1, hkv, s, d, dtype=torch.bfloat16, device=dev, requires_grad=True)
        v = torch.randn(1, hkv, s, d, dtype=torch.bfloat16, device=dev, requires_grad=True)
        with sdpa_kernel(backends=[BACKENDS[backend]]):
            a.record()
            o = F.scaled_dot_product_attention(q, k, v, enable_gqa=True, is_causal=True)
            b.record()
            torch.cuda.synchronize()
        tf = a.elapsed_time(b)
        time.sleep(min(tf / 100, 1.0))
        g = torch.randn_like(o)
        a.record()
        o.backward(g)
        b.record()
        torch.cuda.synchronize()
        tb = a.elapsed_time(b)
        time.sleep(min(tb / 100, 1.0))
        if i >= warm:
            fw.append(tf)
            bw.append(tb)
        del q, k, v, o, g
    return float(np.median(fw)), float(np.median(bw))   # ms


def b2b(backend, hq, hkv, s, d=128, loop=5, repeats=7):
    q = torch.randn(1, hq, s, d, dtype=torch.bfloat16, device=dev, requires_grad=True)
    k = torch.randn(1, hkv, s, d, dtype=torch.bfloat16, device=dev, requires_grad=True)
    v = torch.randn(1, hkv, s, d, dtype=torch.bfloat16, device=dev, requires_grad=True)
    do = torch.randn(1, hq, s, d, dtype=torch.bfloat16, device=dev)
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def timed(fn):
        for _ in range(2):
            fn()
        torch.cuda.synchronize()
        vals = []
        for _ in range(repeats):
            a.record()
            for _ in range(loop):
                fn()
            b.record(); b.synchronize()
            vals.append(a.elapsed_time(b) / loop)
        return statistics.median(vals)

    with sdpa_kernel(backends=[BACKENDS[backend]]):
        def fwd():
            return F.scaled_dot_product_attention(q, k, v, enable_gqa=True, is_causal=True)
        def fb():
            fwd().backward(do)
        tf = timed(fwd)
        tfb = timed(fb)
    del q, k, v, do
    torch.cuda.empty_cache()
    return tf, tfb - tf   # ms


def main():
    os.makedirs(OUT, exist_ok=True)
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name(0)}", flush=True)
    with open(os.path.join(OUT, "versions.txt"), "w") as f:
        f.write(f"torch = {torch.__version__}\ncuda = {torch.version.cuda}\ncudnn = {torch.backends.cudnn.version()}\n"
                f"gpu = {torch.cuda.get_device_name(0)}\n")
    rows = ["batch_size,q_seqlen,kv_seqlen,num_q_heads,num_kv_heads,head_dim,is_causal,backend,forward_time,backward_time,"
            "fwd_tflops_per_sec,bwd_tflops_per_sec"]
    b2b_rows = ["backend,heads,kv_heads,seq,pass,ms,tflops_per_sec"]
    for s in SEQS:
        for be in BACKENDS:
            tf, tb = per_call(be, s)
            ff, fb = flops(1, s, s, 128, 128, True, False), flops(1, s, s, 128, 128, True, True)
            rows.append(f"1,{s},{s},128,8,128,True,{be},{tf:.3f},{tb:.3f},{ff / tf / 1e9:.3f},{fb / tb / 1e9:.3f}")
            print("per_call", rows[-1], flush=True)
            bf, bb = b2b(be, 128, 8, s)
            for pss, t, fl in (("fwd", bf, ff), ("bwd", bb, fb)):
                b2b_rows.append(f"{be},128,8,{s},{pss},{t:.4f},{fl / t / 1e9:.1f}")
                print("b2b", b2b_rows[-1], flush=True)
    # training-like calls (a tensor-parallel rank's heads at a Llama layout)
    for (hq, hkv) in ((32, 8), (64, 8), (16, 2), (8, 1)):
        for s in (4096, 8192, 16384):
            for be in BACKENDS:
                bf, bb = b2b(be, hq, hkv, s)
                for pss, t in (("fwd", bf), ("bwd", bb)):
                    fl = flops(1, s, s, hq, 128, True, pss == "bwd")
                    b2b_rows.append(f"{be},{hq},{hkv},{s},{pss},{t:.4f},{fl / t / 1e9:.1f}")
                    print("b2b", b2b_rows[-1], flush=True)
    with open(os.path.join(OUT, "per_call.csv"), "w") as f:
        f.write("\n".join(rows) + "\n")
    with open(os.path.join(OUT, "b2b.csv"), "w") as f:
        f.write("\n".join(b2b_rows) + "\n")


if __name__ == "__main__":
    main()
