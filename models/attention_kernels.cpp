// The attention core's kernels, one list per variant (config::Attention): FlashAttention /
// cuDNN fused attention, or a materialised score path (Megatron's fused and unfused softmax,
// Hugging Face eager, PyTorch's SDPA math backend, the plain PyTorch chain of
// validation/train_step.py) with its GQA repeats.
#include "models/kernel_builders.h"

#include <cmath>

#include "models/conventions.h"

namespace mfusim::models::detail {

using hardware::Kernel;
using hardware::KernelKind;

Kernel attn_kernel(KernelKind kind, const char* name, const AttnShape& s, bool flash, bool causal, double flops,
                   double bytes) {
  Kernel k;
  k.kind = kind;
  k.name = name;
  k.batch = std::llround(s.batch);
  k.heads = std::llround(s.heads);
  k.kv_heads = std::llround(s.kv_heads);
  k.seq_q = std::llround(s.seq_q);
  k.seq_kv = std::llround(s.seq_kv);
  k.head_dim = std::llround(s.dqk);
  k.head_dim_v = std::llround(s.dv);
  k.causal = causal;
  k.flash = flash;
  k.flops = flops;
  k.bytes = bytes;
  return k;
}

// Times a softmax over rows of `row` fp32 elements reads its input: PyTorch's
// cunn_SoftMaxForward (aten/src/ATen/native/cuda/SoftMax.cu, host_softmax) keeps a row in
// shared memory when it fits (cunn_SoftMaxForwardSmem / Reg: one read); a longer row (the
// vocabulary of a cross entropy) is read once for the max, once for the sum of exponentials
// and once for the write pass. Shared memory per block: 48 KiB (the kernel's static limit).
double softmax_row_reads(double row) { return row * 4 <= 48.0 * 1024 ? 1.0 : 3.0; }

// Attention core kernels of variant `a` (config::Attention): F appended to f; B appended
// to b in *forward* order (layer_kernels reverses b once at the end, like every other B
// kernel). Each variant is its own list of kernels with their FLOPs and bytes; the cost
// model times them (no per-variant factor). Measured against run 14 (one H200, Llama-70B
// heads at TP 8) in tests/models/test_attention_variants.cpp.
namespace {
void attention_kernels_of(const ModelSpec& m, const AttnShape& s, int e, config::Attention a,
                          std::vector<Kernel>& f, std::vector<Kernel>& b);
}  // namespace

void attention_kernels(const ModelSpec& m, const AttnShape& s, int e, config::Attention a,
                       std::vector<Kernel>& f, std::vector<Kernel>& b) {
  std::vector<Kernel> fa, ba;
  attention_kernels_of(m, s, e, a, fa, ba);
  // Hugging Face eager and the SDPA math backend are eager PyTorch kernels whatever the
  // weights recipe: their softmax, cast, repeat and pointwise kernels run at the measured
  // bandwidth of their family (the calibration's [memory_families], validation/kernel_bw.py).
  if (a == config::Attention::hf_eager || a == config::Attention::sdpa_math) {
    tag_eager_families(fa);
    tag_eager_families(ba);
  }
  f.insert(f.end(), fa.begin(), fa.end());
  b.insert(b.end(), ba.begin(), ba.end());
}

namespace {
void attention_kernels_of(const ModelSpec& m, const AttnShape& s, int e, config::Attention a,
                          std::vector<Kernel>& f, std::vector<Kernel>& b) {
  using config::Attention;
  const double q = s.batch * s.seq_q * s.heads * s.dqk * e;
  const double k = s.batch * s.seq_kv * s.kv_heads * s.dqk * e;
  const double v = s.batch * s.seq_kv * s.kv_heads * s.dv * e;
  const double o = s.batch * s.seq_q * s.heads * s.dv * e;
  const double lse = s.batch * s.heads * s.seq_q * 4;
  const double qk_flops = 2 * s.batch * s.heads * s.seq_q * s.seq_kv * s.dqk;
  const double av_flops = 2 * s.batch * s.heads * s.seq_q * s.seq_kv * s.dv;
  if (config::fused_attention(a)) {
    // FlashAttention / cuDNN fused attention: Q,K,V read once, O and the softmax
    // log-sum-exp written. They differ in speed only (the calibration's measured
    // fused-attention efficiency: `mfusim calibrate --fused-attention`; FlashAttention-2's own
    // [attention_fa2] fit for flash2, [attention_triton] for triton_flash).
    f.push_back(attn_kernel(KernelKind::attention_fwd, "flash_attn_fwd", s, true, true, qk_flops + av_flops,
                            q + k + v + o + lse));
    // Backward: Q,K,V,O,dO and LSE read; dQ,dK,dV written.
    b.push_back(attn_kernel(KernelKind::attention_bwd, "flash_attn_bwd", s, true, true, 2 * (qk_flops + av_flops),
                            q + k + v + 2 * o + lse + q + k + v));
    f.back().fa2 = b.back().fa2 = a == Attention::flash2;
    f.back().triton_fa = b.back().triton_fa = a == Attention::triton_flash;
    // Dropout on the probabilities is drawn inside the call (no mask in memory): the kernel's own cost.
    f.back().dropout = b.back().dropout = has_dropout(m);
    // Neither FlashAttention-2 nor the Triton kernel has an fp8 path: bf16 whatever features.fp8_attention says.
    if (a == Attention::flash2 || a == Attention::triton_flash) f.back().keep_bf16 = b.back().keep_bf16 = true;
    return;
  }
  // Materialised scores: E elements of the [b, heads, s_q, s_kv] matrix.
  const double E = s.batch * s.heads * s.seq_q * s.seq_kv;
  const double rep = s.kv_heads > 0 && s.kv_heads < s.heads ? s.heads / s.kv_heads : 1.0;
  if (a == Attention::sdpa_math) {
    sdpa_math_kernels(m, s, e, f, b);
    return;
  }
  // GQA: K and V are repeated to every query head before the matmuls (PyTorch/Hugging Face
  // eager attention: repeat_kv / repeat_interleave; Megatron-Core DotProductAttention:
  // key.repeat_interleave(heads / query_groups)); the backward sums the copies back.
  if (rep > 1) {
    f.push_back(memk("k_repeat", k, k * rep, 0));
    f.push_back(memk("v_repeat", v, v * rep, 0));
    b.push_back(memk("k_repeat_bwd", k * rep, k, k * rep));
    b.push_back(memk("v_repeat_bwd", v * rep, v, v * rep));
  }
  f.push_back(attn_kernel(KernelKind::attention_fwd, "attn_qk", s, false, true, qk_flops, q + k + e * E));
  std::vector<Kernel> fb, bb;   // memory kernels of the score path, backward in F order
  // One score-path kernel and its backward, bytes per score given explicitly: a
  // pointwise op's backward reads dy and writes dx only (no saved input), the
  // softmax backward reads its saved output y and dy.
  auto score_op = [&](const char* fn, const char* bn, double f_rw, double f_flops, double b_rw, double b_flops) {
    fb.push_back(memk(fn, f_rw * E, 0, f_flops * E));
    bb.push_back(memk(bn, b_rw * E, 0, b_flops * E));
  };
  const double rd = softmax_row_reads(s.seq_kv);
  // The eager paths' softmax in fp32: the cast up, softmax, the cast down, and their backwards.
  auto fp32_softmax = [&] {
    fb.push_back(memk("softmax_to_fp32", e * E, 4 * E, 0));
    bb.push_back(memk("softmax_to_fp32_bwd", 4 * E, e * E, 0));
    fb.push_back(memk("softmax", rd * 4 * E, 4 * E, 5 * E));
    bb.push_back(memk("softmax_bwd", (rd > 1 ? 2 : 1) * 8 * E, 4 * E, 3 * E));
    fb.push_back(memk("softmax_to_bf16", 4 * E, e * E, 0));
    bb.push_back(memk("softmax_to_bf16_bwd", e * E, 4 * E, 0));
  };
  // Megatron's two paths fold the 1/sqrt(d) scale into baddbmm's alpha (Megatron-Core
  // DotProductAttention), so no scale kernel there; the eager PyTorch paths scale separately.
  if (a == Attention::torch_eager) {
    // PyTorch eager attention (validation/train_step.py Layer.attn):
    // sc = matmul(q, k^T) * scale; mask = ones(s, s).triu(1); sc.masked_fill(mask, -inf)
    // out of place (a copy, then the in-place fill); softmax(sc.float()); .to(bf16);
    // matmul(p, v). Each op is its own kernel over the E scores. Backward, reverse order:
    // cast, softmax backward (gradient and output read, one pass when the row fits on chip),
    // cast, masked_fill backward (copy + fill), scale.
    const double mask = s.seq_q * s.seq_kv;   // bool
    fb.push_back(memk("attn_scale", e * E, e * E, E));
    bb.push_back(memk("attn_scale_bwd", e * E, e * E, E));
    fb.push_back(memk("attn_mask_build", mask, mask, 0, 2));   // ones, triu; no backward
    fb.push_back(memk("attn_masked_fill", e * E, e * E, E, 2));
    bb.push_back(memk("attn_masked_fill_bwd", e * E, e * E, E, 2));
    fp32_softmax();
  } else if (a == Attention::hf_eager) {
    // Hugging Face eager_attention_forward (transformers, models/llama/modeling_llama.py):
    // repeat_kv (above); w = matmul(q, k^T) * scaling (its own pointwise kernel);
    // w = w + causal_mask (the additive [b, 1, s, s] bf16 mask, broadcast over heads: one
    // mask element read per score); softmax(w, dim=-1, dtype=float32): ATen's softmax takes
    // its one-kernel half-to-float path for fp16 only, so a bf16 input is first cast to fp32
    // (input_.toType(dtype), aten/src/ATen/native/SoftMax.cpp) and then softmaxed in fp32;
    // .to(bf16); dropout with p = 0 is no kernel; matmul(w, v). Backward: the casts' and
    // the fp32 softmax's backwards, the scale's; the mask has no gradient.
    fb.push_back(memk("attn_scale", e * E, e * E, E));
    bb.push_back(memk("attn_scale_bwd", e * E, e * E, E));
    fb.push_back(memk("attn_mask_add", 2.0 * e * E, e * E, E));
    fp32_softmax();
  } else if (a == Attention::megatron_unfused) {
    // Megatron FusedScaleMaskSoftmax (scaled_upper_triang_masked_softmax, the default
    // masked_softmax_fusion): one kernel, bf16 in and out; backward reads y and dy, writes dx.
    score_op("scale_mask_softmax", "scale_mask_softmax_bwd", 2.0 * e, 5, 3.0 * e, 3);
  } else {
    // Megatron's FusedScaleMaskSoftmax.forward_torch_softmax with softmax in fp32
    // (--no-masked-softmax-fusion): input.float(), masked_fill_ (in place),
    // torch.softmax, .bfloat16(). Forward 28 B/score, backward 32 B/score.
    score_op("softmax_to_fp32", "softmax_to_fp32_bwd", e + 4.0, 0, 4.0 + e, 0);
    score_op("attn_mask", "attn_mask_bwd", 8.0, 1, 8.0, 1);
    score_op("softmax", "softmax_bwd", 8.0, 5, 12.0, 3);
    score_op("softmax_to_bf16", "softmax_to_bf16_bwd", 4.0 + e, 0, e + 4.0, 0);
  }
  if (has_dropout(m)) push(fb, bb, {"attn_dropout", "attn_dropout_bwd", e * E, e * E + E, 2 * E});
  f.insert(f.end(), fb.begin(), fb.end());
  f.push_back(attn_kernel(KernelKind::attention_fwd, "attn_av", s, false, true, av_flops, e * E + v + o));
  // Backward (run order): dV = P^T dO, dP = dO V^T, score-path backward, dQ = dS K, dK = dS^T Q.
  // Appended here in reverse run order.
  b.push_back(attn_kernel(KernelKind::attention_bwd, "attn_dk", s, false, true, qk_flops, e * E + q + k));
  b.push_back(attn_kernel(KernelKind::attention_bwd, "attn_dq", s, false, true, qk_flops, e * E + k + q));
  b.insert(b.end(), bb.begin(), bb.end());
  b.push_back(attn_kernel(KernelKind::attention_bwd, "attn_dp", s, false, true, av_flops, o + v + e * E));
  b.push_back(attn_kernel(KernelKind::attention_bwd, "attn_dv", s, false, true, av_flops, e * E + o + v));
}

}  // namespace

// PyTorch's SDPA MATH backend (aten/src/ATen/native/transformers/attention.cpp,
// _scaled_dot_product_attention_math, torch >= 2.5): bf16 q, k, v are upcast to fp32
// "for accuracy"; q is scaled by sqrt(scale); the causal mask is built as a bool
// ones(s, s).tril() and converted to an fp32 additive mask (0 / -inf); K and V are
// repeated to every query head (enable_gqa) and K^T scaled by sqrt(scale) (a copy);
// attn = matmul in fp32 (CUDA cores: PyTorch's default allow_tf32 = False); attn.add_(mask);
// _safe_softmax = softmax, eq(-inf), all(dim), where (zero for fully masked rows); out =
// matmul(attn, v) in fp32, cast to bf16; the attention weights are cast to bf16 too (the
// function's second output, computed though SDPA returns only the first). Backward through
// autograd: the two fp32 matmuls' gradients, where's backward (a masked copy), the softmax
// backward in fp32; the mask add passes the gradient through. Measured 2x slower than HF
// eager (run 14): the fp32 matmuls on the CUDA cores and ~2x the score bytes (fp32).
void sdpa_math_kernels(const ModelSpec& m, const AttnShape& s, int e, std::vector<Kernel>& f,
                       std::vector<Kernel>& b) {
  const double w = 4;   // fp32 bytes
  const double up = w / e;
  const double q = s.batch * s.seq_q * s.heads * s.dqk * e;
  const double k = s.batch * s.seq_kv * s.kv_heads * s.dqk * e;
  const double v = s.batch * s.seq_kv * s.kv_heads * s.dv * e;
  const double o = s.batch * s.seq_q * s.heads * s.dv * e;
  const double rep = s.kv_heads > 0 && s.kv_heads < s.heads ? s.heads / s.kv_heads : 1.0;
  const double E = s.batch * s.heads * s.seq_q * s.seq_kv;
  const double M = s.seq_q * s.seq_kv;   // one mask element per (query, key)
  const double qk_flops = 2 * s.batch * s.heads * s.seq_q * s.seq_kv * s.dqk;
  const double av_flops = 2 * s.batch * s.heads * s.seq_q * s.seq_kv * s.dv;
  const double rd = softmax_row_reads(s.seq_kv);
  auto fp32_mm = [&](hardware::KernelKind kind, const char* name, double flops, double bytes) {
    Kernel kn = attn_kernel(kind, name, s, false, true, flops, bytes);
    kn.fp32 = true;
    return kn;
  };
  // Forward, in run order.
  f.push_back(memk("q_to_fp32", q, up * q, 0));
  f.push_back(memk("k_to_fp32", k, up * k, 0));
  f.push_back(memk("v_to_fp32", v, up * v, 0));
  f.push_back(memk("q_scale", up * q, up * q, q / e));
  f.push_back(memk("attn_mask_build", M, M, 0, 3));   // ones, tril, logical_not (bool)
  f.push_back(memk("attn_mask_to_fp32", M, w * M, 0));   // where(not mask, -inf, 0)
  f.push_back(memk("k_repeat", up * k, up * k * rep, 0));
  f.push_back(memk("v_repeat", up * v, up * v * rep, 0));
  f.push_back(memk("k_scale", up * k * rep, up * k * rep, k * rep / e));
  f.push_back(fp32_mm(KernelKind::attention_fwd, "attn_qk_fp32", qk_flops, up * (q + k * rep) + w * E));
  f.push_back(memk("attn_mask_add", 2 * w * E, w * E, E));   // in place; mask broadcast over heads
  f.push_back(memk("softmax", rd * w * E, w * E, 5 * E));
  f.push_back(memk("softmax_eq_inf", w * E, E, E));
  f.push_back(memk("softmax_all_rows", E, E / s.seq_kv, E));
  f.push_back(memk("softmax_where", w * E, w * E, 0));
  if (has_dropout(m)) f.push_back(memk("attn_dropout", w * E, w * E + E, 2 * E));
  f.push_back(fp32_mm(KernelKind::attention_fwd, "attn_av_fp32", av_flops, w * E + up * (v * rep + o)));
  f.push_back(memk("out_to_bf16", up * o, o, 0));
  f.push_back(memk("attn_weights_to_bf16", w * E, e * E, 0));
  // Backward, appended in reverse run order (the caller reverses b).
  b.push_back(memk("q_to_fp32_bwd", up * q, q, 0));
  b.push_back(memk("k_to_fp32_bwd", up * k, k, 0));
  b.push_back(memk("v_to_fp32_bwd", up * v, v, 0));
  b.push_back(memk("q_scale_bwd", up * q, up * q, q / e));
  b.push_back(memk("k_repeat_bwd", up * k * rep, up * k, up * k * rep));
  b.push_back(memk("v_repeat_bwd", up * v * rep, up * v, up * v * rep));
  b.push_back(memk("k_scale_bwd", up * k * rep, up * k * rep, k * rep / e));
  b.push_back(fp32_mm(KernelKind::attention_bwd, "attn_dk_fp32", qk_flops, w * E + up * (q + k * rep)));
  b.push_back(fp32_mm(KernelKind::attention_bwd, "attn_dq_fp32", qk_flops, w * E + up * (k * rep + q)));
  b.push_back(memk("softmax_bwd", (rd > 1 ? 2 : 1) * 2 * w * E, w * E, 3 * E));
  b.push_back(memk("softmax_where_bwd", w * E, w * E, 0));
  if (has_dropout(m)) b.push_back(memk("attn_dropout_bwd", w * E + E, w * E, 2 * E));
  b.push_back(fp32_mm(KernelKind::attention_bwd, "attn_dp_fp32", av_flops, up * (o + v * rep) + w * E));
  b.push_back(fp32_mm(KernelKind::attention_bwd, "attn_dv_fp32", av_flops, w * E + up * (o + v * rep)));
  b.push_back(memk("out_to_bf16_bwd", o, up * o, 0));
}

}  // namespace mfusim::models::detail
