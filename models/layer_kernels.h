#pragma once
// The kernels one layer (and the embedding, and the head) launches per micro-batch on one
// rank, with the block boundaries where the lowering attaches collectives.
#include <cstddef>
#include <vector>

#include "hardware/cost_model.h"
#include "hardware/kernel.h"
#include "models/model_spec.h"
#include "models/rank_shape.h"

namespace mfusim::models {

// Kernels of one layer for one micro-batch on one rank (weights sharded by tp,
// experts by ep, sequence by cp). f and b in run order; gemm and attention
// kernels carry the same FLOP counts as layer_flops (full s^2 attention even
// when causal; FlashAttention's backward recompute is left to the cost model),
// so their sum x tp x cp equals layer_flops for dense models. Memory kernels
// carry elementwise op counts as flops. `r` is what recompute re-runs before B
// (empty for none; attention core for selective; all of f for full).
struct LayerKernels {
  std::vector<hardware::Kernel> f, b, w, r;
  // Block boundaries, where the lowering attaches collectives: f[f_mlp..] is
  // the MLP (or MoE) block, b[b_attn..] the attention block's backward. For
  // MoE layers f[f_experts, f_experts_end) and b[b_experts, b_experts_end) are
  // the expert computations between the dispatch and combine all-to-alls.
  std::size_t f_mlp = 0, b_attn = 0;
  std::size_t f_experts = 0, f_experts_end = 0, b_experts = 0, b_experts_end = 0;
  // MoE layers: the shared experts' kernels f[f_shared, f_shared_end) and
  // b[b_shared, b_shared_end) (empty without shared experts), and where the
  // MLP block's weight gradients start in w (w[w_mlp..]); DualPipe's F&B pair
  // places these blocks on their own (layer/pass_cost.h, LayerCost::fb_f).
  std::size_t f_shared = 0, f_shared_end = 0, b_shared = 0, b_shared_end = 0, w_mlp = 0;
};
LayerKernels layer_kernels(const ModelSpec&, int layer, const RankShape&);
LayerKernels embedding_kernels(const ModelSpec&, const RankShape&);   // first stage
LayerKernels head_kernels(const ModelSpec&, const RankShape&);        // last stage: final norm, LM head, loss
// One MTP module (DeepSeek-V3 §2.2) on the last stage, without the shared head it runs again:
// RMSNorms of the hidden state and of the next tokens' embeddings, the projection 2h -> h,
// then a block of the last layer's kind (its bounds shifted to the whole list).
LayerKernels mtp_kernels(const ModelSpec&, const RankShape&);

// The GEMM duty of a rank's steady work: the share of its layers' GPU execution time (forward,
// backward, weight gradients, recompute; dense and MoE layers weighted by their counts) spent in
// GEMMs, as `cost` prices them; settle_gemm_duty iterates it with cost.set_gemm_duty to the fixed
// point (GEMM times depend on the duty through the measured clock curve, Calibration::gemm_clock).
double gemm_duty(const ModelSpec&, const RankShape&, const hardware::CostModel&);
void settle_gemm_duty(const ModelSpec&, const RankShape&, hardware::CostModel&);

}  // namespace mfusim::models
