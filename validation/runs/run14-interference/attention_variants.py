#!/usr/bin/env python3
"""Attention variants on one H200, run 14: Llama-70B heads at TP8 (8 query heads, 1 KV head per rank,
head dim 128), causal, bf16, sequence 4096 and 8192, micro-batch 1 and 2; forward and backward.
  hf_eager        Hugging Face eager: repeat_kv (K/V expanded to 8 heads), q @ k^T * scale + additive
                  causal mask (bf16, dtype-min), softmax(dim=-1, dtype=float32).to(bf16), dropout p=0
                  (F.dropout(training=True, p=0): a no-op), @ v
  sdpa_math       F.scaled_dot_product_attention under SDPBackend.MATH, is_causal, enable_gqa
  megatron_unfused  Megatron's unfused core attention with its fused scale-mask-softmax, APPROXIMATED
                  by torch ops in bf16: K/V repeat_interleave, baddbmm(beta=0, alpha=scale) into a
                  preallocated bf16 buffer, masked_fill(causal, -inf) + torch.softmax on bf16 (two
                  kernels where Megatron's scaled_upper_triang_masked_softmax is one), bmm with V
  flash           SDPA FLASH_ATTENTION backend (FlashAttention-2), is_causal, enable_gqa
  cudnn           SDPA CUDNN_ATTENTION backend, for reference
Per variant: forward seconds (median of 7 timed calls after 2 warm-ups, CUDA events), backward seconds
(torch.autograd.backward of the output with a random gradient, retain_graph, median of 7), peak memory
above the inputs during forward and during forward+backward (max_memory_allocated).
Writes attention_variants.csv. Usage: attention_variants.py OUTDIR [--deadline S] [--quick]
"""
import csv, math, os, statistics, sys, time
import torch
import torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend

HQ, HKV, D = 8, 1, 128


def hf_eager(q, k, v, mask):
    rep = HQ // HKV
    b, _, s, d = k.shape
    k = k[:, :, None].expand(b, HKV, rep, s, d).reshape(b, HQ, s, d)
    v = v[:, :, None].expand(b, HKV, rep, s, d).reshape(b, HQ, s, d)
    w = torch.matmul(q, k.transpose(2, 3)) * (1.0 / math.sqrt(D))
    w = w + mask
    w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
    w = F.dropout(w, p=0.0, training=True)
    return torch.matmul(w, v)


def sdpa(backend):
    def f(q, k, v, mask):
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    return f


def megatron_unfused(q, k, v, boolmask):
    b, h, s, d = q.shape
    rep = HQ // HKV
    k = k.repeat_interleave(rep, dim=1)
    v = v.repeat_interleave(rep, dim=1)
    q2, k2, v2 = q.reshape(b * h, s, d), k.reshape(b * h, s, d), v.reshape(b * h, s, d)
    buf = torch.empty(b * h, s, s, device=q.device, dtype=q.dtype)
    scores = torch.baddbmm(buf, q2, k2.transpose(1, 2), beta=0.0, alpha=1.0 / math.sqrt(d))
    probs = torch.softmax(scores.view(b, h, s, s).masked_fill(boolmask, float("-inf")), dim=-1)
    return torch.bmm(probs.view(b * h, s, s), v2).view(b, h, s, d)


def ev():
    return torch.cuda.Event(enable_timing=True)


def timed(fn, reps=7):
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    v = []
    for _ in range(reps):
        a, b = ev(), ev()
        a.record(); fn(); b.record(); b.synchronize()
        v.append(a.elapsed_time(b) * 1e-3)
    return statistics.median(v)


def main():
    outdir = sys.argv[1]
    deadline = time.time() + float(sys.argv[sys.argv.index("--deadline") + 1]) if "--deadline" in sys.argv else 1e18
    quick = "--quick" in sys.argv
    rows = []
    variants = [("flash", sdpa(SDPBackend.FLASH_ATTENTION), "none"), ("cudnn", sdpa(SDPBackend.CUDNN_ATTENTION), "none"),
                ("hf_eager", hf_eager, "additive"), ("sdpa_math", sdpa(SDPBackend.MATH), "none"),
                ("megatron_unfused", megatron_unfused, "bool")]
    for s in ([4096] if quick else [4096, 8192]):
        for b in (1, 2):
            add = torch.full((s, s), torch.finfo(torch.bfloat16).min, device="cuda", dtype=torch.bfloat16).triu(1)[None, None]
            boolm = torch.ones(s, s, device="cuda", dtype=torch.bool).triu(1)[None, None]
            q = torch.randn(b, HQ, s, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
            k = torch.randn(b, HKV, s, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
            v = torch.randn(b, HKV, s, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
            go = torch.randn(b, HQ, s, D, device="cuda", dtype=torch.bfloat16)
            with torch.no_grad():
                ref = sdpa(SDPBackend.MATH)(q.float(), k.float(), v.float(), None)
            for name, fn, mk in variants:
                if time.time() > deadline:
                    print("deadline: stopped", flush=True)
                    break
                mask = add if mk == "additive" else boolm if mk == "bool" else None
                row = dict(variant=name, seq=s, mbs=b, q_heads=HQ, kv_heads=HKV, head_dim=D)
                try:
                    with torch.no_grad():
                        o = fn(q, k, v, mask)
                        row["relerr"] = ((o.float() - ref).norm() / ref.norm()).item()
                    del o
                    torch.cuda.synchronize(); torch.cuda.empty_cache()
                    base = torch.cuda.memory_allocated()
                    torch.cuda.reset_peak_memory_stats()
                    out = fn(q, k, v, mask)
                    torch.cuda.synchronize()
                    row["peak_fwd_gib"] = (torch.cuda.max_memory_allocated() - base) / 2**30
                    row["saved_gib"] = (torch.cuda.memory_allocated() - base) / 2**30
                    out.backward(go)
                    torch.cuda.synchronize()
                    row["peak_fwdbwd_gib"] = (torch.cuda.max_memory_allocated() - base) / 2**30
                    del out
                    q.grad = k.grad = v.grad = None

                    def fwd():
                        with torch.no_grad():
                            return fn(q, k, v, mask)
                    # forward as in training (autograd recording), output dropped
                    row["fwd_s"] = timed(lambda: fn(q, k, v, mask))
                    out = fn(q, k, v, mask)

                    def bwd():
                        q.grad = k.grad = v.grad = None
                        out.backward(go, retain_graph=True)
                    row["bwd_s"] = timed(bwd)
                    del out
                    q.grad = k.grad = v.grad = None
                    fl = 4.0 * b * HQ * s * s * D / 2  # causal: half of QK^T and PV
                    row["fwd_tflops_causal"] = fl / row["fwd_s"] / 1e12
                    row["bwd_tflops_causal"] = 2.5 * fl / row["bwd_s"] / 1e12
                    row["status"] = "ok"
                except torch.cuda.OutOfMemoryError as e:
                    row["status"] = "oom"
                except Exception as e:  # noqa: BLE001
                    row["status"] = f"error: {type(e).__name__}: {str(e)[:150]}"
                torch.cuda.synchronize(); torch.cuda.empty_cache()
                rows.append(row)
                print(" ".join(f"{kk}={vv:.4g}" if isinstance(vv, float) else f"{kk}={vv}" for kk, vv in row.items()), flush=True)
            del q, k, v, go, ref, add, boolm
            torch.cuda.empty_cache()
    keys = []
    for r in rows:
        for kk in r:
            if kk not in keys:
                keys.append(kk)
    with open(os.path.join(outdir, "attention_variants.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader(); w.writerows(rows)


if __name__ == "__main__":
    main()
