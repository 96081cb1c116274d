#!/usr/bin/env python3
"""Every kernel class of DeepSeek's measured F&B pair against the simulated MoE layer (issue 15).

usage:
  MFUSIM_KERNELS=1 build/validation/validation_fp8_kernels > /tmp/layer.txt
  python3 validation/deepseek_classes.py TRAIN_JSON /tmp/layer.txt

TRAIN_JSON: train.json of github.com/deepseek-ai/profile-data (commit de0b460f9d5abee8ea5c88666e4b0a4f72ce0201):
one DualPipe F&B pair on one H800, each chunk 4 MoE layers (so one forward, one backward with its weight
gradients and the norm / up-projection recompute of 4 layers), EP 64, TP 1, 4K sequence. Only the compute
stream (the stream with the most kernels) is summed; DeepEP's kernels run on their own stream.
The listing: validation_fp8_kernels' per-kernel lines (pass, name, calls, us) of one MoE layer of the H800
scenario as the cost model prices it alone (without the held-SM slowdown the lowering applies beside an EP
transfer).
Prints per class the measured time per layer (trace / 4), the simulated one and their ratio. The classes
follow what each kernel does, not its name: DeepSeek's RMSNorm kernel takes the residual add (the
simulated norm and residual add are one class), the permutation kernels serve both directions (a forward
expand is a backward reduce's twin), so the class sums are what compares.
"""
import collections
import json
import sys

LAYERS = 4

# (fragment of the trace's kernel name, class); first match wins.
MEASURED = [
    ("GemmKernel", "GEMMs (fp8 DeepGEMM, bf16 router)"),
    ("xmma_gemm", "GEMMs (fp8 DeepGEMM, bf16 router)"),
    ("grouped_gemm::cuda::utils::transpose", "fp8 scale transpose"),
    ("fill_tensormaps", "GEMMs (fp8 DeepGEMM, bf16 router)"),
    ("flash", "attention (flash, with its pre/post passes)"),
    ("swiglu", "SwiGLU (with its fused quantisation)"),
    ("per_token_cast_to_fp8_with_fp8_special_fmt", "fp8 activation cache"),
    ("per_token_cast_back_special_fmt", "fp8 activation cache"),
    ("cast_back_impl", "fp8 activation cache"),
    ("per_token_cast_to_fp8", "1x128 quantisation"),
    ("per_channel_cast_and_transpose", "128x1 transposed quantisation"),
    ("batched_transpose", "fp8 weight transpose"),
    ("_copy_tensor_kernel", "MLA K and V copies"),
    ("rotary_kernel", "rotary embedding"),
    ("layer_norm::", "RMSNorm (with the residual add)"),
    ("gatherTopK", "router top-k and dispatch layout"),
    ("get_fused_mapping", "router top-k and dispatch layout"),
    ("clean_and_count_expert", "router top-k and dispatch layout"),
    ("topk_sum_and_topk_idx", "router top-k and dispatch layout"),
    ("aux_fi_impl", "router top-k and dispatch layout"),
    ("unique_group_indices", "router top-k and dispatch layout"),
    ("_scatter_gather_elementwise", "router top-k and dispatch layout"),
    ("expand_to_fused", "token permutation (expand and weighted reduce)"),
    ("reduce_fused", "token permutation (expand and weighted reduce)"),
]


# Kernels a name alone does not place: MLA's rotary key broadcast into the dense K (torch's strided
# direct copy over [4096 tokens, 128 heads, 64 rope dims]: 65,536 blocks of 128 threads x 4 elements)
# and its gradient summed back over the heads (torch's bf16 sum reduction, one per layer), which the
# simulated layer prices in mla_k_concat(_bwd); and the fp32 scales copied into DeepGEMM's layout just
# before each routed experts' grouped GEMM (torch's direct copy, 128 threads x 2 elements per block),
# which it prices as fp8_scale_transpose.
def measured_special(e, following):
    name, grid = e["name"], (e.get("args", {}).get("grid") or [0])[0]
    if "direct_copy_kernel_cuda" in name and "elementwise_kernel<128, 4" in name and grid == 4096 * 128 * 64 // 512:
        return "MLA K and V copies"
    if "ReduceOp<c10::BFloat16" in name and "sum_functor" in name:
        return "MLA K and V copies"
    if ("direct_copy_kernel_cuda" in name and "elementwise_kernel<128, 2" in name and following is not None
            and ("m_grouped" in following["name"] or "fill_tensormaps" in following["name"])):
        return "fp8 scale transpose"
    return None


def simulated_class(name):
    if name.startswith(("fp8_quant_x", "fp8_quant_dy", "fp8_quant_dispatch", "fp8_quant_combine_grad")):
        return "1x128 quantisation"
    if name.startswith(("fp8_quant_t_x", "fp8_quant_t_dy")):
        return "128x1 transposed quantisation"
    if name.startswith("fp8_cache"):
        return "fp8 activation cache"
    if name == "fp8_weight_transpose":
        return "fp8 weight transpose"
    if name == "fp8_scale_transpose":
        return "fp8 scale transpose"
    if name.startswith(("mla_k_concat", "mla_v_copy")):
        return "MLA K and V copies"
    if name.startswith("rope_"):
        return "rotary embedding"
    if name.startswith(("rmsnorm", "q_norm", "kv_norm", "residual_add")):
        return "RMSNorm (with the residual add)"
    if name.startswith(("router_topk", "router_group_topk")):
        return "router top-k and dispatch layout"
    if name.startswith(("moe_permute", "moe_unpermute")):
        return "token permutation (expand and weighted reduce)"
    if name.startswith("swiglu"):
        return "SwiGLU (with its fused quantisation)"
    return None


def measured(path):
    with open(path) as f:
        trace = json.load(f)
    ev = trace["traceEvents"] if isinstance(trace, dict) else trace
    by_tid = collections.defaultdict(list)
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            by_tid[e.get("tid")].append(e)
    compute = sorted(max(by_tid.values(), key=len), key=lambda e: e["ts"])
    out = collections.defaultdict(float)
    for i, e in enumerate(compute):
        following = compute[i + 1] if i + 1 < len(compute) else None
        cls = measured_special(e, following) or next((c for frag, c in MEASURED if frag in e["name"]),
                                                     "other (elementwise, reductions, copies)")
        out[cls] += e["dur"] / LAYERS
    return out


def simulated(path):
    out = collections.defaultdict(float)
    for line in open(path):
        parts = line.split()
        if len(parts) < 4 or parts[0] not in ("F", "B", "W"):
            continue
        name, us = parts[1], float(parts[3])
        kind = parts[4] if len(parts) > 4 else ""
        if kind == "gemm":
            cls = "GEMMs (fp8 DeepGEMM, bf16 router)"
        elif kind == "attention":
            cls = "attention (flash, with its pre/post passes)"
        else:
            cls = simulated_class(name) or "other (elementwise, reductions, copies)"
        out[cls] += us
    return out


def main():
    if len(sys.argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    m, s = measured(sys.argv[1]), simulated(sys.argv[2])
    print(f"{'class (us per MoE layer: F + B + W)':50s} {'measured':>9s} {'mfusim':>9s} {'ratio':>6s}")
    tm = ts = mm = ms = 0.0
    for cls in sorted(set(m) | set(s), key=lambda c: -m.get(c, 0)):
        a, b = m.get(cls, 0.0), s.get(cls, 0.0)
        tm, ts = tm + a, ts + b
        if not cls.startswith(("GEMMs", "attention")):
            mm, ms = mm + a, ms + b
        print(f"{cls:50s} {a:9.0f} {b:9.0f} {a / b if b else float('inf'):6.2f}")
    print(f"{'memory-bound and small kernels':50s} {mm:9.0f} {ms:9.0f} {mm / ms:6.2f}")
    print(f"{'all kernels':50s} {tm:9.0f} {ts:9.0f} {tm / ts:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
