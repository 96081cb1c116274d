#pragma once
// Memory accounting per rank (bytes): weights, gradients and optimizer state, activations
// kept from F to B, what W still needs after B (Korthikanti et al. 2022, Qi et al. 2024;
// docs/accounting.md).
#include <vector>

#include "config/scenario.h"
#include "models/model_spec.h"
#include "models/rank_shape.h"

namespace mfusim::models {

struct StaticMemory { double params = 0, grads = 0, optimizer = 0; };
// Weights of `layer_count` layers held by one rank (sharded by tp and ep),
// plus embedding/head when held; mixed-precision Adam: bf16 params, fp32
// grads (Megatron main-grad), fp32 master + two moments (12 bytes/param),
// sharded over dp when distributed_optimizer.
// fp32_autocast: fp32 params (4 bytes), fp32 grads (4), Adam m and v (8, sharded like the
// optimizer state); no separate master copy.
// The linear-layer weights a rank holds of `layers` (and, with has_head, the MTP modules'): the
// matrices sharded by tp and the routed experts by tp * ep; the embedding, the LM head and the norms
// are not counted. What fp8 recipes hold in fp8 (static_memory's fp8 copies, features.fp8_params).
double linear_weights(const ModelSpec&, const std::vector<int>& layers, bool has_head, int tp, int ep);
// fp8 (Transformer Engine on Hopper/Blackwell): each fp8 linear layer's weight is also held
// as fp8, row-major and transposed (the cached quantised weight TE keeps across the step's
// micro-batches), 2 bytes per layer weight parameter in `params`; the embedding, the LM head
// and the norms have none.
StaticMemory static_memory(const ModelSpec&, const std::vector<int>& layers, bool has_embedding, bool has_head,
                           int tp, int ep, int dp, bool distributed_optimizer, bool fp32_autocast = false,
                           bool fp8 = false);
// ZeRO stages 2 and 3 (docs/fsdp.md): the states of static_memory with the gradients (stage 2) and
// the parameters too (stage 3) divided over the `shard` ranks of a shard group (all of dp, or
// HSDP's shard_degree); the optimizer state over the shard group (stages >= 1). Experts are
// sharded over shard / ep ranks (at least 1). offload_optimizer: the optimizer state lives on the
// host; offload_params: parameters and gradients too (FSDP CPUOffload). Stage <= 1 without offload
// is static_memory with dp = shard.
struct ZeroLayout { int stage = 1; int shard = 1; bool offload_optimizer = false, offload_params = false; };
StaticMemory sharded_static_memory(const ModelSpec&, const std::vector<int>& layers, bool has_embedding,
                                   bool has_head, int tp, int ep, const ZeroLayout&, bool fp32_autocast = false);
// Bytes of one stored parameter: 2 (bf16 params) or 4 (fp32 under autocast).
constexpr double param_bytes(bool fp32_autocast) { return fp32_autocast ? 4.0 : 2.0; }
// ZeRO-2/3, HSDP (a shard group smaller than dp) or offload: the sharded accounting (and, in the
// step, step/fsdp.cpp's data-parallel work).
bool zero_sharded(const config::Scenario&);
// Gradients torch allocates in the backward and zero_grad(set_to_none=True) frees after the optimizer step: the
// plain PyTorch recipe (training.master_weights = "fp32-autocast") and PyTorch FSDP (zero_sharded), unless
// offloaded (then they live on the host). step/builder.cpp allocates them with the op that produces them.
bool backward_allocates_grads(const config::Scenario&);
// PyTorch's FSDP (FSDP1 or FSDP2): ZeRO-3 without features.megatron_fsdp. Megatron-FSDP and the ZeRO-1/2 paths
// follow Megatron's conventions (its buckets, finalize_model_grads, its clipping).
bool torch_fsdp(const config::Scenario&);
// PyTorch's FSDP (ZeRO-3 without features.megatron_fsdp, no offloading): the sharded parameter is the fp32 tensor
// the optimizer steps (FSDP2's MixedPrecisionPolicy casts it to bf16 at each all-gather; FSDP1 casts its flat shard
// into a bf16 copy it frees after the gather), so the rank holds no bf16 shard and no separate fp32 master:
// 4 (parameter) + 4 (gradient) + 8 (Adam m, v) bytes per held parameter, where Megatron's layout (Megatron-FSDP,
// ZeRO-1/2) holds 2 (bf16) + 4 + 12 (master, m, v). Run 35 (FSDP2): the optimizer step's peak at 16.0 bytes per
// parameter plus the foreach temporary. Not with features.fp8_params (Megatron's --fp8-param-gather, Megatron's
// layout).
bool torch_fsdp_fp32_shards(const config::Scenario&);
// ... and no static gradient buffer beside them: DDP's buckets (the plain recipe with dp x cp > 1) stay static.
bool grads_only_in_backward(const config::Scenario&);
// What one rank holds for its layers (plus the embedding / head): the scenario's data parallelism
// (static_memory, or sharded_static_memory when zero_sharded), Transformer Engine's cached fp8 weight
// copies on ranks that hold whole layers (fp8, ZeRO < 3), and the gradient buffer at
// features.reduce_dtype's element size (grad_bytes). The step (step/builder.cpp) and the planner's
// memory bound (study/plan.cpp) both use it.
StaticMemory rank_static_memory(const config::Scenario&, const std::vector<int>& layers, bool has_embedding,
                                bool has_head, bool fp32_autocast);
// Bytes of one gradient element in the gradient buffer and its reduction: 4 (fp32 main grads,
// Megatron's grad_reduce_in_fp32 / FSDP2's reduce_dtype fp32) or 2 (features.reduce_dtype = "bf16":
// NeMo's performance recipes set grad_reduce_in_fp32 = False). Under fp32-autocast the .grad is fp32.
constexpr double grad_bytes(bool reduce_fp32, bool fp32_autocast) { return reduce_fp32 || fp32_autocast ? 4.0 : 2.0; }

// torch's foreach AdamW (features.optimizer_foreach; torch/optim/adam.py _multi_tensor_adam, not capturable,
// decoupled weight decay) steps fp32 tensors in eight passes, each a multi-tensor kernel over every parameter:
// mul_ (weight decay) 8 bytes, lerp_ (m) 12, mul_ (v) 8, addcmul_ (v) 12, sqrt (a temporary) 8, div_ 8, add_ (eps) 8,
// addcdiv_ (p) 16: 80 bytes per parameter where the fused kernel reads p, g, m, v and writes p, m, v once (28).
// Run 37 (validation/runs/run37-tt-step-profile): the eight passes 41.1 ms over 1.923e9 parameters on one H200
// (3.4-3.95 TB/s per pass), 736 kernels.
constexpr double kForeachAdamExtraBytes = 80.0 - 28.0;
constexpr int kForeachAdamPasses = 8;
// Activations one layer keeps from F until its B, per micro-batch (Korthikanti
// Table 2, adapted for flash attention, GQA, SwiGLU and MoE).
double activation_bytes(const ModelSpec&, int layer, const RankShape&);
// What W still needs after B (Zero Bubble M_W), per micro-batch per layer.
double w_stash_bytes(const ModelSpec&, int layer, const RankShape&);
// Extra activations of the first stage (embedding output) and of the last (logits), per micro-batch.
double embedding_activation_bytes(const ModelSpec&, const RankShape&);
double head_activation_bytes(const ModelSpec&, const RankShape&);
// The last stage's head and loss memory per micro-batch, as blocks: what the head keeps from its
// forward to its backward (inputs + saved = head_activation_bytes) and what the loss holds only
// while the head's forward runs (the logits and their fp32 copy, until the loss returns and the
// step drops the logits) or its backward (the loss's gradients). Measured: run 34
// (validation/runs/run34-loss-memory).
struct HeadMemory {
  double inputs = 0;                 // the final norm's and the LM head's inputs
  double saved = 0;                  // what the loss keeps for its backward
  std::vector<double> forward;       // blocks held during the head's forward only
  std::vector<double> backward;      // blocks held during the head's backward only
  double forward_bytes() const { return sum(forward); }
  double backward_bytes() const { return sum(backward); }

 private:
  static double sum(const std::vector<double>& v) {
    double s = 0;
    for (double b : v) s += b;
    return s;
  }
};
HeadMemory head_memory(const ModelSpec&, const RankShape&);
// One MTP module's activations beyond its transformer block's (activation_bytes of the last
// layer): its norms' and projection's inputs (model.mtp_depth, DeepSeek-V3 §2.2).
double mtp_extra_activation_bytes(const ModelSpec&, const RankShape&);

}  // namespace mfusim::models
