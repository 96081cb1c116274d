// Megatron's gradient-accumulation fusion: the wgrad GEMM's epilogue accumulates into main_grad
// (models::RankShape::wgrad_accumulate_bytes, hardware::Kernel::accumulate_bytes), priced with the
// exposed share measured in run 19 (validation/runs/run19-wgrad-acc).
#include <doctest/doctest.h>

#include <string>

#include "config/loader.h"
#include "hardware/cost_model.h"
#include "models/layer_kernels.h"
#include "models/rank_shape.h"
#include "tests/hardware/test_helpers.h"

using namespace mfusim;

namespace {
const std::string kRoot = std::string(MFUSIM_TEST_DIR) + "/..";
config::Scenario scen(const std::string& extra) {
  const std::string text = "model = \"llama3-8b\"\nhardware = \"h100-sxm\"\n[cluster]\ngpus = 8\n[training]\nseq_len = 4096\n"
                           "global_batch = 8\nmicro_batch = 1\n[parallel]\ndistributed_optimizer = true\n" + extra;
  return config::load_scenario_string(text, "wgrad.toml").base;
}
}  // namespace

TEST_CASE("wgrad accumulation: Megatron's fused accumulation into main_grad, not under FSDP or plain autocast") {
  CHECK(models::rank_shape(scen("")).wgrad_accumulate_bytes == 4);   // grad_reduce_in_fp32, Megatron's default
  CHECK(models::rank_shape(scen("[features]\nreduce_dtype = \"bf16\"\n")).wgrad_accumulate_bytes == 2);
  CHECK(models::rank_shape(scen("zero_stage = 3\n")).wgrad_accumulate_bytes == 0);
  const auto sh = models::rank_shape(scen(""));
  const auto lk = models::layer_kernels(scen("").model, 0, sh);
  int tagged = 0;
  for (const auto& k : lk.w)
    if (k.kind == hardware::KernelKind::gemm) {
      CHECK(k.accumulate_bytes == 4);
      ++tagged;
    }
  CHECK(tagged >= 4);   // qkv, attention out, MLP up, MLP down
  for (const auto& k : lk.f) CHECK(k.accumulate_bytes == 0);
}

TEST_CASE("wgrad accumulation: the epilogue's cost against run 19's measurement") {
  // Run 19, Llama 3.1 8B tp1 cp2, the QKV wgrad (m 4096 x n 6144, k 4096 tokens), sustained on the
  // H200: bf16 output 311.78 us; accumulated into fp32 337.28 us (x1.082), into bf16 315.78 (x1.013).
  const hardware::CostModel& cm = hardware::testing::shipped_h200_cost_model();
  hardware::Kernel g;
  g.kind = hardware::KernelKind::gemm;
  g.m = 4096;
  g.n = 6144;
  g.k = 4096;
  auto t = [&](int acc) {
    hardware::Kernel x = g;
    x.accumulate_bytes = acc;
    return cm.time(x) - cm.launch_time(x);
  };
  const double plain = t(0), f32 = t(4), b16 = t(2);
  CHECK(f32 / plain == doctest::Approx(337.28 / 311.78).epsilon(0.03));
  CHECK(b16 / plain == doctest::Approx(315.78 / 311.78).epsilon(0.02));
  CHECK(f32 > b16);
  CHECK(b16 > plain);
}

TEST_CASE("wgrad accumulation: a grouped expert call accumulates into every expert's weight, outside its rate") {
  const hardware::CostModel& cm = hardware::testing::shipped_h200_cost_model();
  hardware::Kernel g;
  g.kind = hardware::KernelKind::gemm;
  g.m = 2048;
  g.n = 1408;
  g.k = 8 * 512;   // eight experts' tokens, grouped (layer/moe_dispatch.cpp group_expert_gemms)
  auto t = [&](int acc, int outputs, double grouped) {
    hardware::Kernel x = g;
    x.accumulate_bytes = acc;
    x.accumulate_outputs = outputs;
    x.grouped_eff = grouped;
    return cm.time(x) - cm.launch_time(x);
  };
  const double one = t(4, 1, 0) - t(0, 1, 0), eight = t(4, 8, 0) - t(0, 8, 0);
  CHECK(one > 0);
  CHECK(eight == doctest::Approx(8 * one).epsilon(1e-9));
  // The grouped rate divides the main loop only: the epilogue is the same at any grouped_eff.
  CHECK(t(4, 8, 0.5) - t(0, 8, 0.5) == doctest::Approx(eight).epsilon(1e-9));
  CHECK(t(0, 8, 0.5) == doctest::Approx(2 * t(0, 8, 0)).epsilon(1e-9));
}

TEST_CASE("wgrad accumulation: not the MoE router (a torch linear), not torchtitan's code") {
  const std::string moe = "model = \"mixtral-8x7b\"\nhardware = \"h100-sxm\"\n[cluster]\ngpus = 8\n[training]\nseq_len = 4096\n"
                          "global_batch = 8\nmicro_batch = 1\n[parallel]\nep = 8\ndistributed_optimizer = true\n";
  const auto s = config::load_scenario_string(moe, "moe.toml").base;
  const auto sh = models::rank_shape(s);
  REQUIRE(sh.wgrad_accumulate_bytes == 4);
  bool router = false, expert = false;
  for (const auto& k : models::layer_kernels(s.model, 0, sh).w) {
    if (std::string(k.name) == "router_wgrad") {
      router = true;
      CHECK(k.accumulate_bytes == 0);
    }
    if (std::string(k.name).rfind("expert_", 0) == 0) {
      expert = true;
      CHECK(k.accumulate_bytes == 4);
    }
  }
  CHECK(router);
  CHECK(expert);
  CHECK(models::rank_shape(scen("[features]\nmodel_code = \"torchtitan\"\n")).wgrad_accumulate_bytes == 0);
}
