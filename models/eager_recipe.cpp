// The plain PyTorch recipe (training.master_weights = "fp32-autocast", docs/fidelity.md):
// autocast's weight casts, torch.compile'd regions, eager kernels' bandwidth families, and
// the autograd engine issuing B and W; torchtitan's eager Llama block (features.model_code).
#include <algorithm>
#include <string>

#include "models/kernel_builders.h"

namespace mfusim::models::detail {

using hardware::Kernel;
using hardware::KernelKind;

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

// torchtitan's Llama block run eagerly (features.model_code = "torchtitan", docs/fsdp.md). The
// model code is pytorch/torchtitan torchtitan/models/llama/model.py and torchtitan/models/norms.py
// at commit 4d88a8a44fe439f73f564b83d60b29a906ef3507 (2024-12-03; the Llama 3 of the published
// runs): each kernel below is one that run 23's H200 trace of that block lists
// (validation/runs/run23-eager-trace: torch.profiler, Llama-3-8B, seq 8192), with the bytes of
// its tensors; all memory-bound, priced by the cost model's bandwidth (its measured eager
// family where the calibration has one: cast_up / cast_down / repeat, validation/kernel_bw.py).
// fp32 is 4 bytes, bf16 2.
namespace {
Kernel fam(Kernel k, hardware::MemFamily f) {
  k.family = f;
  return k;
}
}  // namespace

// RMSNorm.forward: self._norm(x.float()).type_as(x) * self.weight, _norm(x) = x *
// torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps): x.float() (a bf16 -> fp32 copy), pow,
// mean, + eps and rsqrt on [n], x * r, type_as (fp32 -> bf16), * weight (bf16, broadcast).
// Autograd's backward, in run order as the trace lists it: dY * normed (the weight's gradient)
// and its sum over tokens, dY * w, type_as's backward (bf16 -> fp32), dr = sum_h(d(xr) * x),
// d(xr) * r, rsqrt / add-eps backward on [n] (pow, mul, mul), mean's backward (expand / h),
// pow's backward (x * 2, times the gradient), the two paths of dx summed, and x.float()'s
// backward (fp32 -> bf16).
void torchtitan_rmsnorm_kernels(double n, double h, std::vector<Kernel>& f, std::vector<Kernel>& b) {
  using hardware::MemFamily;
  const double x = n * h;
  f.push_back(fam(memk("rmsnorm_to_fp32", 2 * x, 4 * x, 0), MemFamily::cast_up));
  f.push_back(memk("rmsnorm_pow", 4 * x, 4 * x, x));
  f.push_back(memk("rmsnorm_mean", 4 * x, 4 * n, x));
  f.push_back(memk("rmsnorm_add_eps", 4 * n, 4 * n, n));
  f.push_back(memk("rmsnorm_rsqrt", 4 * n, 4 * n, n));
  f.push_back(memk("rmsnorm_mul", 4 * x + 4 * n, 4 * x, x));
  f.push_back(fam(memk("rmsnorm_to_bf16", 4 * x, 2 * x, 0), MemFamily::cast_down));
  f.push_back(memk("rmsnorm_weight", 2 * x + 2 * h, 2 * x, x));
  const std::vector<Kernel> nb = {
      memk("rmsnorm_wgrad_mul", 4 * x, 2 * x, x),                        // dY * normed
      memk("rmsnorm_weight_bwd", 2 * x + 2 * h, 2 * x, x),               // dY * w
      memk("rmsnorm_wgrad_sum", 2 * x, 2 * h, x),                        // sum over tokens
      fam(memk("rmsnorm_to_bf16_bwd", 2 * x, 4 * x, 0), MemFamily::cast_up),
      memk("rmsnorm_rgrad_mul", 8 * x, 4 * x, x),                        // d(xr) * x
      memk("rmsnorm_mul_bwd", 4 * x + 4 * n, 4 * x, x),                  // d(xr) * r
      memk("rmsnorm_rgrad_sum", 4 * x, 4 * n, x),                        // sum over h
      memk("rmsnorm_rsqrt_bwd", 8 * n, 4 * n, n, 3),                     // pow, mul, mul on [n]
      memk("rmsnorm_mean_bwd", 4 * n, 4 * x, x),                         // expand / h
      memk("rmsnorm_pow_bwd", 4 * x, 4 * x, x),                          // x * 2
      memk("rmsnorm_pow_grad_mul", 8 * x, 4 * x, x),                     // times the gradient
      memk("rmsnorm_dx_accumulate", 8 * x, 4 * x, x),                    // the two paths of dx
      fam(memk("rmsnorm_to_fp32_bwd", 4 * x, 2 * x, 0), MemFamily::cast_down)};
  for (auto it = nb.rbegin(); it != nb.rend(); ++it) b.push_back(*it);   // b is built in F order
}

// apply_rotary_emb on q or k ([n, width] bf16, heads of head_dim): view_as_complex(x.float()
// .reshape(..., -1, 2)) (a bf16 -> fp32 copy), the complex multiply by freqs_cis ([n, head_dim / 2]
// complex64, broadcast over heads: 6 FLOPs per complex element), view_as_real(...).type_as(x)
// (fp32 -> bf16). Backward, in run order: type_as's backward (bf16 -> fp32), freqs_cis.conj()
// materialised ([n, head_dim / 2] complex64), the gradient times it, .float()'s backward
// (fp32 -> bf16).
void torchtitan_rope_kernels(double n, double width, double head_dim, const char* tag, std::vector<Kernel>& f,
                             std::vector<Kernel>& b) {
  using hardware::MemFamily;
  const double x = n * width, fc = 4 * n * head_dim;   // freqs: n * head_dim / 2 complex64 of 8 bytes
  const bool q = tag[0] == 'q';
  f.push_back(fam(memk(q ? "rope_q_to_fp32" : "rope_k_to_fp32", 2 * x, 4 * x, 0), MemFamily::cast_up));
  f.push_back(memk(q ? "rope_q_complex_mul" : "rope_k_complex_mul", 4 * x + fc, 4 * x, 3 * x));
  f.push_back(fam(memk(q ? "rope_q_to_bf16" : "rope_k_to_bf16", 4 * x, 2 * x, 0), MemFamily::cast_down));
  const std::vector<Kernel> rb = {
      fam(memk(q ? "rope_q_to_bf16_bwd" : "rope_k_to_bf16_bwd", 2 * x, 4 * x, 0), MemFamily::cast_up),
      memk(q ? "rope_q_freqs_conj" : "rope_k_freqs_conj", fc, fc, 0),
      memk(q ? "rope_q_complex_mul_bwd" : "rope_k_complex_mul_bwd", 4 * x + fc, 4 * x, 3 * x),
      fam(memk(q ? "rope_q_to_fp32_bwd" : "rope_k_to_fp32_bwd", 4 * x, 2 * x, 0), MemFamily::cast_down)};
  for (auto it = rb.rbegin(); it != rb.rend(); ++it) b.push_back(*it);
}

// repeat_kv(x, n_rep) = x.unsqueeze(3).expand(...).reshape(bs, slen, n_kv_heads * n_rep, head_dim):
// the reshape of the expanded view copies K (or V) to every query head (bf16); its backward sums
// the n_rep copies back (a reduction over the repeat dimension). Not with n_rep = 1 (MHA): repeat_kv
// returns x itself.
void torchtitan_repeat_kv(double n, double kv_width, double rep, const char* tag, std::vector<Kernel>& f,
                          std::vector<Kernel>& b) {
  const double x = n * kv_width;
  const bool k = tag[0] == 'k';
  f.push_back(fam(memk(k ? "k_repeat" : "v_repeat", 2 * x, 2 * x * rep, 0), hardware::MemFamily::repeat));
  b.push_back(memk(k ? "k_repeat_bwd" : "v_repeat_bwd", 2 * x * rep, 2 * x, x * rep));
}

}  // namespace mfusim::models::detail
