#pragma once
// The cost model's input vocabulary: one GPU kernel (or `count` identical
// ones), as produced by models/ for a layer's F, B, W and recompute.
#include <cstdint>

namespace mfusim::hardware {

enum class KernelKind { gemm, attention_fwd, attention_bwd, memory };
inline bool is_attention(KernelKind k) { return k == KernelKind::attention_fwd || k == KernelKind::attention_bwd; }

// Which kind of eager PyTorch memory-bound kernel a memory kernel is. Eager kernels of
// different kinds reach different fractions of the copy bandwidth on the same GPU (a dtype
// cast through TensorIterator's non-vectorised path, a mixed-dtype add, a row softmax, the
// multi-tensor AdamW), measured per family by validation/kernel_bw.py and fitted into the
// calibration's [memory_families] (hardware/calibration.h). `generic` (every kernel not
// tagged, e.g. Megatron/Apex/TE fused kernels) uses the calibration's copy-kernel fit.
enum class MemFamily : unsigned char {
  generic,
  cast_down,    // fp32 -> bf16 (x.to(bf16); autocast weight casts)
  cast_up,      // bf16 -> fp32 (x.float(); gradients into fp32 .grad)
  add_mixed,    // fp32 + bf16 -> fp32 (the fp32 residual add of a bf16 branch)
  add_f32,      // fp32 + fp32 (residual gradient accumulation)
  eltwise,      // bf16 pointwise (scale, silu, mul, rope pieces)
  masked_fill,  // out-of-place masked_fill over the scores (copy + fill)
  repeat,       // repeat_interleave of K/V (GQA)
  softmax_fwd,  // fp32 softmax, row on chip
  softmax_bwd,
  log_softmax,  // fp32 log_softmax over vocabulary rows, fwd and bwd
  norm_fwd,     // F.rms_norm over fp32 rows
  norm_bwd,     // its autograd backward (input and weight gradients)
  fill,         // zero fill (nll_loss backward)
  adamw,        // torch.optim.AdamW(fused=True) multi-tensor step
  // Pointwise chains measured in a step's kernel trace (validation/kernel_trace.py and
  // trace_families.py, run 8), forward and backward apart:
  rope_eager,       // eager RoPE pieces on the transposed q/k views (non-vectorised TensorIterator)
  rope_eager_bwd,
  swiglu_eager,     // eager silu / mul on the chunk views of the up projection
  swiglu_eager_bwd,
  rope_compiled,    // torch.compile(dynamic=True) Triton kernel of RoPE
  rope_compiled_bwd,
  swiglu_compiled,  // torch.compile(dynamic=True) Triton kernel of SwiGLU
  swiglu_compiled_bwd,
  // The MoE router's top-k (torch.topk over the fp32 scores, at::native::sbtopk: a radix select in one
  // CTA per row, run 28): not an HBM stream; its rate on the model's byte count (scores read, indices
  // and values written) is measured like a bandwidth.
  topk,
  count_
};
constexpr int kMemFamilies = static_cast<int>(MemFamily::count_);
// TOML key stem of each family ("cast_down" -> cast_down_gbs); index = MemFamily value.
constexpr const char* kMemFamilyNames[kMemFamilies] = {
    "generic", "cast_down", "cast_up", "add_mixed", "add_f32", "eltwise", "masked_fill", "repeat",
    "softmax_fwd", "softmax_bwd", "log_softmax", "norm_fwd", "norm_bwd", "fill", "adamw",
    "rope_eager", "rope_eager_bwd", "swiglu_eager", "swiglu_eager_bwd", "rope_compiled", "rope_compiled_bwd",
    "swiglu_compiled", "swiglu_compiled_bwd", "topk"};

struct Kernel {
  KernelKind kind = KernelKind::memory;
  const char* name = "";        // "qkv", "attn_out", "mlp_up", "rmsnorm", ...
  // gemm: C[m,n] = A[m,k] B[k,n]
  std::int64_t m = 0, n = 0, k = 0;
  // attention (per rank): batch, query heads, kv heads, query/key lengths, head dim
  std::int64_t batch = 0, heads = 0, kv_heads = 0, seq_q = 0, seq_kv = 0, head_dim = 0;
  // The value head's width when it differs from the query/key's (MLA: 192 vs 128); 0: head_dim.
  std::int64_t head_dim_v = 0;
  double v_dim() const { return static_cast<double>(head_dim_v > 0 ? head_dim_v : head_dim); }
  bool causal = true;
  bool flash = true;            // false: materialised s x s scores (softmax in HBM)
  bool fa2 = false;             // flash through FlashAttention-2 kernels (SDPA's FLASH_ATTENTION backend):
                                // the calibration's [attention_fa2] fit where it has one
  bool triton_fa = false;       // flash through FlashAttention in Triton (llm-foundry's, run 42): the
                                // calibration's [attention_triton] fit, else [attention_fa2] (a lower bound)
  bool dropout = false;         // a fused call that applies dropout to its attention probabilities, drawing
                                // the mask inside the kernel (Philox) in the forward and again in the
                                // backward: the calibration's measured time per score where it has one (run 48)
  bool compiled = false;        // issued by one torch.compile'd call (host cost host_compiled_overhead)
  bool autograd = false;        // issued by autograd's backward engine (host cost host_backward_overhead)
  MemFamily family = MemFamily::generic;   // memory kernels: achieved-bandwidth family
  // Tensor-core math kept in bf16 in an fp8 recipe: Transformer Engine's DotProductAttention
  // without fp8_dpa (its default) and the LM head (Megatron/NeMo keep the output layer in
  // bf16). The cost model prices such a kernel at the bf16 peak and with the bf16 fit
  // whatever the scenario's precision.
  bool keep_bf16 = false;
  // An fp8 GEMM on MXFP8 operands (features.fp8_recipe = "mxfp8"): Blackwell's block-scaled kernels, at
  // CostDefaults::mxfp8_gemm_rate of the per-tensor fp8 kernel's rate.
  bool mxfp8 = false;
  // totals used by the roofline (every kind fills them)
  double flops = 0;             // floating-point operations of one kernel
  double bytes = 0;             // minimum HBM bytes read + written by one kernel
  int count = 1;                // identical kernels launched (e.g. experts, unfused pieces)
  bool fp32 = false;            // a matmul in fp32 on the CUDA cores (HardwareSpec::peak_flops_fp32)
  // A grouped expert GEMM priced as one dense GEMM of its total size: the grouped call's rate as
  // a fraction of that GEMM's (calibration [gemm_grouped], layer::group_expert_gemms); 0 = not grouped.
  double grouped_eff = 0;
  // A weight-gradient GEMM that accumulates into its output (beta = 1: Megatron's gradient-accumulation
  // fusion into main_grad): the output's element size, 4 (fp32 main_grad) or 2 (bf16); 0 = written once.
  // The epilogue then reads the old value and writes the wider one (CostModel::gemm_seconds, run 19).
  int accumulate_bytes = 0;
  // Weight matrices one accumulating call writes into (a grouped expert wgrad: one per expert; m x n is
  // one expert's weight).
  int accumulate_outputs = 1;
};

}  // namespace mfusim::hardware
