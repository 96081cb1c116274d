#!/usr/bin/env python3
"""Run 49: attention dropout inside the fused kernels at shapes outside run 48's, to check the fitted
per-score times (hardware/calibration.h AttentionFit, fitted on run 48's ten pairs per kernel).

The model under test: a call with dropout takes its time without dropout plus a fixed time per counted score
(b x heads x seq_q x seq_kv, halved when causal), per kernel and pass, whatever the head dim, the K/V heads
or the dropout probability. Each case times one self-attention call through torch SDPA with one backend forced
(FLASH_ATTENTION: FlashAttention-2; CUDNN_ATTENTION), bf16, dropout_p = 0 and p, forward and backward, LOOP
calls back to back between two CUDA events, the median of 9 repeats divided by LOOP (as run 48).
Output CSV: backend,case,b,H,KV,S,D,causal,dropout,pass,ms
Usage: dropout_shapes.py OUT.csv [--loop N]
"""
import statistics, sys, time
import torch
import torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend

LOOP = int(sys.argv[sys.argv.index("--loop") + 1]) if "--loop" in sys.argv else 10
# name, b, heads, kv heads, seq, head dim, causal, p
CASES = [("d64 b4 h32 2k", 4, 32, 32, 2048, 64, True, 0.1),
         ("d256 b2 h8 2k", 2, 8, 8, 2048, 256, True, 0.1),
         ("gqa h32 kv8 4k", 1, 32, 8, 4096, 128, True, 0.1),
         ("noncausal b2 h24 2k", 2, 24, 24, 2048, 128, False, 0.1),
         ("16k b1 h16", 1, 16, 16, 16384, 128, True, 0.1),
         ("p0.3 b1 h24 2k", 1, 24, 24, 2048, 128, True, 0.3),
         ("small b1 h8 1k", 1, 8, 8, 1024, 128, True, 0.1)]


def timed(fn, repeats=9):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    v = []
    for _ in range(repeats):
        a.record()
        for _ in range(LOOP):
            fn()
        b.record(); b.synchronize()
        v.append(a.elapsed_time(b) / LOOP)
    return statistics.median(v)


def main():
    out = sys.argv[1]
    print(f"torch {torch.__version__}, cudnn {torch.backends.cudnn.version()}, {torch.cuda.get_device_name(0)}, loop {LOOP}",
          flush=True)
    rows = []
    for bname, be in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
        for (name, b, H, KV, S, D, causal, pdrop) in CASES:
            for p in (0.0, pdrop):
                t0 = time.time()
                q = torch.randn(b, H, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                k = torch.randn(b, KV, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                v = torch.randn(b, KV, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                do = torch.randn(b, H, S, D, device="cuda", dtype=torch.bfloat16)
                try:
                    with sdpa_kernel([be]):
                        f = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, dropout_p=p,
                                                                   enable_gqa=KV != H)
                        def fb():
                            f().backward(do)
                        tf = timed(f)
                        tfb = timed(fb)
                    rows.append((bname, name, b, H, KV, S, D, causal, p, "fwd", tf))
                    rows.append((bname, name, b, H, KV, S, D, causal, p, "bwd", tfb - tf))
                    print(f"{bname} {name} p={p}: fwd {tf:.3f} bwd {tfb - tf:.3f} ms ({time.time() - t0:.1f} s)", flush=True)
                except Exception as e:
                    print(f"{bname} {name} p={p}: {str(e).splitlines()[0][:200]}", flush=True)
                del q, k, v, do
                torch.cuda.empty_cache()
                with open(out, "w") as fh:
                    fh.write("backend,case,b,H,KV,S,D,causal,dropout,pass,ms\n")
                    for r in rows:
                        fh.write(",".join(str(x) for x in r[:10]) + f",{r[10]:.6g}\n")


if __name__ == "__main__":
    main()
