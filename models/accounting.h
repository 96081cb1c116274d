#pragma once
// Parameter, FLOP and memory accounting of a ModelSpec, and the kernels one
// layer launches per micro-batch on one rank. Sources: Narayanan et al. 2021,
// Korthikanti et al. 2022, Megatron-Core num_floating_point_operations, Qi et
// al. 2024 (../shared/validation/formulas.md); adaptations documented in
// docs/accounting.md.
#include <cstdint>
#include <vector>

#include "config/scenario.h"
#include "hardware/kernel.h"
#include "models/model_spec.h"

namespace mfusim::models {

using config::Recompute;

// ---- parameters -------------------------------------------------------------
struct ParamCount {
  double total = 0;               // every parameter (all experts)
  double activated = 0;           // per token (top_k + shared experts)
  double embedding = 0;           // vocab * hidden
  double lm_head = 0;             // 0 when tied
  double final_norm = 0;
  double per_layer_dense = 0;     // attention + dense MLP + norms
  double per_layer_moe = 0;       // attention + router + all experts + shared + norms (0 for dense models)
  double per_layer_moe_active = 0;
};
ParamCount count_params(const ModelSpec&);
double layer_params(const ModelSpec&, int layer);         // all parameters of layer `layer`
double layer_params_active(const ModelSpec&, int layer);

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
// logits 6hV; false is 6 * N_activated with N counting embedding and LM head.
double model_flops_per_token(const ModelSpec&, std::int64_t seq_len, bool with_attention);
// Extra FLOPs per token executed by recompute (for HFU): selective = attention
// core forward once more (QK^T + attn*V; Korthikanti's eq. 8 counts 3x this);
// full = the whole layer forward (LM head not recomputed).
double recompute_flops_per_token(const ModelSpec&, std::int64_t seq_len, Recompute);

// ---- per-rank kernels ----------------------------------------------------
struct RankShape {
  int tp = 1, cp = 1, ep = 1;
  bool sequence_parallel = true;
  std::int64_t micro_batch = 1;
  std::int64_t seq_len = 4096;
  bool flash_attention = true;
  bool fused_kernels = true;
  Recompute recompute = Recompute::none;
  int bytes_per_element = 2;      // bf16 activations
  // Plain PyTorch AMP (training.master_weights = "fp32-autocast", docs/fidelity.md): fp32
  // parameters cast to bf16 by every forward (and recompute), bf16 weight gradients cast to
  // fp32 .grad, torch cross entropy on .float() logits, eager attention chain without flash.
  bool fp32_autocast = false;
};
// The per-rank shape of a scenario (its parallel layout, micro-batch, features
// and weights recipe): the one place that maps a Scenario to a RankShape.
RankShape rank_shape(const config::Scenario&);
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
};
LayerKernels layer_kernels(const ModelSpec&, int layer, const RankShape&);
LayerKernels embedding_kernels(const ModelSpec&, const RankShape&);   // first stage
LayerKernels head_kernels(const ModelSpec&, const RankShape&);        // last stage: final norm, LM head, loss

// Communication one layer needs per micro-batch on one rank (bytes per collective call).
struct LayerComm {
  int tp_collectives = 0;         // per pass (F or B): 2 all-reduces, or 2 all-gathers + 2 reduce-scatters with SP
  double tp_bytes = 0;            // full buffer per collective (b*s*h*2 / cp)
  double ep_all_to_all_bytes = 0; // per all-to-all (dispatch or combine); 2 per pass for MoE layers
  double cp_bytes = 0;            // K,V chunk passed per ring step (cp > 1)
  double pp_bytes = 0;            // activation sent to the next stage (b*s*h*2 / cp, / tp with SP)
};
LayerComm layer_comm(const ModelSpec&, int layer, const RankShape&);

// ---- memory (bytes, per rank) ----------------------------------------------
struct StaticMemory { double params = 0, grads = 0, optimizer = 0; };
// Weights of `layer_count` layers held by one rank (sharded by tp and ep),
// plus embedding/head when held; mixed-precision Adam: bf16 params, fp32
// grads (Megatron main-grad), fp32 master + two moments (12 bytes/param),
// sharded over dp when distributed_optimizer.
// fp32_autocast: fp32 params (4 bytes), fp32 grads (4), Adam m and v (8, sharded like the
// optimizer state); no separate master copy.
StaticMemory static_memory(const ModelSpec&, const std::vector<int>& layers, bool has_embedding, bool has_head,
                           int tp, int ep, int dp, bool distributed_optimizer, bool fp32_autocast = false);
// Bytes of one stored parameter: 2 (bf16 params) or 4 (fp32 under autocast).
constexpr double param_bytes(bool fp32_autocast) { return fp32_autocast ? 4.0 : 2.0; }
// Activations one layer keeps from F until its B, per micro-batch (Korthikanti
// Table 2, adapted for flash attention, GQA, SwiGLU and MoE).
double activation_bytes(const ModelSpec&, int layer, const RankShape&);
// What W still needs after B (Zero Bubble M_W), per micro-batch per layer.
double w_stash_bytes(const ModelSpec&, int layer, const RankShape&);
// Extra activations of the first stage (embedding output) and of the last (logits), per micro-batch.
double embedding_activation_bytes(const ModelSpec&, const RankShape&);
double head_activation_bytes(const ModelSpec&, const RankShape&);

}  // namespace mfusim::models
