#pragma once
// Builders of the per-rank kernel lists layer_kernels, embedding_kernels and head_kernels
// assemble; not for callers outside models/. Each appends a pass's kernels to f (forward)
// and its backward to b in *forward* order (the caller reverses b once at the end).
//   kernel_builders.cpp    GEMMs (linear: F, dgrad, wgrad) and the memory-bound kernels
//                          of norms, residual adds, activations and RoPE
//   attention_kernels.cpp  the attention core
//   eager_recipe.cpp       the plain PyTorch recipe: autocast casts, compiled regions,
//                          eager bandwidth families, autograd-issued B and W
#include <cstddef>
#include <initializer_list>
#include <vector>

#include "config/scenario.h"
#include "hardware/kernel.h"
#include "models/layer_kernels.h"
#include "models/model_spec.h"

namespace mfusim::models::detail {

// ---- kernel_builders.cpp ----
hardware::Kernel gemm(const char* name, double m, double n, double k, int e, int count = 1);
hardware::Kernel memk(const char* name, double read, double write, double flops, int count = 1);
struct Elementwise {        // one memory-bound op in F with its B counterpart
  const char* f_name;
  const char* b_name;
  double read, write, flops;
  int count = 1;
};
void push(std::vector<hardware::Kernel>& f, std::vector<hardware::Kernel>& b, const Elementwise& op);
void norm_kernels(const ModelSpec& m, double n, double h, int e, bool fused, const char* tag,
                  const char* tag_bwd, std::vector<hardware::Kernel>& f, std::vector<hardware::Kernel>& b);
void residual_kernels(const ModelSpec& m, double n, double h, int e, bool fused,
                      std::vector<hardware::Kernel>& f, std::vector<hardware::Kernel>& b);
void fp32_norm_kernels(const ModelSpec& m, double n, double h, bool fused, bool accumulate, const char* tag,
                       const char* tag_bwd, std::vector<hardware::Kernel>& f, std::vector<hardware::Kernel>& b);
void fp32_residual_kernels(double n, double h, std::vector<hardware::Kernel>& f, std::vector<hardware::Kernel>& b);
void activation_kernels(const ModelSpec& m, double n, double f_width, int e, bool fused,
                        std::vector<hardware::Kernel>& f, std::vector<hardware::Kernel>& b, int count = 1);
void rope_kernels(double n, double width, int e, bool fused, const char* tag, const char* tag_bwd,
                  std::vector<hardware::Kernel>& f, std::vector<hardware::Kernel>& b);
void linear(const char* name, const char* dname, const char* wname, double tokens, double in, double out, int e,
            LayerKernels& lk, int count = 1, bool fp8 = false);
// The kernels an fp8 linear layer adds under Transformer Engine (docs/cost-model.md, "fp8 as
// it is run"), per micro-batch, for `rows` x `cols` bf16 elements: one fused cast-transpose
// that reads the bf16 tensor once (the scale's amax taken in the same pass) and writes the
// fp8 copy twice, row-major for the GEMM that consumes it and transposed for the weight
// gradient (Hopper's fp8 GEMMs take TN operands only).
hardware::Kernel fp8_cast_transpose(const char* name, double rows, double cols, int count = 1);

// ---- attention_kernels.cpp ----
struct AttnShape {
  double batch, heads, kv_heads, seq_q, seq_kv, dqk, dv;
};
hardware::Kernel attn_kernel(hardware::KernelKind kind, const char* name, const AttnShape& s, bool flash,
                             bool causal, double flops, double bytes);
double softmax_row_reads(double row);
void attention_kernels(const ModelSpec& m, const AttnShape& s, int e, config::Attention a,
                       std::vector<hardware::Kernel>& f, std::vector<hardware::Kernel>& b);
void sdpa_math_kernels(const ModelSpec& m, const AttnShape& s, int e, std::vector<hardware::Kernel>& f,
                       std::vector<hardware::Kernel>& b);

// ---- eager_recipe.cpp ----
void mark_compiled(std::vector<hardware::Kernel>& ks);
void tag_eager_families(std::vector<hardware::Kernel>& ks);
void tag_eager_families(LayerKernels& lk);
void mark_autograd(LayerKernels& lk);
void add_autocast_casts(LayerKernels& lk, std::initializer_list<std::size_t*> marks);
// torchtitan's Llama block run eagerly (features.model_code = "torchtitan", fused_kernels false):
// its RMSNorm over `n` tokens of width h, its RoPE on a [n, width] bf16 tensor (freqs of
// head_dim / 2 complex64 per token), repeat_kv of a [n, kv_width] tensor `rep` times, and the
// sum of `paths` input gradients of linears that read one tensor [n, h].
void torchtitan_rmsnorm_kernels(double n, double h, std::vector<hardware::Kernel>& f, std::vector<hardware::Kernel>& b);
void torchtitan_rope_kernels(double n, double width, double head_dim, const char* tag,
                             std::vector<hardware::Kernel>& f, std::vector<hardware::Kernel>& b);
void torchtitan_repeat_kv(double n, double kv_width, double rep, const char* tag, std::vector<hardware::Kernel>& f,
                          std::vector<hardware::Kernel>& b);
hardware::Kernel torchtitan_input_grad_sum(const char* name, double n, double h, int paths);

}  // namespace mfusim::models::detail
