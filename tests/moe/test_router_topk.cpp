// The MoE router's top-k (models/layer_kernels.cpp): priced by the calibration's `topk` family (run 28,
// torch.topk measured on the H200: a radix select bound by the SMs, not HBM), and, under DeepSeek-V3's
// node-limited gate, a second pass over the same scores for the group scores.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "hardware/cost_model.h"
#include "models/layer_kernels.h"
#include "models/rank_shape.h"
#include "tests/shipped_scenario.h"

using namespace mfusim;

namespace {
std::vector<const hardware::Kernel*> named(const std::vector<hardware::Kernel>& ks, const std::string& name) {
  std::vector<const hardware::Kernel*> out;
  for (const auto& k : ks)
    if (name == k.name) out.push_back(&k);
  return out;
}
}  // namespace

TEST_CASE("the router's top-k runs at the measured top-k rate, the same on H800 as on H200") {
  const auto s = testing::shipped_scenario("2048xh800_deepseek_v3.toml");
  REQUIRE(s.calibration.has_value());
  const auto& cal = *s.calibration;
  const double rate = cal.memory.family_bandwidth[static_cast<int>(hardware::MemFamily::topk)];
  // run 28's fit (hardware/calibration/h200-fit-report.txt): ~92 GB/s on the model's bytes, far below HBM.
  CHECK(rate > 60e9);
  CHECK(rate < 150e9);
  const auto sh = models::rank_shape(s);
  const int layer = s.model.moe->dense_layers;
  const auto ks = models::layer_kernels(s.model, layer, sh);
  const auto topk = named(ks.f, "router_topk");
  REQUIRE(topk.size() == 1);
  CHECK(topk[0]->family == hardware::MemFamily::topk);
  // Backward: zeros + scatter of the k gradients, an ordinary memory kernel.
  const auto bwd = named(ks.b, "router_topk_bwd");
  REQUIRE(bwd.size() == 1);
  CHECK(bwd[0]->family == hardware::MemFamily::generic);

  hardware::CostModel h800(s.hardware, s.training.precision, &cal, false);
  auto h200_hw = s.hardware;
  h200_hw.hbm_bandwidth = 4.8e12;   // the H200's HBM3e: the top-k's price does not follow it
  hardware::CostModel h200(h200_hw, s.training.precision, &cal, false);
  const double t800 = h800.time(*topk[0]), t200 = h200.time(*topk[0]);
  CHECK(t800 == doctest::Approx(t200).epsilon(1e-12));
  // At DeepSeek-V3's shape (4096 tokens x 256 experts, k 8): run 28 measured 73 us on the H200 and
  // DeepSeek's profile 66-79 us per gatherTopK on the H800; the copy bandwidth would give ~6 us.
  CHECK(t800 > 40e-6);
  CHECK(t800 < 90e-6);
  hardware::Kernel plain = *topk[0];
  plain.family = hardware::MemFamily::generic;
  CHECK(h800.time(plain) < t800 / 5);
}

TEST_CASE("node-limited routing adds the group top-k pass; without it (one node's EP, or all-to-all) there is none") {
  const auto count_group = [](const config::Scenario& s) {
    const auto sh = models::rank_shape(s);
    const auto ks = models::layer_kernels(s.model, s.model.moe->dense_layers, sh);
    return named(ks.f, "router_group_topk").size();
  };
  const auto deepseek = testing::shipped_scenario("2048xh800_deepseek_v3.toml");
  CHECK(models::rank_shape(deepseek).node_limited_routing);
  CHECK(models::rank_shape(deepseek).ep_nodes == 8);
  CHECK(count_group(deepseek) == 1);
  // EP 64 over 8 nodes with M = 8: every node may be reached, the gate has no group limit.
  CHECK(count_group(testing::shipped_scenario("2048xh800_deepseek_v3.toml", {"moe.max_nodes_per_token=8"})) == 0);
  // Megatron's all-to-all dispatcher: a plain top-k.
  CHECK(count_group(testing::shipped_scenario("2048xh800_deepseek_v3.toml", {"moe.dispatcher=alltoall"})) == 0);
}
