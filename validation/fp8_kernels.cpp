// validation_fp8_kernels [SCENARIO] [--set KEY=VALUE ...]
// MFUSIM_KERNELS=1 in the environment also lists every kernel of the layer (pass, name, calls, us).
// The fp8 work around the GEMMs of one MoE layer (one forward and one backward of one micro-batch
// on one rank) as the cost model prices it for the scenario (default: the DeepSeek-V3 H800
// scenario), summed in the classes validation/deepseek_profile.py sums DeepSeek's published
// training profile in (github.com/deepseek-ai/profile-data train.json; docs/moe-dualpipe.md).
// The kernels as the lowering prices them: the settled GEMM clock, grouped expert GEMMs, the
// norm and up-projection recompute; times with the launch, without the held-SM slowdown the
// lowering applies beside an EP transfer, and at one GPU's own pace, not the slowest of its group's
// (docs/cost-model.md 2f): a profile's kernel durations are one GPU's, its waits for the group are idle time.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include "config/loader.h"
#include "validation/scenario_args.h"
#include "hardware/cost_model.h"
#include "layer/moe_dispatch.h"
#include "models/layer_kernels.h"
#include "models/rank_shape.h"

using namespace mfusim;

namespace {
const char* class_of(std::string_view n) {
  if (n == "fp8_quant_x" || n == "fp8_quant_dy" || n == "fp8_quant_dispatch" || n == "fp8_quant_combine_grad" ||
      n == "fp8_cache_swiglu_in" || n == "fp8_cast_x" || n == "fp8_cast_dy")
    return "1x128 quantisation";
  if (n == "fp8_quant_t_x" || n == "fp8_quant_t_dy") return "128x1 transposed quantisation";
  if (n == "fp8_weight_transpose") return "fp8 weight transpose";
  if (n == "fp8_scale_transpose") return "scale transpose";
  if (n == "fp8_cache_swiglu_in_dequant") return "fp8 cache dequantise";
  if (n == "fp8_cache_attn_out") return "attention output cache (quantise)";
  if (n == "fp8_cache_attn_out_dequant") return "attention output cache (dequantise)";
  return nullptr;
}
// Not fp8 work; printed beside it for the comparison with the profile's MLA kernels.
const char* other_class_of(std::string_view n) {
  if (n.rfind("mla_k_concat", 0) == 0 || n.rfind("mla_v_copy", 0) == 0) return "MLA K and V copies";
  if (n.rfind("rope_", 0) == 0) return "rotary embedding";
  return nullptr;
}
}  // namespace

int main(int argc, char** argv) {
  std::string path;
  config::LoadOptions lo;
  if (!validation::scenario_args(argc, argv, path, lo)) return 2;
  try {
    const config::Scenario s = config::load_scenario(path, lo).base;
    if (!s.model.is_moe()) {
      std::fprintf(stderr, "%s: not a MoE model\n", path.c_str());
      return 2;
    }
    hardware::CostModel cost(s.hardware, s.training.precision, s.calibration ? &*s.calibration : nullptr,
                             s.features.cuda_graphs);
    const models::RankShape sh = models::rank_shape(s);
    models::settle_gemm_duty(s.model, sh, cost);
    const int layer = std::min(s.model.moe->dense_layers, s.model.layers - 1);
    auto ks = models::layer_kernels(s.model, layer, sh);
    layer::scale_expert_kernels(s, ks.f, ks.f_experts, ks.f_experts_end);
    layer::scale_expert_kernels(s, ks.b, ks.b_experts, ks.b_experts_end);
    layer::scale_expert_wgrads(s, ks.w);
    layer::group_expert_gemms(s, ks.f, ks.f_experts, ks.f_experts_end, false);
    layer::group_expert_gemms(s, ks.b, ks.b_experts, ks.b_experts_end, false);
    layer::group_expert_gemms(s, ks.w, 0, ks.w.size(), true);
    if (s.moe.recompute_norm_up_proj) layer::add_norm_up_proj_recompute(ks.f, ks.b);
    std::map<std::string, std::pair<int, double>> cls, other;
    double gemm = 0, all = 0, fp8 = 0;
    const char* list = std::getenv("MFUSIM_KERNELS");
    const bool listing = list != nullptr && std::string(list) == "1";
    for (const auto* v : {&ks.f, &ks.b, &ks.w})
      for (const hardware::Kernel& k : *v) {
        const double t = cost.time(k);
        if (listing)
          std::printf("%c %-32s %4d %9.1f  %s\n", v == &ks.f ? 'F' : v == &ks.b ? 'B' : 'W', k.name, k.count, t * 1e6,
                      k.kind == hardware::KernelKind::gemm ? "gemm" : k.kind == hardware::KernelKind::memory ? "" : "attention");
        all += t;
        if (k.kind == hardware::KernelKind::gemm) gemm += t;
        if (const char* c = class_of(k.name)) {
          cls[c].first += k.count;
          cls[c].second += t;
          fp8 += t;
        }
        if (const char* c = other_class_of(k.name)) {
          other[c].first += k.count;
          other[c].second += t;
        }
      }
    std::printf("%s: MoE layer %d, precision %s, fp8 recipe %s\n", path.c_str(), layer,
                config::to_string(s.training.precision), config::to_string(s.features.fp8_recipe));
    std::printf("%-50s %5s %9s\n", "class", "calls", "us/layer");
    for (const auto& [c, v] : cls) std::printf("%-50s %5d %9.0f\n", c.c_str(), v.first, v.second * 1e6);
    std::printf("%-50s %5s %9.0f\n", "fp8 work around the GEMMs", "", fp8 * 1e6);
    for (const auto& [c, v] : other) std::printf("%-50s %5d %9.0f\n", c.c_str(), v.first, v.second * 1e6);
    std::printf("%-50s %5s %9.0f\n", "GEMMs", "", gemm * 1e6);
    std::printf("%-50s %5s %9.0f\n", "all kernels of the layer", "", all * 1e6);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  return 0;
}
