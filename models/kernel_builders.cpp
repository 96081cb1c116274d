// Kernel builders of the per-rank kernel lists: GEMMs (linear: F, dgrad, wgrad) and the
// memory-bound kernels of norms, residual adds, activations and RoPE, Megatron's and plain
// PyTorch's (fp32 residual stream). Attention: attention_kernels.cpp; the plain PyTorch
// recipe's casts and tags: eager_recipe.cpp.
#include "models/kernel_builders.h"

#include <cmath>

#include "models/conventions.h"

namespace mfusim::models::detail {

using hardware::Kernel;
using hardware::KernelKind;

Kernel gemm(const char* name, double m, double n, double k, int e, int count) {
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

Kernel memk(const char* name, double read, double write, double flops, int count) {
  Kernel k;
  k.kind = KernelKind::memory;
  k.name = name;
  k.bytes = read + write;
  k.flops = flops;
  k.count = count;
  return k;
}

Kernel input_grad_sum(const char* name, double n, double h, int e, int paths) {
  const double x = n * h;
  return memk(name, 2.0 * e * x, 1.0 * e * x, x, paths - 1);
}

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
  if (fused || has_layernorm(m)) {
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
  const double bias = has_bias(m) ? e * h : 0.0;
  if (!has_dropout(m)) {
    if (bias > 0 && !fused) push(f, b, {"bias_add", "bias_add_bwd", e * x + bias, e * x, x});
    push(f, b, {"residual_add", "residual_add_bwd", 2 * e * x + (fused ? bias : 0.0), e * x, x});
    return;
  }
  if (fused) {
    push(f, b, {"bias_dropout_add", "bias_dropout_add_bwd", 2 * e * x + bias, e * x + x, 3 * x});
    return;
  }
  if (bias > 0) push(f, b, {"bias_add", "bias_add_bwd", e * x + bias, e * x, x});
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
// gradient (one fp32 add). H200 profile (validation/runs/run02-check/h200_step_profile.txt): the
// vectorized bfloat16_copy, unrolled direct_copy and CUDAFunctor_add<float> kernels.
void fp32_norm_kernels(const ModelSpec& m, double n, double h, bool fused, bool accumulate, const char* tag,
                       const char* tag_bwd, std::vector<Kernel>& f, std::vector<Kernel>& b) {
  using hardware::MemFamily;
  const double x = n * h;
  auto fam = [](Kernel k, MemFamily fm) { k.family = fm; return k; };
  if (accumulate) b.push_back(fam(memk("residual_grad_accumulate", 8 * x, 4 * x, x), MemFamily::add_f32));
  if (fused || has_layernorm(m)) {
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
    // validation/runs/run08-fidelity2/kernel_trace.csv.gz, s1.3b seq 4096 fused 0: 12 kernels per norm,
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
                        std::vector<Kernel>& f, std::vector<Kernel>& b, int count) {
  const double x = n * f_width;
  if (m.activation == Activation::swiglu) {
    if (has_bias(m)) {   // a stated fc1 bias: fused into the activation's read, else its own add over both halves
      if (fused) {
        push(f, b, {"bias_swiglu", "bias_swiglu_bwd", 2 * e * x + 2 * e * f_width, e * x, 6 * x, count});
        return;
      }
      push(f, b, {"bias_add", "bias_add_bwd", 2 * e * x + 2 * e * f_width, 2 * e * x, 2 * x, count});
    }
    if (fused) {
      push(f, b, {"swiglu", "swiglu_bwd", 2 * e * x, e * x, 5 * x, count});
    } else {
      push(f, b, {"silu", "silu_bwd", e * x, e * x, 4 * x, count});
      push(f, b, {"swiglu_mul", "swiglu_mul_bwd", 2 * e * x, e * x, x, count});
    }
    return;
  }
  const bool bias = has_bias(m);
  if (m.activation == Activation::squared_relu) {
    // Megatron-Core calls the Python function torch.pow(F.relu(x), 2) (no fused kernel of its own, a stated
    // bias its own add). fused: NeMo 1's torch.compile'd function, one Triton kernel each way (x read, y
    // written; dy and x read, dx written). Unfused: eager PyTorch, run 56's kernels: forward clamp_min and
    // pow (x * x); backward pow's self.pow(1) as a device copy, the multiply by 2, the multiply by dy and
    // relu's threshold_backward.
    if (bias) push(f, b, {"bias_add", "bias_add_bwd", e * x + e * f_width, e * x, x, count});
    if (fused) {
      push(f, b, {"squared_relu", "squared_relu_bwd", e * x, e * x, 2 * x, count});
      return;
    }
    auto eager = [&](std::vector<Kernel>& ks, const char* name, double read, double write, double flops) {
      Kernel k = memk(name, read, write, flops, count);
      k.family = hardware::MemFamily::eltwise;
      ks.push_back(k);
    };
    eager(f, "relu", e * x, e * x, x);
    eager(f, "relu_square", e * x, e * x, x);
    eager(b, "relu_square_bwd_copy", e * x, e * x, 0);
    eager(b, "relu_square_bwd_scale", e * x, e * x, x);
    eager(b, "relu_square_bwd_mul", 2 * e * x, e * x, x);
    eager(b, "relu_bwd", 2 * e * x, e * x, x);
    return;
  }
  if (fused) {
    if (bias) push(f, b, {"bias_gelu", "bias_gelu_bwd", e * x + e * f_width, e * x, 8 * x, count});
    else push(f, b, {"gelu", "gelu_bwd", e * x, e * x, 8 * x, count});
  } else {
    if (bias) push(f, b, {"bias_add", "bias_add_bwd", e * x + e * f_width, e * x, x, count});
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

std::vector<Kernel> fp8_cast_kernels(const char* name, const char* amax_name, const char* transpose_name, double rows,
                                     double cols, int count, const Fp8Cast& q) {
  const double x = rows * cols;
  std::vector<Kernel> ks;
  const double g = q.gather > 1 ? q.gather : 1;
  const double local = x / g;   // quantised before the gather
  if (q.recipe == config::Fp8Recipe::mxfp8) {
    // bf16 in; fp8 row-wise and column-wise out, each with one e8m0 scale per 32; two block amaxes and scales.
    // Gathered, both copies travel (TE's _all_gather_mxfp8): nothing is made after the gather.
    const double copies = q.columnwise ? 2 : 1;
    ks.push_back(memk(name, 2 * local, copies * (local + local / 32.0), (1 + copies) * local, count));
    return ks;
  }
  const bool transposed = q.columnwise && !q.any_layout;
  // a separate transpose: after a gather, or after delayed scaling's fp8-writing norm (no cast kernel to fuse it in)
  const bool separate_t = transposed && (g > 1 || (q.norm_fused && q.recipe == config::Fp8Recipe::tensorwise));
  if (q.recipe == config::Fp8Recipe::current && !q.norm_fused) ks.push_back(memk(amax_name, 2 * local, 0, local, count));
  // bf16 in; fp8 out (row-major, and transposed where the GEMMs are TN only); scale (and amax): 2 op/element.
  if (!(q.norm_fused && q.recipe == config::Fp8Recipe::tensorwise))
    ks.push_back(memk(name, 2 * local, (transposed && !separate_t ? 2 : 1) * local, 2 * local, count));
  if (separate_t) ks.push_back(memk(transpose_name, x, x, 0, count));
  return ks;
}

// Adds the F GEMM, its dgrad (B) and wgrad (W). Forward y[m, out] = x[m, in] W.
// fp8 (Transformer Engine): the forward quantises the input x [tokens, in] before the GEMM,
// the backward the output gradient dy [tokens, out] before the dgrad; the wgrad reads both
// (transposed) copies. GEMM operands are 1-byte fp8, outputs bf16.
void linear(const char* name, const char* dname, const char* wname, double tokens, double in, double out, int e,
            LayerKernels& lk, int count, const Fp8Cast* fp8, const Fp8Cast* fp8_dy) {
  if (fp8)
    for (Kernel& k : fp8_cast_kernels("fp8_cast_x", "fp8_amax_x", "fp8_transpose_x", tokens, in, count, *fp8))
      lk.f.push_back(k);
  lk.f.push_back(gemm(name, tokens, out, in, e, count));
  lk.b.push_back(gemm(dname, tokens, in, out, e, count));
  const std::size_t dgrad = lk.b.size() - 1;
  if (fp8) {   // run before the dgrad (b is reversed): pushed last-to-first
    const Fp8Cast dy = fp8_dy ? *fp8_dy : Fp8Cast{fp8->recipe, fp8->any_layout};
    auto ks = fp8_cast_kernels("fp8_cast_dy", "fp8_amax_dy", "fp8_transpose_dy", tokens, out, count, dy);
    for (auto it = ks.rbegin(); it != ks.rend(); ++it) lk.b.push_back(*it);
  }
  lk.w.push_back(gemm(wname, in, out, tokens, e, count));
  if (fp8) {
    const bool mx = fp8->recipe == config::Fp8Recipe::mxfp8;
    for (Kernel* g : {&lk.f.back(), &lk.b[dgrad], &lk.w.back()}) {
      g->bytes = static_cast<double>(g->m) * g->k + static_cast<double>(g->k) * g->n + 2.0 * g->m * g->n;
      g->mxfp8 = mx;
    }
  }
}

namespace {
void set_fp8_gemm_bytes(Kernel& g) {
  g.bytes = static_cast<double>(g.m) * g.k + static_cast<double>(g.k) * g.n + 2.0 * g.m * g.n;
}
}  // namespace

Kernel fp8_quantise(const char* name, double rows, double cols, double read_bytes) {
  const double x = rows * cols;
  return memk(name, read_bytes * x, x + 4.0 * rows * std::ceil(cols / 128.0), 2 * x);
}

Kernel fp8_weight_transpose(const char* name, double rows, double cols) {
  const double b = rows * cols + 4.0 * std::ceil(rows / 128.0) * std::ceil(cols / 128.0);
  return memk(name, b, b, 0);
}

Kernel fp8_scale_transpose(const char* name, double rows, double cols) {
  const double b = 4.0 * rows * std::ceil(cols / 128.0);
  return memk(name, b, b, 0);
}

// The kernels and their order as DeepSeek's training code runs them for one linear
// (github.com/deepseek-ai/profile-data, train.json: one DualPipe F&B pair of 4 MoE layers on an
// H800, EP 64; LinearWithGradAccumulationFP8 and its backward): forward per_token_cast_to_fp8
// (1x128), utils::transpose of the scales (before the routed experts' grouped GEMMs a torch copy of them
// into the GEMM's layout), the fp8 GEMM; backward per_token_cast_to_fp8 of dy,
// batched_transpose of the fp8 weight, the scales, the dgrad GEMM, per_channel_cast_and_transpose
// of x and of dy (128x1); the wgrad GEMM (fp8_dptp128c_acc) on those.
// DeepGEMM's README (github.com/deepseek-ai/DeepGEMM, README.md "Notices", commit
// 55ab91f72f76e8a6db0e86282c3169a88d93df1b): "It requires the LHS scaling factor to be TMA-aligned
// and transposed, and it only supports the NT format (non-transposed LHS and transposed RHS). For
// transposition or other FP8 casting operations, please implement or fuse them into prior kernels".
void linear_blockwise(const char* name, const char* dname, const char* wname, double tokens, double in, double out,
                      int e, LayerKernels& lk, int count, const Fp8Operands& io) {
  const double rows = tokens * count;   // all of the group's tokens (one kernel over the experts)
  if (!io.x_quantised) lk.f.push_back(fp8_quantise("fp8_quant_x", rows, in, 2));
  lk.f.push_back(fp8_scale_transpose("fp8_scale_transpose", rows, in));
  if (io.weight_transpose_in_forward) lk.f.push_back(fp8_weight_transpose("fp8_weight_transpose", out * count, in));
  lk.f.push_back(gemm(name, tokens, out, in, e, count));
  set_fp8_gemm_bytes(lk.f.back());
  // b is built in forward order and reversed once: pushed here last-to-first.
  lk.b.push_back(fp8_quantise("fp8_quant_t_dy", rows, out, io.dy_saved_bytes));
  lk.b.push_back(fp8_quantise("fp8_quant_t_x", rows, in, io.x_saved_bytes));
  lk.b.push_back(gemm(dname, tokens, in, out, e, count));
  set_fp8_gemm_bytes(lk.b.back());
  lk.b.push_back(fp8_scale_transpose("fp8_scale_transpose", rows, out));
  if (!io.weight_transpose_in_forward) lk.b.push_back(fp8_weight_transpose("fp8_weight_transpose", out * count, in));
  if (!io.dy_quantised) lk.b.push_back(fp8_quantise("fp8_quant_dy", rows, out, 2));
  lk.w.push_back(gemm(wname, in, out, tokens, e, count));
  set_fp8_gemm_bytes(lk.w.back());
}

}  // namespace mfusim::models::detail
