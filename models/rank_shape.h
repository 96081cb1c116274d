#pragma once
// What one rank runs of a layer: its slice of the parallel layout, the micro-batch, the
// kernel features and the weights recipe. Read by the kernel, communication and memory
// accounting.
#include <cstdint>
#include <optional>
#include <vector>

#include "config/scenario.h"
#include "hardware/collectives.h"

namespace mfusim::models {

using config::Recompute;

struct RankShape {
  int tp = 1, cp = 1, ep = 1;
  bool sequence_parallel = true;
  std::int64_t micro_batch = 1;
  std::int64_t seq_len = 4096;
  bool flash_attention = true;
  // config::attention_of; absent (a RankShape built by hand): derived from flash_attention,
  // fp32_autocast and fused_kernels as config::attention_of does (attention_variant below).
  std::optional<config::Attention> attention;
  bool fused_kernels = true;
  Recompute recompute = Recompute::none;
  int bytes_per_element = 2;      // bf16 activations
  // Plain PyTorch AMP (training.master_weights = "fp32-autocast", docs/fidelity.md): fp32
  // parameters cast to bf16 by every forward (and recompute), bf16 weight gradients cast to
  // fp32 .grad, torch cross entropy on .float() logits, eager attention chain without flash.
  bool fp32_autocast = false;
  // fp8 recipe (training.precision = "fp8", Transformer Engine): the linear layers' GEMMs in
  // fp8 with their quantise kernels; attention in fp8 only with fp8_attention; the LM head bf16.
  bool fp8 = false;
  bool fp8_attention = false;
  // features.fp8_recipe for Transformer Engine's linears (tensorwise: delayed scaling; current; mxfp8), and
  // whether the GPU's fp8 GEMMs take any operand layout (Blackwell: no transposed copy of a per-tensor fp8
  // tensor; Hopper's take TN only). Transformer Engine's fp8 recipe docs (docs/cost-model.md).
  config::Fp8Recipe fp8_recipe = config::Fp8Recipe::tensorwise;
  bool fp8_any_layout = false;
  // features.fp8_recipe = "blockwise" (with fp8): DeepSeek-V3's fine-grained quantisation
  // (arXiv 2412.19437 §3.3.2) instead of Transformer Engine's per-tensor cast-transpose: 1x128
  // activation tiles for the forward and input-gradient GEMMs, 128x1 transposed copies for the
  // weight gradient, the fp8 weight transposed per micro-batch (DeepGEMM is NT only, §3.5.2).
  bool fp8_blockwise() const { return fp8_recipe == config::Fp8Recipe::blockwise; }
  // Transformer Engine's per-tensor scaling (delayed or current) on Megatron's TE layers, where TE fuses the
  // quantisation into the norm before a LayerNormLinear and gathers the quantised tensor under sequence
  // parallelism (torchtitan's fp8 is torchao's; docs/cost-model.md 2b).
  bool te_per_tensor_fp8() const {
    return fp8 && !torchtitan && (fp8_recipe == config::Fp8Recipe::tensorwise || fp8_recipe == config::Fp8Recipe::current);
  }
  // moe.dispatcher = "deepep" with moe.fp8_dispatch and ep > 1: the tokens cross the EP dispatch
  // in fp8 1x128 tiles (DeepEP's dispatch takes the fp8 tensor and its scales), quantised before it.
  bool fp8_dispatch = false;
  // moe.shared_in_combine (with DeepEP's dispatcher and ep > 1): the shared experts' term joins the routed
  // one in DeepEP's combine, forward and backward (layer_kernels.cpp's MoE block).
  bool shared_in_combine = false;
  // moe.dispatcher = "deepep" over an EP group spanning more nodes than moe.max_nodes_per_token:
  // DeepSeek-V3's node-limited gate (§2.1.2; its group-limited top-k: the experts in as many groups
  // as the EP group has nodes, a token's top-k taken within the M best groups, each group scored by
  // the sum of its top-2 scores). Its router runs two top-k passes over the [T, E] scores. The gate
  // is the model's (DeepSeek-V3: n_group 8, topk_group 4, its deployment's 8 nodes per EP group);
  // here it follows the deployment: on, with ep_nodes groups, where routing is node-limited.
  bool node_limited_routing = false;
  int ep_nodes = 1;   // nodes (NVLink domains) the EP group spans: the gate's groups
  // DeepSeek-V3's memory measures (moe.recompute_norm_up_proj, moe.fp8_activation_cache;
  // arXiv 2412.19437 §3.2.3, §3.3.2): RMSNorm outputs and MLA up-projection outputs are not
  // kept (recomputed in backward); Linear inputs are cached in fp8 with one fp32 scale per 128.
  bool recompute_norm_up_proj = false;
  bool fp8_activation_cache = false;
  // features.recompute_every: with full recompute, only blocks N, 2N, ... (counted from 1)
  // are checkpointed (torchtitan's selective layer AC); 1 = every block.
  int recompute_every = 1;
  // features.recompute_num_layers (Megatron's block method): per global layer, whether it is checkpointed
  // (the first N layers of each virtual stage); empty: the rule above holds for every layer.
  std::vector<char> recompute_layers;
  // torch's F.cross_entropy over fp32 logits (features.cross_entropy = "fp32"; always with
  // fp32_autocast).
  bool fp32_cross_entropy = false;
  // the same loss under torch.compile (features.cross_entropy = "compiled"): Inductor's fused
  // forward and backward kernels over the bf16 logits (run 34).
  bool compiled_cross_entropy = false;
  // Megatron's gradient-accumulation fusion (its default with Transformer Engine; NeMo's recipes): each
  // wgrad GEMM accumulates into main_grad, fp32 (4) or bf16 (2, features.reduce_dtype); 0 where the
  // gradients are not accumulated by the GEMM: ZeRO-3 / FSDP (per-unit gradients reduce-scattered) and
  // the plain PyTorch autocast recipe (its own cast and add kernels, eager_recipe.cpp), and torchtitan's
  // code (no main_grad: autograd writes .grad).
  int wgrad_accumulate_bytes = 0;
  // torchtitan's Llama block (features.model_code = "torchtitan"; docs/fsdp.md): its eager
  // kernels (fp32 RMSNorm and complex RoPE with their casts, repeat_kv, the input-gradient sums
  // of separate linears), or with fused_kernels what torch.compile leaves of them; per-op
  // SAC's replay stops before the block's last residual add (torch.utils.checkpoint's early stop).
  bool torchtitan = false;
};
// Whether layer `layer` (0-based, in the model) is checkpointed under the shape's recompute.
bool checkpointed(const RankShape&, int layer);
// The shape layer `layer` runs under: without recompute where it is not checkpointed
// (features.recompute_every, recompute_num_layers).
RankShape layer_shape(const RankShape&, int layer);
// features.recompute_num_layers as RankShape::recompute_layers (empty where it does not apply).
std::vector<char> block_recompute_layers(const config::Scenario&);
// The scenario's parallel layout, as hardware::place takes it.
hardware::Layout layout_of(const config::Scenario&);
// The per-rank shape of a scenario (its parallel layout, micro-batch, features
// and weights recipe): the one place that maps a Scenario to a RankShape.
RankShape rank_shape(const config::Scenario&);
// The attention variant a RankShape runs (its `attention`, or the derivation above).
config::Attention attention_variant(const RankShape&);
// The ranks a rank waits for at least once per micro-batch (hardware::CostModel::set_sync_group): its
// tensor-, context- and pipeline-parallel peers (collectives in every layer, the stages' sends), and among
// its data-parallel peers the larger of its ZeRO-3 shard group (a gather per unit) and, for an MoE model,
// its expert-parallel group (an all-to-all per MoE layer), or all of them where delayed scaling's amax
// all-reduce spans them (fp8_amax_over_dp). The data-parallel gradient reduction of ZeRO-0/1/2
// joins the replicas once per step, which averages the wander out (run 40: 430 ms windows, 1.009 at 64).
int sync_group_ranks(const config::Scenario&);
// Per-tensor delayed scaling's amax all-reduce (config::Fp8AmaxReduction, docs/cost-model.md 2b): the ranks
// one all-reduce spans (the stage's tp x dp x cp, tp x cp or tp), 0 where none runs: not fp8 on an fp8 GPU,
// another recipe, torchtitan's code (its float8 scales dynamically), reduce_amax off, or a group of one.
int fp8_amax_group_ranks(const config::Scenario&);
// Whether that all-reduce spans the data-parallel replicas (so every rank waits for all of them at the end of
// each chunk's forward and backward).
bool fp8_amax_over_dp(const config::Scenario&);

}  // namespace mfusim::models
