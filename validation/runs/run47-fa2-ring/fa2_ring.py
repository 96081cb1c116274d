#!/usr/bin/env python3
"""Run 47: the attention calls of NeMo's H100 long-sequence rows (Llama 2 7B, 4k-1M tokens) as
FlashAttention-2 and as cuDNN run them, back to back, on one GPU.

Those rows ran with Transformer Engine's cuDNN attention turned off (their container's launcher:
NVTE_FUSED_ATTN=0), so the layer and the context-parallel ring ran flash-attn 2; the simulator prices
them with the calibration's [attention_fa2] (run 31's FlashAttention-2 samples: GQA 32/8 heads, causal
squares and the ring's non-square halves). This run times the rows' own shapes: MHA with 32/tp heads per
rank; cp 1 rows the whole causal call, cp > 1 rows the ring's calls of a rank (TE's AttnFuncWithCP with
load-balanced chunks, L = S/cp tokens per rank): the causal diagonal L x L, the lower half L x L/2 and the
upper half L/2 x L, unmasked (validation/runs/run21-cp-ring/cp_ring.py's calls, there with cuDNN only).
Kernels through torch SDPA with one backend forced (FLASH_ATTENTION: FlashAttention-2's kernels built
into PyTorch; CUDNN_ATTENTION as the control), bf16, head_dim 128; LOOP calls back to back between two
CUDA events, the median of 9 repeats divided by LOOP (run 21b's timing, the calibration's).
Output CSV (validation_cp_ring's format): case,b,H,Hk,S,cp,item,ms with item whole_f/_b, diag_f/_b,
lower_f/_b, upper_f/_b; the cuDNN rows carry "cudnn " before the case name.
Usage: fa2_ring.py OUT.csv [--loop N]
"""
import statistics, sys, time
import torch
import torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend

LOOP = int(sys.argv[sys.argv.index("--loop") + 1]) if "--loop" in sys.argv else 5
CASES = [  # name, batch, heads per rank, kv heads per rank, S, cp (validation/cp_ring.cpp kNemols)
    ("nemols 4k tp1", 1, 32, 32, 4096, 1),
    ("nemols 8k tp1", 1, 32, 32, 8192, 1),
    ("nemols 16k tp2", 1, 16, 16, 16384, 1),
    ("nemols 32k tp2 cp2", 1, 16, 16, 32768, 2),
    ("nemols 64k tp4 cp2", 1, 8, 8, 65536, 2),
    ("nemols 128k tp4 cp4", 1, 8, 8, 131072, 4),
    ("nemols 256k tp4 cp8", 1, 8, 8, 262144, 8),
    ("nemols 512k tp8 cp16", 1, 4, 4, 524288, 16),
    ("nemols 1m tp8 cp32", 1, 4, 4, 1048576, 32),
]


def timed(fn, repeats=9):
    for _ in range(2):
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


def attn_times(be, b, H, Hk, sq, skv, causal):
    """Forward and backward ms of one SDPA call (backward = forward+backward minus forward)."""
    mk = lambda *s, g=False: torch.randn(*s, device="cuda", dtype=torch.bfloat16, requires_grad=g)
    q, k, v = mk(b, H, sq, 128, g=True), mk(b, Hk, skv, 128, g=True), mk(b, Hk, skv, 128, g=True)
    do = mk(b, H, sq, 128)
    with sdpa_kernel([be]):
        f = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        def fb():
            f().backward(do)
        tf = timed(f)
        tfb = timed(fb)
    del q, k, v, do
    return tf, tfb - tf


def main():
    out_path = sys.argv[1]
    print(f"torch {torch.__version__}, cudnn {torch.backends.cudnn.version()}, {torch.cuda.get_device_name(0)}, loop {LOOP}",
          flush=True)
    rows = []
    for tag, be in (("", SDPBackend.FLASH_ATTENTION), ("cudnn ", SDPBackend.CUDNN_ATTENTION)):
        for (name, b, H, Hk, S, cp) in CASES:
            t0 = time.time()
            n = tag + name
            rec = lambda item, ms: rows.append((n, b, H, Hk, S, cp, item, ms))
            L = S // cp
            try:
                if cp == 1:
                    wf, wb = attn_times(be, b, H, Hk, S, S, True); rec("whole_f", wf); rec("whole_b", wb)
                else:
                    df, db = attn_times(be, b, H, Hk, L, L, True); rec("diag_f", df); rec("diag_b", db)
                    lf, lb = attn_times(be, b, H, Hk, L, L // 2, False); rec("lower_f", lf); rec("lower_b", lb)
                    uf, ub = attn_times(be, b, H, Hk, L // 2, L, False); rec("upper_f", uf); rec("upper_b", ub)
            except Exception as e:
                print(f"{n}: {str(e).splitlines()[0][:200]}", file=sys.stderr, flush=True)
            torch.cuda.empty_cache()
            print(f"{n}: " + ", ".join(f"{r[6]} {r[7]:.3f}" for r in rows if r[0] == n) + f"  ({time.time()-t0:.1f} s)",
                  flush=True)
            with open(out_path, "w") as f:   # rewritten after every case: a timeout keeps what ran
                f.write("case,b,H,Hk,S,cp,item,ms\n")
                for r in rows:
                    f.write(",".join(str(x) for x in r[:7]) + f",{r[7]:.6g}\n")


if __name__ == "__main__":
    main()
