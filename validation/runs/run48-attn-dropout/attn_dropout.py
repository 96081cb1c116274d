#!/usr/bin/env python3
"""Run 48: attention dropout inside the fused attention kernels, at the GPT-3 rows' shapes.

GPT-3 in NeMo trains with attention_dropout = hidden_dropout = 0.1 (NeMo-Framework-Launcher
conf/training/gpt3/*.yaml; dgxc-benchmarking v24.11.1 nemo_megatron/gpt3_175b_hydra.yaml), and the
modern set's GPT-3 rows run FlashAttention-2 (NVTE_FUSED_ATTN=0) or cuDNN's attention. A fused kernel
with dropout draws its random mask inside the kernel (Philox), which the simulator does not price today
(it prices the flash calls without dropout). This times one causal self-attention call per shape with
dropout_p = 0 and 0.1, forward and backward, through torch SDPA with one backend forced
(FLASH_ATTENTION: FlashAttention-2's kernels in PyTorch; CUDNN_ATTENTION), bf16, head_dim 128,
LOOP calls back to back between two CUDA events, the median of 9 repeats divided by LOOP.
Shapes (heads per rank = heads / tp, micro-batch as the rows): GPT-3 5B tp1 mbs4 (b 4, 32 heads),
GPT-3 20B tp2 mbs2 (b 2, 24 heads), GPT-3 175B tp4 mbs1 and mbs2 (b 1 / 2, 24 heads), all at 2,048
tokens; and Llama-shaped 8k (b 1, 32 heads) as a longer-sequence point.
Output CSV: backend,case,b,H,S,dropout,pass,ms
Usage: attn_dropout.py OUT.csv [--loop N]
"""
import statistics, sys, time
import torch
import torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend

LOOP = int(sys.argv[sys.argv.index("--loop") + 1]) if "--loop" in sys.argv else 10
CASES = [("gpt3-5b tp1 mbs4", 4, 32, 2048), ("gpt3-20b tp2 mbs2", 2, 24, 2048),
         ("gpt3-175b tp4 mbs1", 1, 24, 2048), ("gpt3-175b tp4 mbs2", 2, 24, 2048),
         ("8k h32 b1", 1, 32, 8192)]


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
        for (name, b, H, S) in CASES:
            for p in (0.0, 0.1):
                t0 = time.time()
                mk = lambda g=False: torch.randn(b, H, S, 128, device="cuda", dtype=torch.bfloat16, requires_grad=g)
                q, k, v, do = mk(True), mk(True), mk(True), mk()
                try:
                    with sdpa_kernel([be]):
                        f = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=p)
                        def fb():
                            f().backward(do)
                        tf = timed(f)
                        tfb = timed(fb)
                    rows.append((bname, name, b, H, S, p, "fwd", tf))
                    rows.append((bname, name, b, H, S, p, "bwd", tfb - tf))
                    print(f"{bname} {name} p={p}: fwd {tf:.3f} bwd {tfb - tf:.3f} ms ({time.time() - t0:.1f} s)", flush=True)
                except Exception as e:
                    print(f"{bname} {name} p={p}: {str(e).splitlines()[0][:200]}", flush=True)
                del q, k, v, do
                torch.cuda.empty_cache()
                with open(out, "w") as fh:
                    fh.write("backend,case,b,H,S,dropout,pass,ms\n")
                    for r in rows:
                        fh.write(",".join(str(x) for x in r[:7]) + f",{r[7]:.6g}\n")


if __name__ == "__main__":
    main()
