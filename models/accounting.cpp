// Parameter, FLOP, kernel and memory accounting. Formulas and their sources:
// docs/accounting.md. Conventions used throughout:
//  * GELU models follow GPT/Megatron: LayerNorm (weight + bias), linear biases,
//    dropout after attention and MLP (and on attention probabilities).
//  * SwiGLU models follow Llama/Mixtral/DeepSeek: RMSNorm (weight only), no
//    biases, no dropout, RoPE.
//  * FLOPs count a multiply-add as 2; attention counts the full s x s product
//    (Megatron convention, not causal-halved). Kernels carry the same counts;
//    the cost model decides what causal masking or FlashAttention's backward
//    recompute cost in time.
#include "models/accounting.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace mfusim::models {

namespace {

using hardware::Kernel;
using hardware::KernelKind;

bool gpt_style(const ModelSpec& m) { return m.activation == Activation::gelu; }
bool has_dropout(const ModelSpec& m) { return gpt_style(m); }
bool has_rope(const ModelSpec& m) { return !gpt_style(m); }
double gated(const ModelSpec& m) { return m.activation == Activation::swiglu ? 3.0 : 2.0; }

double head_dim(const ModelSpec& m) {
  return static_cast<double>(m.head_dim > 0 ? m.head_dim : m.hidden / m.heads);
}
// Per-head widths of the attention core: query/key and value.
double qk_head_dim(const ModelSpec& m) {
  return m.mla ? static_cast<double>(m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim) : head_dim(m);
}
double v_head_dim(const ModelSpec& m) { return m.mla ? static_cast<double>(m.mla->v_head_dim) : head_dim(m); }
// Heads K and V have in the attention core (MLA: every query head has its own).
double core_kv_heads(const ModelSpec& m) { return m.mla ? m.heads : m.kv_heads; }

// One layer's parameters split by how they are distributed over ranks.
struct ParamParts {
  double tp_sharded = 0;   // column/row-parallel matrices and column biases
  double replicated = 0;   // norms, row-parallel biases, router, MLA down-projections
  double experts = 0;      // routed experts (sharded by tp * ep)
  double experts_active = 0;
  double router = 0;       // included in replicated
  double total() const { return tp_sharded + replicated + experts; }
  double active() const { return tp_sharded + replicated + experts_active; }
};

ParamParts layer_parts(const ModelSpec& m, int layer) {
  const double h = static_cast<double>(m.hidden);
  const double a = m.heads;
  ParamParts p;
  // attention
  if (m.mla) {
    const auto& l = *m.mla;
    const double qk = qk_head_dim(m);
    if (l.q_lora_rank > 0) {
      p.replicated += h * l.q_lora_rank + l.q_lora_rank;             // q down + q norm
      p.tp_sharded += static_cast<double>(l.q_lora_rank) * a * qk;   // q up
    } else {
      p.tp_sharded += h * a * qk;
    }
    p.replicated += h * (l.kv_lora_rank + l.qk_rope_head_dim) + l.kv_lora_rank;   // kv down (+rope key) + kv norm
    p.tp_sharded += static_cast<double>(l.kv_lora_rank) * a * (l.qk_nope_head_dim + l.v_head_dim);
    p.tp_sharded += a * l.v_head_dim * h;                                          // o
  } else {
    const double d = head_dim(m), g = m.kv_heads;
    p.tp_sharded += h * a * d + 2 * h * g * d + a * d * h;
    if (gpt_style(m)) {
      p.tp_sharded += a * d + 2 * g * d;   // qkv bias (column-parallel)
      p.replicated += h;                   // o bias (row-parallel)
    }
  }
  // norms: two per layer
  p.replicated += gpt_style(m) ? 4 * h : 2 * h;
  // MLP
  if (m.is_moe_layer(layer)) {
    const auto& e = *m.moe;
    const double expert = 3.0 * h * static_cast<double>(e.expert_ffn_hidden);   // experts are gated
    p.router = static_cast<double>(e.experts) * h;
    p.replicated += p.router;
    p.tp_sharded += e.shared_experts * expert;
    p.experts = e.experts * expert;
    p.experts_active = e.top_k * expert;
  } else {
    const double f = static_cast<double>(m.ffn_hidden);
    p.tp_sharded += gated(m) * h * f;
    if (gpt_style(m)) {
      p.tp_sharded += f;   // fc1 bias
      p.replicated += h;   // fc2 bias
    }
  }
  return p;
}

// Forward FLOPs per token of one layer.
struct TokenFlops {
  double matmul = 0;      // every GEMM, router included
  double router = 0;      // the router GEMM alone
  double attention = 0;   // QK^T and attn*V over the full sequence
};

TokenFlops layer_token_flops(const ModelSpec& m, int layer, double seq) {
  const double h = static_cast<double>(m.hidden);
  const double a = m.heads;
  TokenFlops t;
  if (m.mla) {
    const auto& l = *m.mla;
    const double qk = qk_head_dim(m);
    const double q = l.q_lora_rank > 0 ? h * l.q_lora_rank + static_cast<double>(l.q_lora_rank) * a * qk : h * a * qk;
    const double kv = h * (l.kv_lora_rank + l.qk_rope_head_dim) +
                      static_cast<double>(l.kv_lora_rank) * a * (l.qk_nope_head_dim + l.v_head_dim);
    t.matmul += 2 * (q + kv + a * l.v_head_dim * h);
  } else {
    const double d = head_dim(m), g = m.kv_heads;
    t.matmul += 2 * (h * a * d + 2 * h * g * d + a * d * h);
  }
  t.attention = 2 * seq * a * (qk_head_dim(m) + v_head_dim(m));
  if (m.is_moe_layer(layer)) {
    const auto& e = *m.moe;
    const double expert = 2 * 3.0 * h * static_cast<double>(e.expert_ffn_hidden);
    t.router = 2 * h * e.experts;
    t.matmul += t.router + (e.top_k + e.shared_experts) * expert;
  } else {
    t.matmul += 2 * gated(m) * h * static_cast<double>(m.ffn_hidden);
  }
  return t;
}

// ---- kernel builders ----------------------------------------------------------
Kernel gemm(const char* name, double m, double n, double k, int e, int count = 1) {
  Kernel g;
  g.kind = KernelKind::gemm;
  g.name = name;
  g.m = std::llround(m);
  g.n = std::llround(n);
  g.k = std::llround(k);
  g.flops = 2 * m * n * k;
  g.bytes = e * (m * k + k * n + m * n);
  g.count = count;
  return g;
}

Kernel memk(const char* name, double read, double write, double flops, int count = 1) {
  Kernel k;
  k.kind = KernelKind::memory;
  k.name = name;
  k.bytes = read + write;
  k.flops = flops;
  k.count = count;
  return k;
}

struct Elementwise {        // one memory-bound op in F with its B counterpart
  const char* f_name;
  const char* b_name;
  double read, write, flops;
  int count = 1;
};
void push(std::vector<Kernel>& f, std::vector<Kernel>& b, const Elementwise& op) {
  f.push_back(memk(op.f_name, op.read, op.write, op.flops, op.count));
  // backward: dy (size of the output) + saved input in, dx (size of the input) out
  b.push_back(memk(op.b_name, op.write + op.read, op.read, 2 * op.flops, op.count));
}

// Norm over `n` tokens of width h. Fused (Apex/TE): one kernel. Unfused
// RMSNorm (Hugging Face's Python RMSNorm, fp32 inside): pow, mean, rsqrt, mul,
// mul-by-weight. Unfused LayerNorm is torch.nn.LayerNorm: one native kernel.
void norm_kernels(const ModelSpec& m, double n, double h, int e, bool fused, const char* tag,
                  const char* tag_bwd, std::vector<Kernel>& f, std::vector<Kernel>& b) {
  const double x = n * h;
  if (fused || gpt_style(m)) {
    push(f, b, {tag, tag_bwd, e * x + e * h, e * x, 5 * x});
    return;
  }
  push(f, b, {"rmsnorm_pow", "rmsnorm_pow_bwd", e * x, 4 * x, x});
  push(f, b, {"rmsnorm_mean", "rmsnorm_mean_bwd", 4 * x, 4 * n, x});
  push(f, b, {"rmsnorm_rsqrt", "rmsnorm_rsqrt_bwd", 4 * n, 4 * n, n});
  push(f, b, {"rmsnorm_mul", "rmsnorm_mul_bwd", e * x + 4 * n, 4 * x, x});
  push(f, b, {"rmsnorm_weight", "rmsnorm_weight_bwd", 4 * x + e * h, e * x, x});
}

// Residual branch end: GPT bias + dropout + residual add; Llama residual add.
void residual_kernels(const ModelSpec& m, double n, double h, int e, bool fused,
                      std::vector<Kernel>& f, std::vector<Kernel>& b) {
  const double x = n * h;
  if (!has_dropout(m)) {
    push(f, b, {"residual_add", "residual_add_bwd", 2 * e * x, e * x, x});
    return;
  }
  if (fused) {
    push(f, b, {"bias_dropout_add", "bias_dropout_add_bwd", 2 * e * x + e * h, e * x + x, 3 * x});
    return;
  }
  push(f, b, {"bias_add", "bias_add_bwd", e * x + e * h, e * x, x});
  push(f, b, {"dropout", "dropout_bwd", e * x, e * x + x, 2 * x});
  push(f, b, {"residual_add", "residual_add_bwd", 2 * e * x, e * x, x});
}

// fp32-autocast (plain PyTorch AMP over fp32 parameters, docs/fidelity.md): the embedding
// output is fp32 and every residual add keeps fp32 (fp32 + bf16 -> fp32 by type promotion),
// so the residual stream, the norms' inputs and outputs are fp32; each GEMM that reads a
// norm output casts it to bf16 first (autocast's cached_cast of the input of F.linear).
// validation/train_step.py Layer.forward: x = x + self.attn(self.n1(x)); x + self.down(...).
// Forward per block: norm (fp32 in, fp32 out), cast to bf16; ...; residual add fp32 + bf16.
// Backward (reverse): the add passes the fp32 gradient to x and casts it to bf16 for the
// branch; the branch's input gradient (bf16) is cast back to fp32 through the cast, then the
// norm backward (fp32), then autograd accumulates the norm path's gradient with the residual
// gradient (one fp32 add). H200 profile (results/run2/h200_step_profile.txt): the
// vectorized bfloat16_copy, unrolled direct_copy and CUDAFunctor_add<float> kernels.
void fp32_norm_kernels(const ModelSpec& m, double n, double h, bool fused, bool accumulate, const char* tag,
                       const char* tag_bwd, std::vector<Kernel>& f, std::vector<Kernel>& b) {
  using hardware::MemFamily;
  const double x = n * h;
  auto fam = [](Kernel k, MemFamily fm) { k.family = fm; return k; };
  if (accumulate) b.push_back(fam(memk("residual_grad_accumulate", 8 * x, 4 * x, x), MemFamily::add_f32));
  if (fused || gpt_style(m)) {
    f.push_back(fam(memk(tag, 4 * x + 4 * h, 4 * x, 5 * x), MemFamily::norm_fwd));
    b.push_back(fam(memk(tag_bwd, 8 * x + 4 * h, 4 * x + 4 * h, 8 * x), MemFamily::norm_bwd));
  } else {
    // Hugging Face RMSNorm on an fp32 input: x.float() and .to(x.dtype) are no-ops, so
    // pow, mean, rsqrt, mul, mul-by-weight, all fp32.
    f.push_back(memk("rmsnorm_pow", 4 * x, 4 * x, x));
    f.push_back(memk("rmsnorm_mean", 4 * x, 4 * n, x));
    f.push_back(memk("rmsnorm_rsqrt", 4 * n, 4 * n, n));
    f.push_back(memk("rmsnorm_mul", 4 * x + 4 * n, 4 * x, x));
    f.push_back(memk("rmsnorm_weight", 4 * x + 4 * h, 4 * x, x));
    // Its autograd backward, kernel by kernel as the H200 trace lists it (run 8,
    // validation/results/run8/kernel_trace.csv.gz, s1.3b seq 4096 fused 0: 12 kernels per norm,
    // 254 us, where the old list had 5): y = (x * r) * w with r = rsqrt(mean(x^2) + eps):
    // dY * w and dw = sum_tokens(dY * x r) (MulBackward0 of the weight); d(xr) * r and
    // dr = sum_h(d(xr) * x); rsqrt / add-eps backward on [n] (pow, mul, mul); mean backward
    // (expand and divide by h); pow backward (2 x, times the gradient); the two paths of dx
    // accumulated (add_). Pushed in forward order (layer_kernels reverses b).
    std::vector<Kernel> nb = {
        memk("rmsnorm_weight_bwd", 4 * x + 4 * h, 4 * x, x),        // dY * w
        memk("rmsnorm_wgrad_mul", 8 * x, 4 * x, x),                 // dY * (x r)
        memk("rmsnorm_wgrad_sum", 4 * x, 4 * h, x),                 // sum over tokens
        memk("rmsnorm_mul_bwd", 4 * x + 4 * n, 4 * x, x),           // d(xr) * r
        memk("rmsnorm_rgrad_mul", 8 * x, 4 * x, x),                 // d(xr) * x
        memk("rmsnorm_rgrad_sum", 4 * x, 4 * n, x),                 // sum over h
        memk("rmsnorm_rsqrt_bwd", 8 * n, 4 * n, n, 3),              // pow, mul, mul on [n]
        memk("rmsnorm_mean_bwd", 4 * n, 4 * x, x),                  // expand / h
        memk("rmsnorm_pow_bwd", 4 * x, 4 * x, x),                   // 2 x
        memk("rmsnorm_pow_grad_mul", 8 * x, 4 * x, x),              // times the gradient
        memk("rmsnorm_dx_accumulate", 8 * x, 4 * x, x)};            // the two paths of dx
    for (auto it = nb.rbegin(); it != nb.rend(); ++it) b.push_back(*it);
  }
  f.push_back(fam(memk("norm_out_to_bf16", 4 * x, 2 * x, 0), MemFamily::cast_down));
  b.push_back(fam(memk("norm_out_to_bf16_bwd", 2 * x, 4 * x, 0), MemFamily::cast_up));
}

void fp32_residual_kernels(double n, double h, std::vector<Kernel>& f, std::vector<Kernel>& b) {
  const double x = n * h;
  Kernel add = memk("residual_add", 4 * x + 2 * x, 4 * x, x);
  add.family = hardware::MemFamily::add_mixed;
  Kernel cast = memk("residual_add_bwd", 4 * x, 2 * x, 0);   // the branch's gradient to bf16
  cast.family = hardware::MemFamily::cast_down;
  f.push_back(add);
  b.push_back(cast);
}

// Activation over `n` tokens of width f (per rank).
void activation_kernels(const ModelSpec& m, double n, double f_width, int e, bool fused,
                        std::vector<Kernel>& f, std::vector<Kernel>& b, int count = 1) {
  const double x = n * f_width;
  if (m.activation == Activation::swiglu) {
    if (fused) {
      push(f, b, {"swiglu", "swiglu_bwd", 2 * e * x, e * x, 5 * x, count});
    } else {
      push(f, b, {"silu", "silu_bwd", e * x, e * x, 4 * x, count});
      push(f, b, {"swiglu_mul", "swiglu_mul_bwd", 2 * e * x, e * x, x, count});
    }
    return;
  }
  if (fused) {
    push(f, b, {"bias_gelu", "bias_gelu_bwd", e * x + e * f_width, e * x, 8 * x, count});
  } else {
    push(f, b, {"bias_add", "bias_add_bwd", e * x + e * f_width, e * x, x, count});
    push(f, b, {"gelu", "gelu_bwd", e * x, e * x, 8 * x, count});
  }
}

// RoPE on a [n, width] tensor. Fused (Apex/TE): one kernel. Unfused (Hugging
// Face apply_rotary_pos_emb): x*cos, neg(half), cat, rotate*sin, add.
void rope_kernels(double n, double width, int e, bool fused, const char* tag, const char* tag_bwd,
                  std::vector<Kernel>& f, std::vector<Kernel>& b) {
  const double x = n * width;
  if (fused) {
    push(f, b, {tag, tag_bwd, e * x, e * x, 3 * x});
    return;
  }
  push(f, b, {"rope_mul_cos", "rope_mul_cos_bwd", e * x, e * x, x});
  push(f, b, {"rope_neg", "rope_neg_bwd", e * x / 2, e * x / 2, x / 2});
  push(f, b, {"rope_cat", "rope_cat_bwd", e * x, e * x, 0});
  push(f, b, {"rope_mul_sin", "rope_mul_sin_bwd", e * x, e * x, x});
  push(f, b, {"rope_add", "rope_add_bwd", 2 * e * x, e * x, x});
}

struct AttnShape {
  double batch, heads, kv_heads, seq_q, seq_kv, dqk, dv;
};

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

// Attention core kernels: F appended to f; B appended to b in *forward* order
// (layer_kernels reverses b once at the end, like every other B kernel).
// Times a softmax over rows of `row` fp32 elements reads its input: PyTorch's
// cunn_SoftMaxForward (aten/src/ATen/native/cuda/SoftMax.cu, host_softmax) keeps a row in
// shared memory when it fits (cunn_SoftMaxForwardSmem / Reg: one read); a longer row (the
// vocabulary of a cross entropy) is read once for the max, once for the sum of exponentials
// and once for the write pass. Shared memory per block: 48 KiB (the kernel's static limit).
double softmax_row_reads(double row) { return row * 4 <= 48.0 * 1024 ? 1.0 : 3.0; }

void attention_kernels(const ModelSpec& m, const AttnShape& s, int e, bool flash, bool fused,
                       std::vector<Kernel>& f, std::vector<Kernel>& b, bool eager = false) {
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

// Adds the F GEMM, its dgrad (B) and wgrad (W). Forward y[m, out] = x[m, in] W.
void linear(const char* name, const char* dname, const char* wname, double tokens, double in, double out, int e,
            LayerKernels& lk, int count = 1) {
  lk.f.push_back(gemm(name, tokens, out, in, e, count));
  lk.b.push_back(gemm(dname, tokens, in, out, e, count));
  lk.w.push_back(gemm(wname, in, out, tokens, e, count));
}

double kv_heads_per_rank(double kv, int tp) { return std::max(1.0, kv / tp); }

// torch.autocast over fp32 parameters (docs/fidelity.md): F.linear is on autocast's
// lower-precision list (aten/src/ATen/autocast_mode.cpp), so each forward first casts its fp32
// weight to bf16 (cached_cast -> _to_copy: one copy kernel, 4 bytes read and 2 written per
// parameter; the cache lives only inside the autocast region, so a recompute casts again);
// the weight gradient, computed in bf16, flows back through that cast (ToCopyBackward0) into
// the fp32 .grad: 2 bytes read, 4 written. Casts are inserted before every weight GEMM of F
// and after every weight-gradient GEMM of W; `marks` are F indices shifted accordingly.
// Plain PyTorch has no Apex/TE fused SwiGLU or RoPE kernel: with fused_kernels the
// elementwise chains are torch.compile'd regions (validation/train_step.py fused_fns), each
// call (forward, and its backward through AOTAutograd) one compiled call on the host.
void mark_compiled(std::vector<Kernel>& ks) {
  for (Kernel& k : ks) {
    const std::string n = k.name;
    if (n == "swiglu" || n == "swiglu_bwd" || n == "rope_q" || n == "rope_q_bwd" || n == "rope_k" || n == "rope_k_bwd")
      k.compiled = true;
  }
}

// Eager PyTorch kernels by achieved-bandwidth family (hardware::MemFamily; measured by
// validation/kernel_bw.py, fitted into the calibration's [memory_families]). Only the plain
// PyTorch recipe (fp32-autocast) is tagged; Megatron's fused kernels stay generic. Kernels
// built with a family (the fp32 residual stream) keep it; untagged ones are matched by name.
void tag_eager_families(std::vector<Kernel>& ks) {
  using hardware::MemFamily;
  for (Kernel& k : ks) {
    if (k.kind != KernelKind::memory || k.family != MemFamily::generic) continue;
    const std::string n = k.name;
    if (n == "weight_cast" || n == "softmax_to_bf16" || n == "softmax_to_fp32_bwd" || n == "logits_to_fp32_bwd")
      k.family = MemFamily::cast_down;
    else if (n == "wgrad_to_fp32" || n == "softmax_to_fp32" || n == "softmax_to_bf16_bwd" || n == "logits_to_fp32")
      k.family = MemFamily::cast_up;
    else if (n == "attn_masked_fill" || n == "attn_masked_fill_bwd")
      k.family = MemFamily::masked_fill;
    else if (n == "k_repeat" || n == "v_repeat")
      k.family = MemFamily::repeat;
    else if (n == "softmax") k.family = MemFamily::softmax_fwd;
    else if (n == "softmax_bwd") k.family = MemFamily::softmax_bwd;
    else if (n == "log_softmax" || n == "log_softmax_bwd") k.family = MemFamily::log_softmax;
    else if (n == "nll_loss_bwd") k.family = MemFamily::fill;
    else if (n == "attn_scale" || n == "attn_scale_bwd")
      k.family = MemFamily::eltwise;
    // RoPE and SwiGLU (run 8 kernel trace): eager pieces work on strided views (q/k transposed
    // to [b, heads, s, d], gate/up chunks of one GEMM output); fused = the Triton kernels of
    // torch.compile(dynamic=True). Each has its own measured bandwidth.
    else if (n.rfind("rope", 0) == 0) {
      const bool bwd = n.size() > 4 && n.compare(n.size() - 4, 4, "_bwd") == 0;
      k.family = k.compiled ? (bwd ? MemFamily::rope_compiled_bwd : MemFamily::rope_compiled)
                            : (bwd ? MemFamily::rope_eager_bwd : MemFamily::rope_eager);
    } else if (n.rfind("silu", 0) == 0 || n.rfind("swiglu", 0) == 0) {
      const bool bwd = n.size() > 4 && n.compare(n.size() - 4, 4, "_bwd") == 0;
      k.family = k.compiled ? (bwd ? MemFamily::swiglu_compiled_bwd : MemFamily::swiglu_compiled)
                            : (bwd ? MemFamily::swiglu_eager_bwd : MemFamily::swiglu_eager);
    }
  }
}
void tag_eager_families(LayerKernels& lk) {
  tag_eager_families(lk.f);
  tag_eager_families(lk.b);
  tag_eager_families(lk.w);
}

// B and W kernels are issued by autograd's backward engine (host cost host_backward_overhead).
void mark_autograd(LayerKernels& lk) {
  for (Kernel& k : lk.b) k.autograd = true;
  for (Kernel& k : lk.w) k.autograd = true;
}

void add_autocast_casts(LayerKernels& lk, std::initializer_list<std::size_t*> marks) {
  std::vector<Kernel> f;
  std::vector<std::size_t> before(lk.f.size() + 1, 0);   // casts inserted before index i
  for (std::size_t i = 0; i < lk.f.size(); ++i) {
    const Kernel& g = lk.f[i];
    before[i] = f.size() - i;
    if (g.kind == KernelKind::gemm) {
      const double params = static_cast<double>(g.n) * static_cast<double>(g.k);   // y[m, n] = x[m, k] W[k, n]
      f.push_back(memk("weight_cast", 4 * params, 2 * params, 0, g.count));
    }
    f.push_back(g);
  }
  before[lk.f.size()] = f.size() - lk.f.size();
  for (std::size_t* idx : marks) *idx += before[std::min(*idx, lk.f.size())];
  lk.f = std::move(f);
  std::vector<Kernel> w;
  for (const Kernel& g : lk.w) {
    w.push_back(g);
    if (g.kind == KernelKind::gemm) {
      const double params = static_cast<double>(g.m) * static_cast<double>(g.n);   // dW[in, out] = x^T dy
      w.push_back(memk("wgrad_to_fp32", 2 * params, 4 * params, 0, g.count));
    }
  }
  lk.w = std::move(w);
}

}  // namespace

// ---- parameters ---------------------------------------------------------------
double layer_params(const ModelSpec& m, int layer) { return layer_parts(m, layer).total(); }
double layer_params_active(const ModelSpec& m, int layer) { return layer_parts(m, layer).active(); }

ParamCount count_params(const ModelSpec& m) {
  ParamCount c;
  const double h = static_cast<double>(m.hidden);
  c.embedding = static_cast<double>(m.vocab) * h;
  c.lm_head = m.tied_embeddings ? 0 : c.embedding;
  c.final_norm = gpt_style(m) ? 2 * h : h;
  if (!m.is_moe() || m.moe->dense_layers > 0) c.per_layer_dense = layer_params(m, 0);
  if (m.is_moe()) {
    c.per_layer_moe = layer_params(m, m.moe->dense_layers);
    c.per_layer_moe_active = layer_params_active(m, m.moe->dense_layers);
  }
  const int dense = m.is_moe() ? std::min(m.moe->dense_layers, m.layers) : m.layers;
  const int moe = m.layers - dense;
  const double shared = c.embedding + c.lm_head + c.final_norm;
  c.total = shared + dense * c.per_layer_dense + moe * c.per_layer_moe;
  c.activated = shared + dense * c.per_layer_dense + moe * c.per_layer_moe_active;
  return c;
}

// ---- FLOPs --------------------------------------------------------------------
LayerFlops layer_flops(const ModelSpec& m, int layer, std::int64_t micro_batch, std::int64_t seq_len) {
  const double tokens = static_cast<double>(micro_batch) * static_cast<double>(seq_len);
  const TokenFlops t = layer_token_flops(m, layer, static_cast<double>(seq_len));
  LayerFlops l;
  l.f = {tokens * t.matmul, tokens * t.attention};
  l.b = {tokens * t.matmul, 2 * tokens * t.attention};   // dgrad GEMMs; dQ,dK,dV,dP
  l.w = {tokens * t.matmul, 0};                          // wgrad GEMMs
  return l;
}

double logits_flops_forward(const ModelSpec& m, std::int64_t tokens) {
  return 2.0 * static_cast<double>(tokens) * static_cast<double>(m.hidden) * static_cast<double>(m.vocab);
}

double model_flops_per_token(const ModelSpec& m, std::int64_t seq_len, bool with_attention) {
  if (!with_attention) return 6.0 * count_params(m).activated;
  double per_token = 3.0 * logits_flops_forward(m, 1);
  for (int i = 0; i < m.layers; ++i) {
    const TokenFlops t = layer_token_flops(m, i, static_cast<double>(seq_len));
    per_token += 3.0 * (t.matmul - t.router + t.attention);   // Megatron-Core leaves the router out
  }
  return per_token;
}

double recompute_flops_per_token(const ModelSpec& m, std::int64_t seq_len, Recompute r) {
  double extra = 0;
  if (r == Recompute::none) return 0;
  for (int i = 0; i < m.layers; ++i) {
    const TokenFlops t = layer_token_flops(m, i, static_cast<double>(seq_len));
    extra += r == Recompute::selective ? t.attention : t.matmul + t.attention;
  }
  return extra;
}

// ---- kernels ------------------------------------------------------------------
RankShape rank_shape(const config::Scenario& s) {
  RankShape sh;
  sh.tp = s.parallel.tp;
  sh.cp = s.parallel.cp;
  sh.ep = s.parallel.ep;
  sh.sequence_parallel = s.parallel.sequence_parallel;
  sh.micro_batch = s.training.micro_batch;
  sh.seq_len = s.training.seq_len;
  sh.flash_attention = s.features.flash_attention;
  sh.fused_kernels = s.features.fused_kernels;
  sh.recompute = s.features.recompute;
  sh.bytes_per_element = 2;
  sh.fp32_autocast = s.training.master_weights == config::MasterWeights::fp32_autocast;
  return sh;
}

LayerKernels layer_kernels(const ModelSpec& m, int layer, const RankShape& r) {
  LayerKernels lk;
  const int e = r.bytes_per_element, tp = r.tp;
  const bool fused = r.fused_kernels;
  const double h = static_cast<double>(m.hidden);
  const double T = static_cast<double>(r.micro_batch) * static_cast<double>(r.seq_len) / r.cp;   // GEMM tokens
  const double Tn = r.sequence_parallel ? T / tp : T;   // tokens of norms and residual adds
  const double heads = static_cast<double>(m.heads) / tp;
  const double kv = m.mla ? heads : kv_heads_per_rank(m.kv_heads, tp);
  const double dqk = qk_head_dim(m), dv = v_head_dim(m);

  const bool f32 = r.fp32_autocast;   // fp32 residual stream (fp32_norm_kernels)
  auto block_norm = [&](std::vector<Kernel>& f, std::vector<Kernel>& b) {
    const char* tag = gpt_style(m) ? "layernorm" : "rmsnorm";
    const char* tag_bwd = gpt_style(m) ? "layernorm_bwd" : "rmsnorm_bwd";
    if (f32) fp32_norm_kernels(m, Tn, h, fused, true, tag, tag_bwd, f, b);
    else norm_kernels(m, Tn, h, e, fused, tag, tag_bwd, f, b);
  };
  auto block_residual = [&](std::vector<Kernel>& f, std::vector<Kernel>& b) {
    if (f32 && !has_dropout(m)) fp32_residual_kernels(Tn, h, f, b);
    else residual_kernels(m, Tn, h, e, fused, f, b);
  };

  // --- attention block ---
  block_norm(lk.f, lk.b);
  if (m.mla) {
    const auto& l = *m.mla;
    const double rope = static_cast<double>(l.qk_rope_head_dim);
    if (l.q_lora_rank > 0) {
      const double ql = static_cast<double>(l.q_lora_rank);
      linear("q_down", "q_down_dgrad", "q_down_wgrad", T, h, ql, e, lk);   // duplicated over tp
      norm_kernels(m, T, ql, e, fused, "q_norm", "q_norm_bwd", lk.f, lk.b);
      linear("q_up", "q_up_dgrad", "q_up_wgrad", T, ql, heads * dqk, e, lk);
    } else {
      linear("q_proj", "q_proj_dgrad", "q_proj_wgrad", T, h, heads * dqk, e, lk);
    }
    const double kvl = static_cast<double>(l.kv_lora_rank);
    linear("kv_down", "kv_down_dgrad", "kv_down_wgrad", T, h, kvl + rope, e, lk);   // duplicated over tp
    norm_kernels(m, T, kvl, e, fused, "kv_norm", "kv_norm_bwd", lk.f, lk.b);
    linear("kv_up", "kv_up_dgrad", "kv_up_wgrad", T, kvl, heads * (l.qk_nope_head_dim + l.v_head_dim), e, lk);
    rope_kernels(T, heads * rope, e, fused, "rope_q", "rope_q_bwd", lk.f, lk.b);
    rope_kernels(T, rope, e, fused, "rope_k", "rope_k_bwd", lk.f, lk.b);
  } else {
    linear("qkv", "qkv_dgrad", "qkv_wgrad", T, h, (heads + 2 * kv) * dqk, e, lk);
    // Plain PyTorch splits the one QKV output into q, k, v views; autograd's SplitBackward
    // concatenates dq, dk, dv into one gradient before the dgrad (run 8 trace: one
    // CatArrayBatchedCopy per layer, 15-16 us at s1.3b seq 4096, fused 0 and 1).
    if (r.fp32_autocast) lk.b.push_back(memk("qkv_split_bwd", e * T * (heads + 2 * kv) * dqk, e * T * (heads + 2 * kv) * dqk, 0));
    if (has_rope(m)) {
      rope_kernels(T, heads * dqk, e, fused, "rope_q", "rope_q_bwd", lk.f, lk.b);
      rope_kernels(T, kv * dqk, e, fused, "rope_k", "rope_k_bwd", lk.f, lk.b);
    }
  }
  std::size_t core_begin = lk.f.size();
  const AttnShape as{static_cast<double>(r.micro_batch), heads, kv, static_cast<double>(r.seq_len) / r.cp,
                     static_cast<double>(r.seq_len), dqk, dv};
  attention_kernels(m, as, e, r.flash_attention, fused, lk.f, lk.b, r.fp32_autocast);
  std::size_t core_end = lk.f.size();
  linear("attn_out", "attn_out_dgrad", "attn_out_wgrad", T, heads * dv, h, e, lk);
  block_residual(lk.f, lk.b);

  // --- MLP block ---
  lk.f_mlp = lk.f.size();
  const std::size_t b_mlp_fwd = lk.b.size();
  std::size_t bx0 = 0, bx1 = 0;
  block_norm(lk.f, lk.b);
  if (m.is_moe_layer(layer)) {
    const auto& mo = *m.moe;
    const double E = mo.experts, k = mo.top_k, fe = static_cast<double>(mo.expert_ffn_hidden);
    const double per_rank = E / r.ep;
    // Router on the rank's own tokens; top-k; permutation into expert order.
    linear("router", "router_dgrad", "router_wgrad", Tn, h, E, e, lk);
    push(lk.f, lk.b, {"router_topk", "router_topk_bwd", 4 * Tn * E, 12 * Tn * k, Tn * E});
    push(lk.f, lk.b, {"moe_permute", "moe_unpermute_grad", e * Tn * h, e * Tn * k * h, 0});
    // Tokens one expert sees on this rank: the tp group's T tokens of each of
    // the ep ranks, top_k copies, spread over all experts (balanced routing).
    const double m_e = T * r.ep * k / E;
    const int groups = std::max(1, static_cast<int>(std::lround(per_rank)));
    lk.f_experts = lk.f.size();
    bx0 = lk.b.size();
    linear("expert_fc1", "expert_fc1_dgrad", "expert_fc1_wgrad", m_e, h, 2 * fe / tp, e, lk, groups);
    activation_kernels(m, m_e * groups, fe / tp, e, fused, lk.f, lk.b);
    linear("expert_fc2", "expert_fc2_dgrad", "expert_fc2_wgrad", m_e, fe / tp, h, e, lk, groups);
    lk.f_experts_end = lk.f.size();
    bx1 = lk.b.size();
    push(lk.f, lk.b, {"moe_unpermute", "moe_permute_grad", e * Tn * k * h + 4 * Tn * k, e * Tn * h, Tn * k * h});
    if (mo.shared_experts > 0) {
      const double fs = mo.shared_experts * fe / tp;
      linear("shared_fc1", "shared_fc1_dgrad", "shared_fc1_wgrad", T, h, 2 * fs, e, lk);
      activation_kernels(m, T, fs, e, fused, lk.f, lk.b);
      linear("shared_fc2", "shared_fc2_dgrad", "shared_fc2_wgrad", T, fs, h, e, lk);
    }
  } else {
    const double f = static_cast<double>(m.ffn_hidden) / tp;
    const double up = m.activation == Activation::swiglu ? 2 * f : f;
    linear("mlp_up", "mlp_up_dgrad", "mlp_up_wgrad", T, h, up, e, lk);
    // Gate and up are chunks of one GEMM output: ChunkBackward concatenates their gradients
    // (run 8 trace: 43-45 us per layer at s1.3b seq 4096).
    if (r.fp32_autocast && m.activation == Activation::swiglu)
      lk.b.push_back(memk("mlp_up_chunk_bwd", e * T * up, e * T * up, 0));
    activation_kernels(m, T, f, e, fused, lk.f, lk.b);
    linear("mlp_down", "mlp_down_dgrad", "mlp_down_wgrad", T, f, h, e, lk);
  }
  block_residual(lk.f, lk.b);

  std::reverse(lk.b.begin(), lk.b.end());   // built in F order; B runs in reverse
  lk.b_attn = lk.b.size() - b_mlp_fwd;
  if (bx1 > bx0) {
    lk.b_experts = lk.b.size() - bx1;
    lk.b_experts_end = lk.b.size() - bx0;
  }

  if (r.fp32_autocast) {
    add_autocast_casts(lk, {&lk.f_mlp, &lk.f_experts, &lk.f_experts_end, &core_begin, &core_end});
    if (fused) {
      mark_compiled(lk.f);
      mark_compiled(lk.b);
    }
    tag_eager_families(lk);
  }

  mark_autograd(lk);
  if (r.recompute == Recompute::full) {
    lk.r = lk.f;
  } else if (r.recompute == Recompute::selective) {
    lk.r.assign(lk.f.begin() + static_cast<std::ptrdiff_t>(core_begin),
                lk.f.begin() + static_cast<std::ptrdiff_t>(core_end));
  }
  return lk;
}

LayerKernels embedding_kernels(const ModelSpec& m, const RankShape& r) {
  LayerKernels lk;
  const int e = r.bytes_per_element;
  const double h = static_cast<double>(m.hidden);
  const double T = static_cast<double>(r.micro_batch) * static_cast<double>(r.seq_len) / r.cp;
  const double Tn = r.sequence_parallel ? T / r.tp : T;
  // Vocab-parallel lookup: gather rows, write [T, h] (reduced over tp). fp32-autocast: the
  // table is fp32 (nn.Embedding is not on autocast's list), so the output and the residual
  // stream's gradient arriving at it are fp32.
  const double ea = r.fp32_autocast ? 4.0 : e;
  lk.f.push_back(memk("embedding_lookup", ea * T * h + 8 * T, ea * T * h, 0));
  if (has_dropout(m)) lk.f.push_back(memk("embedding_dropout", e * Tn * h, e * Tn * h + Tn * h, 2 * Tn * h));
  // Backward: scatter-add the output gradient into the (fp32) embedding gradient.
  lk.w.push_back(memk("embedding_grad", ea * T * h + 8 * T, 4 * T * h, T * h));
  mark_autograd(lk);
  return lk;
}

LayerKernels head_kernels(const ModelSpec& m, const RankShape& r) {
  LayerKernels lk;
  const int e = r.bytes_per_element, tp = r.tp;
  const double h = static_cast<double>(m.hidden);
  const double T = static_cast<double>(r.micro_batch) * static_cast<double>(r.seq_len) / r.cp;
  const double Tn = r.sequence_parallel ? T / tp : T;
  const double v = static_cast<double>(m.vocab) / tp;
  if (r.fp32_autocast)   // the last layer's fp32 output: fp32 norm, cast for the LM head
    fp32_norm_kernels(m, Tn, h, r.fused_kernels, false, gpt_style(m) ? "final_layernorm" : "final_rmsnorm",
                      gpt_style(m) ? "final_layernorm_bwd" : "final_rmsnorm_bwd", lk.f, lk.b);
  else
    norm_kernels(m, Tn, h, e, r.fused_kernels, gpt_style(m) ? "final_layernorm" : "final_rmsnorm",
                 gpt_style(m) ? "final_layernorm_bwd" : "final_rmsnorm_bwd", lk.f, lk.b);
  linear("lm_head", "lm_head_dgrad", "lm_head_wgrad", T, h, v, e, lk);
  if (r.fp32_autocast) {
    // torch: F.cross_entropy(logits.float(), targets) over the full [T, V] logits
    // (validation/train_step.py Model.forward): the .float() copy, log_softmax in fp32
    // (a row of V > 12288 fp32 does not fit in shared memory: read three times, written
    // once, softmax_row_reads), nll_loss. Backward: nll_loss_backward fills the [T, V] fp32
    // gradient with zeros and scatters -1/T; log_softmax_backward reads the gradient for the
    // row sum, then gradient and output again, writes; the cast back to bf16.
    const double x = T * v, rd = softmax_row_reads(v);
    lk.f.push_back(memk("logits_to_fp32", e * x, 4 * x, 0));
    lk.f.push_back(memk("log_softmax", rd * 4 * x, 4 * x, 5 * x));
    lk.f.push_back(memk("nll_loss", 12 * T, 4, T));
    lk.b.push_back(memk("logits_to_fp32_bwd", 4 * x, e * x, 0));
    lk.b.push_back(memk("log_softmax_bwd", (rd > 1 ? 12 : 8) * x, 4 * x, 3 * x));
    lk.b.push_back(memk("nll_loss_bwd", 12 * T, 4 * x, T));
    add_autocast_casts(lk, {});
    tag_eager_families(lk);
  } else {
    // Vocab-parallel cross entropy on fp32 logits: max, sum-exp, loss; backward softmax - onehot.
    lk.f.push_back(memk("cross_entropy", e * T * v, 4 * T * v, 5 * T * v));
    lk.b.push_back(memk("cross_entropy_bwd", 4 * T * v, e * T * v, 2 * T * v));
  }
  std::reverse(lk.b.begin(), lk.b.end());   // built in F order; B runs in reverse
  mark_autograd(lk);
  return lk;
}

LayerComm layer_comm(const ModelSpec& m, int layer, const RankShape& r) {
  LayerComm c;
  const double h = static_cast<double>(m.hidden);
  const double e = r.bytes_per_element;
  const double T = static_cast<double>(r.micro_batch) * static_cast<double>(r.seq_len) / r.cp;
  if (r.tp > 1) {
    c.tp_collectives = r.sequence_parallel ? 4 : 2;
    c.tp_bytes = T * h * e;
  }
  if (m.is_moe_layer(layer) && r.ep > 1) {
    const double local = r.sequence_parallel ? T / r.tp : T;
    c.ep_all_to_all_bytes = local * m.moe->top_k * h * e;
  }
  if (r.cp > 1) {
    const double kv = m.mla ? static_cast<double>(m.heads) / r.tp : kv_heads_per_rank(m.kv_heads, r.tp);
    c.cp_bytes = T * kv * (qk_head_dim(m) + v_head_dim(m)) * e;
  }
  c.pp_bytes = T * h * e / (r.sequence_parallel ? r.tp : 1);
  return c;
}

// ---- memory -------------------------------------------------------------------
StaticMemory static_memory(const ModelSpec& m, const std::vector<int>& layers, bool has_embedding, bool has_head,
                           int tp, int ep, int dp, bool distributed_optimizer, bool fp32_autocast) {
  double dense = 0, expert = 0;
  for (int i : layers) {
    const ParamParts p = layer_parts(m, i);
    dense += p.tp_sharded / tp + p.replicated;
    expert += p.experts / (static_cast<double>(tp) * ep);
  }
  const ParamCount c = count_params(m);
  if (has_embedding) dense += c.embedding / tp;
  if (has_head) {
    dense += c.final_norm;
    if (!m.tied_embeddings) dense += c.lm_head / tp;
    else if (!has_embedding) dense += c.embedding / tp;   // Megatron keeps a tied copy on the last stage
  }
  StaticMemory s;
  s.params = param_bytes(fp32_autocast) * (dense + expert);
  s.grads = 4 * (dense + expert);
  const double expert_dp = std::max(1.0, static_cast<double>(dp) / ep);
  const double state = fp32_autocast ? 8 : 12;   // m, v (+ fp32 master copy for bf16 params)
  s.optimizer = distributed_optimizer ? state * (dense / dp + expert / expert_dp) : state * (dense + expert);
  return s;
}

double activation_bytes(const ModelSpec& m, int layer, const RankShape& r) {
  const double t = r.tp;
  const double e = r.bytes_per_element;
  const double h = static_cast<double>(m.hidden);
  const double s = static_cast<double>(r.seq_len);
  const double T = static_cast<double>(r.micro_batch) * s / r.cp;
  const double rep = r.sequence_parallel ? 1.0 / t : 1.0;   // tensors outside the TP region
  const double shard = 1.0 / t;
  if (r.recompute == Recompute::full) return e * T * h * rep;   // the layer input only

  const double heads = m.heads;
  const double dqk = qk_head_dim(m), dv = v_head_dim(m), kvh = core_kv_heads(m);
  const double drop = has_dropout(m) ? 1.0 : 0.0;
  double per_token = 0;
  // attention block (Korthikanti: 11sbh + 5as^2b for GPT)
  per_token += e * h * rep;                                   // norm input
  per_token += e * h * rep;                                   // QKV GEMM input (norm output)
  if (m.mla) {
    const auto& l = *m.mla;
    // latents are duplicated over tp: q down output (norm input) and q norm output, same for kv
    per_token += 2 * e * (l.q_lora_rank + l.kv_lora_rank) + e * l.qk_rope_head_dim;
  }
  per_token += e * (heads * dqk + kvh * dqk) * shard;         // Q and K for QK^T
  per_token += e * kvh * dv * shard;                          // V
  per_token += e * heads * dv * shard;                        // attention output = out-projection input
  if (r.recompute == Recompute::none) {
    if (r.flash_attention) {
      per_token += 4 * heads * shard;                         // softmax log-sum-exp (fp32)
    } else {
      // over s keys per head: the probabilities attn*V reads (e), the softmax output
      // its backward reads (the same tensor when fused; fp32, 4 bytes, unfused),
      // dropout mask (1) and dropout output (e)
      per_token += (e + (r.fused_kernels ? 0.0 : 4.0) + drop * (1 + e)) * heads * s * shard;
    }
  }
  per_token += drop * h * rep;                                // dropout mask after out-projection
  // MLP block (Korthikanti: 19sbh for GPT)
  per_token += e * h * rep;                                   // norm input
  auto mlp = [&](double width) {                              // activations of one (dense-width) MLP
    return m.activation == Activation::swiglu ? e * 3 * width * shard   // gate+up output, SwiGLU output
                                              : e * 2 * width * shard;  // GELU input, GELU output
  };
  if (m.is_moe_layer(layer)) {
    const auto& mo = *m.moe;
    const double fe = static_cast<double>(mo.expert_ffn_hidden);
    per_token += e * h * rep;                                 // router input
    per_token += 4 * mo.experts * rep;                        // router probabilities (fp32)
    per_token += mo.top_k * (e * h * rep + mlp(fe));          // permuted expert inputs and expert internals
    per_token += mo.shared_experts * mlp(fe);
  } else {
    per_token += e * h * rep;                                 // fc1 input
    per_token += mlp(static_cast<double>(m.ffn_hidden));
  }
  per_token += drop * h * rep;                                // dropout mask after MLP
  // fp32-autocast: each GEMM saves its bf16 weight copy (the autocast cast) for its input
  // gradient, per micro-batch, until the layer's backward.
  double weight_copies = 0;
  if (r.fp32_autocast) {
    const ParamParts p = layer_parts(m, layer);
    weight_copies = e * (p.tp_sharded / t + p.experts / (t * r.ep));
  }
  return T * per_token + weight_copies;
}

double w_stash_bytes(const ModelSpec& m, int layer, const RankShape& r) {
  // Each weight GEMM keeps its input x and output gradient dy until W: dW = x^T dy.
  const double t = r.tp;
  const double e = r.bytes_per_element;
  const double h = static_cast<double>(m.hidden);
  const double T = static_cast<double>(r.micro_batch) * static_cast<double>(r.seq_len) / r.cp;
  const double rep = r.sequence_parallel ? 1.0 / t : 1.0;
  const double heads = m.heads;
  double per_token = 0;
  auto column = [&](double in, double out) { per_token += e * (in * rep + out / t); };   // in: full hidden
  auto row = [&](double in, double out) { per_token += e * (in / t + out * rep); };
  auto dup = [&](double in, double out) { per_token += e * (in + out); };               // duplicated over tp
  if (m.mla) {
    const auto& l = *m.mla;
    const double qk = qk_head_dim(m);
    if (l.q_lora_rank > 0) {
      dup(h, static_cast<double>(l.q_lora_rank));
      per_token += e * (l.q_lora_rank + heads * qk / t);
    } else {
      column(h, heads * qk);
    }
    dup(h, static_cast<double>(l.kv_lora_rank + l.qk_rope_head_dim));
    per_token += e * (l.kv_lora_rank + heads * (l.qk_nope_head_dim + l.v_head_dim) / t);
  } else {
    column(h, (heads + 2.0 * m.kv_heads) * head_dim(m));
  }
  row(heads * v_head_dim(m), h);
  if (m.is_moe_layer(layer)) {
    const auto& mo = *m.moe;
    const double fe = static_cast<double>(mo.expert_ffn_hidden);
    per_token += e * (h + mo.experts) * rep;                  // router
    const double copies = mo.top_k + mo.shared_experts;
    per_token += copies * e * (h * rep + 2 * fe / t);         // fc1
    per_token += copies * e * (fe / t + h * rep);             // fc2
  } else {
    const double f = static_cast<double>(m.ffn_hidden);
    column(h, m.activation == Activation::swiglu ? 2 * f : f);
    row(f, h);
  }
  return T * per_token;
}

double embedding_activation_bytes(const ModelSpec& m, const RankShape& r) {
  const double T = static_cast<double>(r.micro_batch) * static_cast<double>(r.seq_len) / r.cp;
  const double rep = r.sequence_parallel ? 1.0 / r.tp : 1.0;
  return has_dropout(m) ? T * static_cast<double>(m.hidden) * rep : 0.0;   // dropout mask (1 byte)
}

double head_activation_bytes(const ModelSpec& m, const RankShape& r) {
  const double T = static_cast<double>(r.micro_batch) * static_cast<double>(r.seq_len) / r.cp;
  const double rep = r.sequence_parallel ? 1.0 / r.tp : 1.0;
  const double h = static_cast<double>(m.hidden);
  // final norm input, LM-head input (Korthikanti: 2sbh/t each), fp32 logits 4sbv/t
  return T * (2.0 * r.bytes_per_element * h * rep + 4.0 * static_cast<double>(m.vocab) / r.tp);
}

}  // namespace mfusim::models
