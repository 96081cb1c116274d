// The attention core's kernels: FlashAttention, or the materialised score path (Megatron's
// fused and unfused softmax, plain PyTorch eager attention) with its GQA repeats.
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

// Attention core kernels: F appended to f; B appended to b in *forward* order
// (layer_kernels reverses b once at the end, like every other B kernel).
void attention_kernels(const ModelSpec& m, const AttnShape& s, int e, bool flash, bool fused,
                       std::vector<Kernel>& f, std::vector<Kernel>& b, bool eager) {
  const double q = s.batch * s.seq_q * s.heads * s.dqk * e;
  const double k = s.batch * s.seq_kv * s.kv_heads * s.dqk * e;
  const double v = s.batch * s.seq_kv * s.kv_heads * s.dv * e;
  const double o = s.batch * s.seq_q * s.heads * s.dv * e;
  const double lse = s.batch * s.heads * s.seq_q * 4;
  const double qk_flops = 2 * s.batch * s.heads * s.seq_q * s.seq_kv * s.dqk;
  const double av_flops = 2 * s.batch * s.heads * s.seq_q * s.seq_kv * s.dv;
  if (flash) {
    // FlashAttention: Q,K,V read once, O and the softmax log-sum-exp written.
    f.push_back(attn_kernel(KernelKind::attention_fwd, "flash_attn_fwd", s, true, true, qk_flops + av_flops,
                            q + k + v + o + lse));
    // Backward: Q,K,V,O,dO and LSE read; dQ,dK,dV written.
    b.push_back(attn_kernel(KernelKind::attention_bwd, "flash_attn_bwd", s, true, true, 2 * (qk_flops + av_flops),
                            q + k + v + 2 * o + lse + q + k + v));
    return;
  }
  // Materialised scores: E elements of the [b, heads, s_q, s_kv] matrix.
  const double E = s.batch * s.heads * s.seq_q * s.seq_kv;
  // GQA: K and V are repeated to every query head before the matmuls (PyTorch/Hugging Face
  // eager attention: repeat_kv / repeat_interleave; Megatron-Core DotProductAttention:
  // key.repeat_interleave(heads / query_groups)); the backward sums the copies back.
  if (s.kv_heads > 0 && s.kv_heads < s.heads) {
    const double rep = s.heads / s.kv_heads;
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
  // Megatron's two paths fold the 1/sqrt(d) scale into baddbmm's alpha (Megatron-Core
  // DotProductAttention), so no scale kernel there; the eager PyTorch path scales separately.
  if (eager) {
    // PyTorch eager attention (validation/train_step.py Layer.attn, the Hugging Face "eager"
    // path): sc = matmul(q, k^T) * scale; mask = ones(s, s).triu(1); sc.masked_fill(mask, -inf)
    // out of place (a copy, then the in-place fill); softmax(sc.float()); .to(bf16);
    // matmul(p, v). Each op is its own kernel over the E scores. Backward, reverse order:
    // cast, softmax backward (gradient and output read, one pass when the row fits on chip),
    // cast, masked_fill backward (copy + fill), scale.
    const double rd = softmax_row_reads(s.seq_kv);
    const double mask = s.seq_q * s.seq_kv;   // bool
    fb.push_back(memk("attn_scale", e * E, e * E, E));
    bb.push_back(memk("attn_scale_bwd", e * E, e * E, E));
    fb.push_back(memk("attn_mask_build", mask, mask, 0, 2));   // ones, triu; no backward
    fb.push_back(memk("attn_masked_fill", e * E, e * E, E, 2));
    bb.push_back(memk("attn_masked_fill_bwd", e * E, e * E, E, 2));
    fb.push_back(memk("softmax_to_fp32", e * E, 4 * E, 0));
    bb.push_back(memk("softmax_to_fp32_bwd", 4 * E, e * E, 0));
    fb.push_back(memk("softmax", rd * 4 * E, 4 * E, 5 * E));
    bb.push_back(memk("softmax_bwd", (rd > 1 ? 2 : 1) * 8 * E, 4 * E, 3 * E));
    fb.push_back(memk("softmax_to_bf16", 4 * E, e * E, 0));
    bb.push_back(memk("softmax_to_bf16_bwd", e * E, 4 * E, 0));
  } else if (fused) {
    // Megatron FusedScaleMaskSoftmax (scaled_upper_triang_masked_softmax): one
    // kernel, bf16 in and out; backward reads y and dy, writes dx.
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

}  // namespace mfusim::models::detail
