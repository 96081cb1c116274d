#!/usr/bin/env python3
"""The fp8 work around the GEMMs in DeepSeek's published training profile, per MoE layer.

usage: validation/deepseek_profile.py TRAIN_JSON

TRAIN_JSON is train.json of github.com/deepseek-ai/profile-data (commit
de0b460f9d5abee8ea5c88666e4b0a4f72ce0201, 2025-02-27, unchanged since): a PyTorch-profiler trace of one DualPipe
F&B pair on one H800 of a DeepSeek-V3 run (EP 64, TP 1, 4K sequence, balanced routing), each
chunk 4 MoE layers. The compute runs beside DeepEP's kernels (20 SMs), as in the F&B pairs of
the simulated step. Prints the kernel time of each class summed over the trace and per layer
(one forward and one backward of one micro-batch), with the mfusim kernels that stand for it
(models/kernel_builders.cpp linear_blockwise, models/layer_kernels.cpp; docs/moe-dualpipe.md).
"""
import collections
import json
import sys

# (trace kernel name fragment, class, the mfusim kernels priced for it); first match wins.
CLASSES = [
    ("swiglu_forward_with_weight_and_per_token_cast", "SwiGLU fused with 1x128 quantisation", "swiglu (fp8 output)"),
    ("swiglu_and_per_channel_cast_and_transpose", "SwiGLU recompute fused with 128x1 quantisation", "fp8_quant_t_x"),
    ("per_token_cast_to_fp8_with_fp8_special_fmt", "attention output cache (quantise)", "fp8_cache_attn_out"),
    ("per_token_cast_back_special_fmt", "attention output cache (dequantise)", "fp8_cache_attn_out_dequant"),
    ("per_token_cast_to_fp8", "1x128 quantisation",
     "fp8_quant_x, fp8_quant_dy, fp8_quant_dispatch, fp8_quant_combine_grad, fp8_cache_swiglu_in"),
    ("per_channel_cast_and_transpose", "128x1 transposed quantisation", "fp8_quant_t_x, fp8_quant_t_dy"),
    ("batched_transpose", "fp8 weight transpose", "fp8_weight_transpose"),
    ("utils::transpose", "scale transpose", "fp8_scale_transpose"),
    ("cast_back_impl", "fp8 cache dequantise", "fp8_cache_swiglu_in_dequant"),
    ("_copy_tensor_kernel", "MLA K and V copies", "mla_k_concat, mla_v_copy (and _bwd)"),
    ("rotary_kernel", "rotary embedding", "rope_q, rope_k (and _bwd)"),
    ("GemmKernel", "fp8 GEMM (DeepGEMM)", "the GEMMs"),
    ("xmma_gemm", "bf16 GEMM (router)", "router"),
    ("flash", "attention", "flash_attn_*"),
    ("dpsk::ep", "DeepEP (communication SMs)", "EP transfers"),
]
LAYERS = 4


def main():
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    with open(sys.argv[1]) as f:
        trace = json.load(f)
    total = collections.defaultdict(float)
    calls = collections.Counter()
    for e in trace["traceEvents"]:
        if e.get("cat") != "kernel":
            continue
        cls = next((c for frag, c, _ in CLASSES if frag in e["name"]), "other")
        total[cls] += e.get("dur", 0)
        calls[cls] += 1
    priced = {c: m for _, c, m in CLASSES}
    print(f"{'class':50s} {'calls':>5s} {'us':>9s} {'us/layer':>9s}  mfusim kernels")
    fp8 = 0.0
    for cls, us in sorted(total.items(), key=lambda kv: -kv[1]):
        print(f"{cls:50s} {calls[cls]:5d} {us:9.0f} {us / LAYERS:9.0f}  {priced.get(cls, '')}")
        if cls not in ("fp8 GEMM (DeepGEMM)", "bf16 GEMM (router)", "attention", "DeepEP (communication SMs)", "other",
                       "SwiGLU fused with 1x128 quantisation", "MLA K and V copies", "rotary embedding"):
            fp8 += us
    print(f"{'fp8 work around the GEMMs (the quantise and transpose classes)':50s} {'':5s} {fp8:9.0f} {fp8 / LAYERS:9.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
