// The one place that maps a Scenario to the per-rank shape the kernel, communication and
// memory accounting read.
#include "models/rank_shape.h"

#include <algorithm>

#include "hardware/calibration.h"
#include "models/stage_split.h"
#include "schedules/schedule.h"

namespace mfusim::models {

hardware::Layout layout_of(const config::Scenario& s) {
  const auto& P = s.parallel;
  return hardware::Layout{P.tp, P.cp, P.ep, P.dp, P.pp};
}

config::Attention attention_variant(const RankShape& r) {
  using config::Attention;
  if (r.attention) return *r.attention;
  if (r.flash_attention) return Attention::flash;
  if (r.fp32_autocast) return Attention::torch_eager;
  return r.fused_kernels ? Attention::megatron_unfused : Attention::megatron_unfused_fp32;
}

bool checkpointed(const RankShape& r, int layer) {
  if (r.recompute == Recompute::none) return false;
  if (!r.recompute_layers.empty())
    return layer >= 0 && layer < static_cast<int>(r.recompute_layers.size()) &&
           r.recompute_layers[static_cast<std::size_t>(layer)] != 0;
  return r.recompute != Recompute::full || r.recompute_every <= 1 || (layer + 1) % r.recompute_every == 0;
}

RankShape layer_shape(const RankShape& r, int layer) {
  RankShape shape = r;
  if (!checkpointed(r, layer)) shape.recompute = Recompute::none;
  return shape;
}

std::vector<char> block_recompute_layers(const config::Scenario& s) {
  const auto& f = s.features;
  if (f.recompute != Recompute::full || f.recompute_num_layers <= 0) return {};
  // Megatron's TransformerBlock checkpoints layers 0 .. N-1 of its own chunk (block method): the
  // chunks are the virtual stages of the schedule's split.
  const int stages = s.parallel.pp * schedules::chunks_for(config::to_string(s.schedule.name), s.parallel.vpp);
  std::vector<char> on(static_cast<std::size_t>(std::max(0, s.model.layers)), 0);
  for (const auto& stage : split_layers(s, std::max(1, stages)))
    for (std::size_t i = 0; i < stage.size() && static_cast<int>(i) < f.recompute_num_layers; ++i)
      on[static_cast<std::size_t>(stage[i])] = 1;
  return on;
}

RankShape rank_shape(const config::Scenario& s) {
  RankShape sh;
  sh.tp = s.parallel.tp;
  sh.cp = s.parallel.cp;
  sh.ep = s.parallel.ep;
  sh.sequence_parallel = s.parallel.sequence_parallel;
  sh.micro_batch = s.training.micro_batch;
  sh.seq_len = s.training.seq_len;
  sh.attention = config::attention_of(s);
  sh.flash_attention = config::fused_attention(*sh.attention);
  sh.fused_kernels = s.features.fused_kernels;
  sh.recompute = s.features.recompute;
  sh.recompute_every = s.features.recompute_every;
  sh.recompute_layers = block_recompute_layers(s);
  sh.fp32_cross_entropy = s.features.cross_entropy == config::CrossEntropy::fp32;
  sh.compiled_cross_entropy = s.features.cross_entropy == config::CrossEntropy::compiled;
  sh.torchtitan = s.features.model_code == config::ModelCode::torchtitan;
  sh.bytes_per_element = 2;
  sh.fp32_autocast = s.training.master_weights == config::MasterWeights::fp32_autocast;
  sh.fp8 = s.training.precision == hardware::Precision::fp8 && s.hardware.peak_flops_fp8 > 0;
  sh.fp8_attention = s.features.fp8_attention;
  sh.fp8_recipe = s.features.fp8_recipe;
  sh.fp8_any_layout = hardware::gpu_family(s.hardware.name) == "blackwell";
  sh.fp8_dispatch = s.moe.dispatcher == config::MoeDispatcher::deepep && s.moe.fp8_dispatch && s.parallel.ep > 1;
  if (s.moe.dispatcher == config::MoeDispatcher::deepep && s.parallel.ep > 1) {
    // The EP group's nodes as the dispatch places it (layer/moe_dispatch.cpp: ep.domains); only the
    // node-limited gate reads them.
    sh.ep_nodes = std::max(1, hardware::place(layout_of(s), s.hardware).ep.domains);
    sh.node_limited_routing = sh.ep_nodes > s.moe.max_nodes_per_token;
    sh.shared_in_combine = s.moe.shared_in_combine;
  }
  sh.recompute_norm_up_proj = s.moe.recompute_norm_up_proj;
  sh.fp8_activation_cache = s.moe.fp8_activation_cache;
  sh.wgrad_accumulate_bytes =
      sh.fp32_autocast || sh.torchtitan || s.parallel.zero() >= 3 ? 0 : (s.features.reduce_fp32 ? 4 : 2);
  return sh;
}

int fp8_amax_group_ranks(const config::Scenario& s) {
  const auto& f = s.features;
  if (s.training.precision != hardware::Precision::fp8 || s.hardware.peak_flops_fp8 <= 0 ||
      f.fp8_recipe != config::Fp8Recipe::tensorwise || f.model_code != config::ModelCode::megatron ||
      f.fp8_amax_reduction == config::Fp8AmaxReduction::none)
    return 0;
  const auto& P = s.parallel;
  int n = std::max(1, P.tp);
  if (f.fp8_amax_reduction != config::Fp8AmaxReduction::tp) n *= std::max(1, P.cp);
  if (f.fp8_amax_reduction == config::Fp8AmaxReduction::tp_dp_cp) n *= std::max(1, P.dp);
  return n > 1 ? n : 0;
}

bool fp8_amax_over_dp(const config::Scenario& s) {
  return s.parallel.dp > 1 && s.features.fp8_amax_reduction == config::Fp8AmaxReduction::tp_dp_cp &&
         fp8_amax_group_ranks(s) > 0;
}

int sync_group_ranks(const config::Scenario& s) {
  const auto& P = s.parallel;
  int dp_peers = 1;
  if (P.zero() >= 3) dp_peers = P.shard();
  if (s.model.is_moe() && P.ep > 1) dp_peers = std::max(dp_peers, P.ep);
  if (fp8_amax_over_dp(s)) dp_peers = P.dp;
  dp_peers = std::clamp(dp_peers, 1, std::max(1, P.dp));
  return std::max(1, P.tp) * std::max(1, P.cp) * std::max(1, P.pp) * dp_peers;
}

}  // namespace mfusim::models
