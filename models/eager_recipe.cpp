// The plain PyTorch recipe (training.master_weights = "fp32-autocast", docs/fidelity.md):
// autocast's weight casts, torch.compile'd regions, eager kernels' bandwidth families, and
// the autograd engine issuing B and W.
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

}  // namespace mfusim::models::detail
