#!/usr/bin/env python3
"""Run 27: the alone price of DeepSeek-V3's per-layer kernels that its published F&B pair shows slower
than the cost model (docs/moe-dualpipe.md "The F&B pair class by class"), as torch runs them on one H200.

usage: python3 kernels.py OUTDIR
Writes OUTDIR/kernels.csv: name, shape, backend, median_us, p10_us, p90_us, samples (CUDA events around
each call after warm-up; 30 calls; tensors of DeepSeek-V3's per-rank training shapes: 4096 tokens,
hidden 7168, 128 heads, MLA d_qk 192 (128 + 64 rotary), d_v 128, 256 routed experts in 8 groups, top-8
of the top-4 groups).
1. MLA attention, causal, F and F+B, through torch SDPA with each backend that accepts the shape
   (cuDNN, flash, efficient), with d_v 128 and with V padded to 192.
2. The router: torch.topk over [4096, 256] fp32 (k = 8), and DeepSeek-V3's group-limited gate as torch
   ops (sigmoid, per-group top-2 sum, top-4 groups, masked top-8, gather, normalise).
3. Rotary on the 64-dim slice of each 192-wide query head (a strided view), and on a contiguous
   [4096, 128, 64] tensor (the same bytes).
4. Whole-activation elementwise ops: bf16 add and multiply on [4096, 7168], a strided copy of a
   [4096, 7168] view.
"""
import csv
import statistics
import sys

import torch
import torch.nn.functional as F

dev = "cuda"
T, H, NH, DQK, DR, DV, E, G, TOPG, K = 4096, 7168, 128, 192, 64, 128, 256, 8, 4, 8
rows = []


def timeit(name, shape, backend, fn, n=30, warm=5):
    try:
        for _ in range(warm):
            fn()
        torch.cuda.synchronize()
        ts = []
        for _ in range(n):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b) * 1e3)
        ts.sort()
        row = [name, shape, backend, round(statistics.median(ts), 1), round(ts[len(ts) // 10], 1),
               round(ts[(9 * len(ts)) // 10], 1), n]
    except Exception as e:  # a backend that refuses the shape
        row = [name, shape, backend, "", "", "", f"error: {type(e).__name__}: {str(e)[:120]}"]
    rows.append(row)
    print(*row, flush=True)


def attention():
    from torch.nn.attention import SDPBackend, sdpa_kernel
    q = torch.randn(1, NH, T, DQK, device=dev, dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(1, NH, T, DQK, device=dev, dtype=torch.bfloat16, requires_grad=True)
    for dv in (DV, DQK):
        v = torch.randn(1, NH, T, dv, device=dev, dtype=torch.bfloat16, requires_grad=True)
        g = torch.randn(1, NH, T, dv, device=dev, dtype=torch.bfloat16)
        for name, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION),
                         ("efficient", SDPBackend.EFFICIENT_ATTENTION)):
            def fwd():
                with sdpa_kernel(be):
                    return F.scaled_dot_product_attention(q, k, v, is_causal=True)

            def fwdbwd():
                with sdpa_kernel(be):
                    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                o.backward(g)
            shape = f"1x{NH}x{T} dqk {DQK} dv {dv}"
            with torch.no_grad():
                timeit("mla_attention_fwd", shape, name, fwd)
            timeit("mla_attention_fwd_bwd", shape, name, fwdbwd)
            q.grad = k.grad = v.grad = None


def router():
    logits = torch.randn(T, E, device=dev, dtype=torch.float32)
    bias = torch.zeros(E, device=dev)
    timeit("topk_256_k8", f"{T}x{E} fp32", "torch", lambda: torch.topk(logits, K, dim=-1))

    def gate():
        s = logits.sigmoid()
        sb = s + bias
        gs = sb.view(T, G, E // G).topk(2, dim=-1)[0].sum(-1)
        gi = gs.topk(TOPG, dim=-1)[1]
        mask = torch.zeros(T, G, device=dev).scatter_(1, gi, 1).unsqueeze(-1).expand(T, G, E // G).reshape(T, E)
        idx = sb.masked_fill(mask == 0, float("-inf")).topk(K, dim=-1)[1]
        w = s.gather(1, idx)
        return idx, w / w.sum(-1, keepdim=True) * 2.5
    timeit("deepseek_v3_gate", f"{T}x{E} fp32, {G} groups, top {TOPG} groups, top {K}", "torch ops", gate)


def rotary():
    q = torch.randn(T, NH, DQK, device=dev, dtype=torch.bfloat16)
    cos = torch.randn(T, 1, DR // 2, device=dev, dtype=torch.float32)
    sin = torch.randn(T, 1, DR // 2, device=dev, dtype=torch.float32)

    def rope(x):   # interleaved pairs, as DeepSeek-V3's apply_rotary_emb (complex multiply), in fp32
        xf = x.float().view(T, NH, DR // 2, 2)
        a, b = xf[..., 0], xf[..., 1]
        return torch.stack((a * cos - b * sin, a * sin + b * cos), -1).flatten(-2).to(torch.bfloat16)

    def strided():
        q[..., DQK - DR:] = rope(q[..., DQK - DR:])
    qc = torch.randn(T, NH, DR, device=dev, dtype=torch.bfloat16)

    def contiguous():
        qc.copy_(rope(qc))
    timeit("rope_q_slice", f"{T}x{NH}x[{DQK - DR}:{DQK}] bf16 view", "torch ops", strided)
    timeit("rope_q_contiguous", f"{T}x{NH}x{DR} bf16", "torch ops", contiguous)


def elementwise():
    a = torch.randn(T, H, device=dev, dtype=torch.bfloat16)
    b = torch.randn(T, H, device=dev, dtype=torch.bfloat16)
    c = torch.empty_like(a)
    timeit("add_bf16", f"{T}x{H}", "torch", lambda: torch.add(a, b, out=c))
    timeit("mul_bf16", f"{T}x{H}", "torch", lambda: torch.mul(a, b, out=c))
    big = torch.randn(H, T, device=dev, dtype=torch.bfloat16)
    timeit("copy_transposed_view", f"{T}x{H} from a [{H}, {T}].t() view", "torch", lambda: c.copy_(big.t()))
    timeit("copy_contiguous", f"{T}x{H}", "torch", lambda: c.copy_(a))


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    print(torch.__version__, torch.cuda.get_device_name(), flush=True)
    for part in (elementwise, router, rotary, attention):
        part()
    with open(f"{out}/kernels.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["name", "shape", "backend", "median_us", "p10_us", "p90_us", "samples"])
        w.writerows(rows)


if __name__ == "__main__":
    main()
