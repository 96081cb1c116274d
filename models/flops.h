#pragma once
// FLOP accounting of a ModelSpec: per layer and pass, logits, model FLOPs per token
// (MFU) and the extra FLOPs of recompute (HFU). Sources: Narayanan et al. 2021,
// Korthikanti et al. 2022, Megatron-Core num_floating_point_operations
// (docs/accounting.md).
#include <cstdint>

#include "config/scenario.h"
#include "models/model_spec.h"
#include "models/rank_shape.h"

namespace mfusim::models {

using config::Recompute;

// ---- FLOPs (whole layer, one micro-batch of `tokens` = micro_batch * seq) ----
// Matmuls and attention (QK^T and attn*V) apart; full (non-causal) attention
// as in Megatron's accounting. B is the input gradient, W the weight gradient.
struct PassFlops {
  double matmul = 0, attention = 0;
  double total() const { return matmul + attention; }
};
struct LayerFlops { PassFlops f, b, w; };
LayerFlops layer_flops(const ModelSpec&, int layer, std::int64_t micro_batch, std::int64_t seq_len);
// Logits (LM head) forward FLOPs for `tokens` tokens; backward is 2x (B and W).
double logits_flops_forward(const ModelSpec&, std::int64_t tokens);
// Model FLOPs of one token through forward + backward, no recompute:
// with_attention = true is Megatron's count (mfu_attn, tflops_per_gpu): every
// GEMM except the MoE router (Megatron-Core leaves it out), full s^2 attention,
// logits 6hV; false is 6 * N_activated with N counting embedding and LM head. With MTP
// modules (mtp_depth) both add each module's block, projection and second head application.
double model_flops_per_token(const ModelSpec&, std::int64_t seq_len, bool with_attention);
// Extra FLOPs per token executed by recompute (for HFU): selective = attention
// core forward once more (QK^T + attn*V; Korthikanti's eq. 8 counts 3x this);
// full = the whole layer forward (LM head not recomputed).
// shape: only the layers it checkpoints (models::checkpointed: features.recompute_every,
// recompute_num_layers); none = every layer.
double recompute_flops_per_token(const ModelSpec&, std::int64_t seq_len, Recompute, const RankShape* shape = nullptr);

}  // namespace mfusim::models
