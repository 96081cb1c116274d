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
// A tensor read by `paths` separate autograd functions (linears, the MoE dispatch) gets its gradient as
// their sum: paths - 1 adds over [n, h] of e-byte elements (read two, write one each).
hardware::Kernel input_grad_sum(const char* name, double n, double h, int e, int paths);
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
// How Transformer Engine quantises a linear layer's GEMM inputs (docs/cost-model.md, "The fp8 recipes").
struct Fp8Cast {
  config::Fp8Recipe recipe = config::Fp8Recipe::tensorwise;   // tensorwise (delayed), current or mxfp8
  bool any_layout = false;   // the GPU's per-tensor fp8 GEMMs take any layout (Blackwell): no transposed copy
  bool columnwise = true;    // a second GEMM reads the tensor along its other dimension (a linear's x and dy:
                             // the weight gradient); false: row-wise only (a weight quantised for the forward)
  // Sequence parallelism (per-tensor recipes): a tensor all-gathered over the tensor-parallel group before its
  // GEMM is quantised on its local rows (1 / gather of them) and gathered in fp8 (TE's quantised all-gather,
  // the amax reduced over the group first); where the GEMMs are TN only, its transposed copy is made after
  // the gather (TE gathers no transposed fp8 data). 1: not gathered.
  double gather = 1;
  // The input is the output of the norm before it in one Transformer Engine LayerNormLinear (per-tensor
  // recipes): delayed scaling's norm writes fp8 itself (no cast kernel; the caller narrows the norm's write),
  // current scaling's norm takes the amax in its pass (no amax kernel).
  bool norm_fused = false;
};
// A linear layer: F, dgrad (B) and wgrad (W) GEMMs; with `fp8`, its inputs' quantisation kernels
// (fp8_cast_kernels of x before F with `fp8`, of dy before the dgrad with `fp8_dy`, or with fp8's recipe
// and layout alone) and fp8 operands.
void linear(const char* name, const char* dname, const char* wname, double tokens, double in, double out, int e,
            LayerKernels& lk, int count = 1, const Fp8Cast* fp8 = nullptr, const Fp8Cast* fp8_dy = nullptr);
// The kernels that quantise one `rows` x `cols` bf16 GEMM input under Transformer Engine's recipe, in the
// order they run (docs/cost-model.md, "The fp8 recipes"; Transformer Engine's recipe docs,
// docs/features/low_precision_training):
//   tensorwise (delayed scaling): one fused cast that reads the tensor once (its amax recorded in the same
//     pass for the next step's scale) and writes the fp8 copy, and on Hopper (TN-only fp8 GEMMs) the
//     transposed copy the weight gradient reads too;
//   current: a pass that reads the tensor for its amax, then the same cast ("the tensor needs to be read
//     twice");
//   mxfp8: one pass writing a row-wise and a column-wise copy in 1x32 blocks (each a different
//     quantisation, on every GPU), one e8m0 scale byte per 32 elements of each.
// `amax_name` names the current-scaling amax pass; `rows` are the GEMM's (after any gather). After a gather, or
// after delayed scaling's fp8-writing norm, the transposed copy, where needed, is its own kernel
// (`transpose_name`: read 1, write 1).
std::vector<hardware::Kernel> fp8_cast_kernels(const char* name, const char* amax_name, const char* transpose_name,
                                               double rows, double cols, int count, const Fp8Cast& q);

// DeepSeek-V3's fine-grained fp8 (features.fp8_recipe = "blockwise"; arXiv 2412.19437 §3.3.2):
// an activation in 1x128 tiles is 1 byte per element + one fp32 scale per 128 elements, a weight
// in 128x128 blocks 1 byte + one fp32 scale per 128 x 128.
constexpr double kFp8TileBytes = 1.0 + 4.0 / 128.0;
constexpr double kFp8BlockBytes = 1.0 + 4.0 / (128.0 * 128.0);
// Quantise `rows` x `cols` elements read at `read_bytes` each (2: bf16; kFp8TileBytes: an fp8
// copy dequantised, transposed and quantised again, §3.5.2) into fp8 tiles of 128 with their
// scales: one pass, amax and scale per tile (2 op/element).
hardware::Kernel fp8_quantise(const char* name, double rows, double cols, double read_bytes);
// The transposed fp8 copy of a [rows, cols] weight in 128x128 blocks (scales transposed with it).
hardware::Kernel fp8_weight_transpose(const char* name, double rows, double cols);
// The scales of a [rows, cols] activation in 1x128 tiles rewritten in the layout the GEMM's TMA
// reads (DeepGEMM's get_col_major_tma_aligned_tensor): one fp32 per 128 elements read and written.
hardware::Kernel fp8_scale_transpose(const char* name, double rows, double cols);
// Where a blockwise linear's operands come from (linear_blockwise).
struct Fp8Operands {
  bool x_quantised = false;     // x arrives in fp8 1x128 tiles (quantised before the dispatch, or by a fused SwiGLU)
  double x_saved_bytes = 2;     // bytes per element of the x the weight gradient's 128x1 copy is made from
  bool dy_quantised = false;    // dy arrives in fp8 1x128 tiles (quantised before the combine's backward)
  double dy_saved_bytes = 2;    // the same for dy
  bool weight_transpose_in_forward = false;   // the fp8 weight transposed in the forward (routed experts)
  // Transformer Engine's per-tensor recipes: x is the output of a LayerNormLinear's norm (Fp8Cast::norm_fused)
  // and, under sequence parallelism, all-gathered before the GEMM; dy is all-gathered before the dgrad (a
  // row-parallel linear's output gradient).
  bool x_from_norm = false;
  bool x_sp_gathered = false;
  bool dy_sp_gathered = false;
};
// A linear layer under the blockwise recipe, per micro-batch ( `count` GEMMs of `tokens` rows,
// the routed experts of a rank; their memory-bound kernels one launch over all of them):
//   F: x quantised in 1x128 tiles, its scales transposed, the GEMM.
//   B: dy quantised in 1x128 tiles, the fp8 weight transposed (DeepGEMM is NT only: the input
//      gradient reduces over the output dimension), dy's scales transposed, the dgrad GEMM, then
//      the weight gradient's operands: x and dy transposed and quantised in 128x1 tiles.
//   W: the wgrad GEMM on the two transposed copies.
// GEMM operands 1-byte fp8, outputs bf16, as linear().
void linear_blockwise(const char* name, const char* dname, const char* wname, double tokens, double in, double out,
                      int e, LayerKernels& lk, int count, const Fp8Operands& io);

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

}  // namespace mfusim::models::detail
