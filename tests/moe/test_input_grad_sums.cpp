// The gradient sums of a tensor that several modules read (models/layer_kernels.cpp,
// models::detail::input_grad_sum): MLA's norm output (two down projections), the MoE block's norm
// output (router, dispatch, shared experts), and Megatron's forward add of the shared experts'
// output; with moe.shared_in_combine (DeepSeek's code) DeepEP's combine takes the shared experts' term
// (its profile shows one add per block backward and none in the forward). MLA's down projections and
// their sum run over the rank's own sequence-parallel tokens.
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "config/loader.h"
#include "hardware/cost_model.h"
#include "models/layer_kernels.h"
#include "models/rank_shape.h"
#include "tests/shipped_scenario.h"

using namespace mfusim;

namespace {
// Index of the first kernel named `name` in `ks`, or -1.
int index_of(const std::vector<hardware::Kernel>& ks, std::string_view name) {
  for (std::size_t i = 0; i < ks.size(); ++i)
    if (name == ks[i].name) return static_cast<int>(i);
  return -1;
}
int calls(const std::vector<hardware::Kernel>& ks, std::string_view name) {
  int n = 0;
  for (const auto& k : ks)
    if (name == k.name) n += k.count;
  return n;
}
struct Layer {
  config::Scenario s;
  models::RankShape sh;
  models::LayerKernels lk;
  double tokens = 0;   // the norms' tokens of one micro-batch on one rank
};
Layer moe_layer(const std::string& file, const std::vector<std::string>& sets = {}) {
  Layer l{testing::shipped_scenario(file, sets), {}, {}, 0};
  l.sh = models::rank_shape(l.s);
  l.lk = models::layer_kernels(l.s.model, l.s.model.moe->dense_layers, l.sh);
  const double t = static_cast<double>(l.sh.micro_batch * l.sh.seq_len) / l.sh.cp;
  l.tokens = l.sh.sequence_parallel ? t / l.sh.tp : t;
  return l;
}
}  // namespace

TEST_CASE("DeepSeek's code: one gradient sum per block's norm output, none in the forward, placed as its profile shows") {
  const Layer l = moe_layer("2048xh800_deepseek_v3.toml");
  REQUIRE(l.s.moe.shared_in_combine);
  const auto& b = l.lk.b;
  const double h = static_cast<double>(l.s.model.hidden);
  CHECK(calls(b, "mla_norm_dx_sum") == 1);
  CHECK(calls(b, "moe_norm_dx_sum") == 1);   // router + (dispatch with the shared experts in DeepEP's combine)
  CHECK(index_of(l.lk.f, "moe_shared_add") < 0);
  // Each a bf16 add over [T, h]: two read, one written.
  const auto& sum = b[static_cast<std::size_t>(index_of(b, "moe_norm_dx_sum"))];
  CHECK(sum.bytes == doctest::Approx(3 * 2 * l.tokens * h));
  // In the backward's order: after the router's dgrad and every expert's, before the MoE block's norm
  // backward; the MLA sum after both down projections' dgrads, before the attention block's norm backward.
  const int moe_sum = index_of(b, "moe_norm_dx_sum"), mla_sum = index_of(b, "mla_norm_dx_sum");
  CHECK(index_of(b, "router_dgrad") < moe_sum);
  CHECK(index_of(b, "shared_fc1_dgrad") < moe_sum);
  CHECK(index_of(b, "expert_fc1_dgrad") < moe_sum);
  CHECK(moe_sum < mla_sum);
  CHECK(index_of(b, "q_down_dgrad") < mla_sum);
  CHECK(index_of(b, "kv_down_dgrad") < mla_sum);
  // The next norm backward after each sum is its block's (the MoE block's, then the attention block's).
  for (const int at : {moe_sum, mla_sum}) {
    int next_norm = -1;
    for (std::size_t i = static_cast<std::size_t>(at) + 1; i < b.size() && next_norm < 0; ++i)
      if (std::string_view(b[i].name).find("norm_bwd") != std::string_view::npos) next_norm = static_cast<int>(i);
    REQUIRE(next_norm > at);
    CHECK(std::string_view(b[static_cast<std::size_t>(next_norm)].name) == "rmsnorm_bwd");
    for (int i = at + 1; i < next_norm; ++i) CHECK(b[static_cast<std::size_t>(i)].kind != hardware::KernelKind::gemm);
  }
  // Priced against DeepSeek's own measurement of these adds (profile-data train.json: eight bf16 adds over
  // [4096, 7168] in one F&B pair, 54-60 us each on the H800, mean 56.9 us): the H200's copy fit carried to
  // the H800 by HBM bandwidth prices one at about 1.2x.
  REQUIRE(l.s.calibration.has_value());
  hardware::CostModel h800(l.s.hardware, l.s.training.precision, &*l.s.calibration, false);
  const double t = h800.time(sum) - h800.launch_time(sum);
  MESSAGE("a [4096, 7168] bf16 add on the H800: " << t * 1e6 << " us (DeepSeek's profile: 54-60 us)");
  CHECK(t > 54e-6 * 0.9);
  CHECK(t < 60e-6 * 1.25);
}

TEST_CASE("moe.shared_in_combine, not the precision, decides where the shared experts' term joins") {
  // The same scenario in bf16 keeps DeepEP's combine taking the shared term.
  const Layer bf16 = moe_layer("2048xh800_deepseek_v3.toml", {"training.precision=bf16"});
  CHECK(calls(bf16.lk.b, "moe_norm_dx_sum") == 1);
  CHECK(index_of(bf16.lk.f, "moe_shared_add") < 0);
  // Without the key: Megatron's MoELayer (two sums, the forward add), at the same fp8 recipe.
  const Layer off = moe_layer("2048xh800_deepseek_v3.toml", {"moe.shared_in_combine=false"});
  CHECK(calls(off.lk.b, "moe_norm_dx_sum") == 2);
  CHECK(index_of(off.lk.f, "moe_shared_add") >= 0);
  // It acts with DeepEP over ep > 1 only (as moe.fp8_dispatch): Megatron's all-to-all adds the shared output.
  const Layer a2a = moe_layer("2048xh800_deepseek_v3.toml", {"moe.dispatcher=alltoall"});
  CHECK(calls(a2a.lk.b, "moe_norm_dx_sum") == 2);
  CHECK(index_of(a2a.lk.f, "moe_shared_add") >= 0);
  // A model without shared experts: an error at its key.
  config::LoadOptions o;
  o.overrides = {"moe.dispatcher=deepep", "moe.shared_in_combine=true"};
  const std::string root = std::filesystem::path(MFUSIM_TEST_DIR).parent_path().string();
  CHECK_THROWS_WITH_AS(config::load_scenario(root + "/scenarios/64xgb200_mixtral_8x7b.toml", o),
                       doctest::Contains("'moe.shared_in_combine': the model has no shared experts"), config::ConfigError);
}

TEST_CASE("Megatron's MoELayer: the shared experts' output added in the forward, three gradient paths summed") {
  // The Megatron-Bridge H100 scenario: DeepEP through Megatron's flex dispatcher, bf16 tokens.
  const Layer meg = moe_layer("1024xh100_deepseek_v3_megatron.toml");
  CHECK_FALSE(meg.s.moe.shared_in_combine);
  CHECK(calls(meg.lk.b, "moe_norm_dx_sum") == 2);
  CHECK(calls(meg.lk.b, "mla_norm_dx_sum") == 1);
  // tp 2 with sequence parallelism: MLA's duplicated down projections read the rank's shard (Megatron-Core's
  // q_compressed: [s / TP, b, q_lora_rank]), so they and their sum run over T / tp tokens, the
  // column-parallel up projections over the gathered T.
  REQUIRE(meg.sh.tp == 2);
  REQUIRE(meg.sh.sequence_parallel);
  const double h = static_cast<double>(meg.s.model.hidden), T = meg.tokens * meg.sh.tp;
  const double ql = static_cast<double>(meg.s.model.mla->q_lora_rank);
  CHECK(meg.lk.b[static_cast<std::size_t>(index_of(meg.lk.b, "mla_norm_dx_sum"))].bytes == doctest::Approx(3 * 2 * meg.tokens * h));
  CHECK(meg.lk.f[static_cast<std::size_t>(index_of(meg.lk.f, "q_down"))].flops == doctest::Approx(2 * meg.tokens * h * ql));
  CHECK(meg.lk.f[static_cast<std::size_t>(index_of(meg.lk.f, "q_up"))].m == static_cast<std::int64_t>(T));
  const int add = index_of(meg.lk.f, "moe_shared_add");
  REQUIRE(add >= 0);
  CHECK(index_of(meg.lk.f, "shared_fc2") < add);
  CHECK(index_of(meg.lk.f, "moe_unpermute") < add);
  CHECK(meg.lk.f[static_cast<std::size_t>(add)].bytes ==
        doctest::Approx(3 * 2 * meg.tokens * static_cast<double>(meg.s.model.hidden)));
  // The DeepSeek scenario with Megatron's all-to-all dispatcher: the same.
  const Layer a2a = moe_layer("2048xh800_deepseek_v3.toml", {"moe.dispatcher=alltoall"});
  CHECK(calls(a2a.lk.b, "moe_norm_dx_sum") == 2);
  CHECK(index_of(a2a.lk.f, "moe_shared_add") >= 0);
  // No shared experts (Mixtral): the router and the dispatch, one add, nothing in the forward.
  const Layer mix = moe_layer("64xgb200_mixtral_8x7b.toml");
  CHECK(calls(mix.lk.b, "moe_norm_dx_sum") == 1);
  CHECK(index_of(mix.lk.f, "moe_shared_add") < 0);
  CHECK(calls(mix.lk.b, "mla_norm_dx_sum") == 0);
}

TEST_CASE("a dense block whose norms feed one fused linear each has no gradient sum") {
  const auto s = testing::shipped_scenario("128xh100_70b.toml");
  const auto lk = models::layer_kernels(s.model, 0, models::rank_shape(s));
  for (const auto* ks : {&lk.f, &lk.b, &lk.w})
    for (const auto& k : *ks) {
      const std::string_view n = k.name;
      CHECK(n.find("_dx_sum") == std::string_view::npos);
      CHECK(n != "moe_shared_add");
    }
}
