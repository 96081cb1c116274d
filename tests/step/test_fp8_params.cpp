// features.fp8_params (Megatron's --fp8-param-gather): the linear weights held in fp8, no bf16
// copy (2 bytes less per linear weight than bf16 + Transformer Engine's fp8 copies), and the
// distributed optimizer's parameter all-gather moving them as fp8 (1 byte less each).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "step/lower.h"
#include "step/simulate.h"
#include "tests/shipped_scenario.h"

using namespace mfusim;

namespace {
// Llama-2-70B's linear weights per layer (q, k, v, o; gate, up, down), unsharded.
constexpr double kLinear = 8192.0 * (8192 + 2 * 1024 + 8192) + 3 * 8192.0 * 28672;
}  // namespace

TEST_CASE("fp8_params: 2 bytes less per linear weight held, 1 byte less per linear weight gathered") {
  const std::vector<std::string> fp8 = {"training.precision=fp8", "features.attention=flash"};
  for (const bool overlap : {false, true}) {
    INFO("overlap_param_gather " << overlap);
    std::vector<std::string> base = fp8;
    base.push_back(std::string("features.overlap_param_gather=") + (overlap ? "true" : "false"));
    std::vector<std::string> with = base;
    with.push_back("features.fp8_params=true");
    const auto s = testing::shipped_scenario("128xh100_70b.toml", base);
    const auto a = step::lower(s), b = step::lower(testing::shipped_scenario("128xh100_70b.toml", with));
    REQUIRE(a.params_bytes.size() == 4);   // tp 8, pp 4: 20 layers per stage
    for (std::size_t r = 0; r < a.params_bytes.size(); ++r) {
      INFO("rank " << r);
      const double linear = 20 * kLinear / s.parallel.tp;
      CHECK(a.params_bytes[r] - b.params_bytes[r] == doctest::Approx(2 * linear).epsilon(1e-9));
      CHECK(a.grads_bytes[r] == b.grads_bytes[r]);
      CHECK(a.optimizer_bytes[r] == b.optimizer_bytes[r]);
      CHECK(a.dp_gather_bytes[r] - b.dp_gather_bytes[r] == doctest::Approx(linear).epsilon(1e-9));
    }
    // A smaller gather never makes the step slower.
    CHECK(step::simulate(testing::shipped_scenario("128xh100_70b.toml", with)).step_time_s <=
          step::simulate(s).step_time_s);
  }
}

TEST_CASE("fp8_params under zero_stage 3: each unit gathered in fp8, the held shard 1 byte per linear weight") {
  // Megatron-FSDP (features.megatron_fsdp: its bf16 shard beside the fp32 master; --fp8-param-gather is Megatron's flag).
  const std::vector<std::string> z3 = {"training.precision=fp8", "features.attention=flash", "parallel.zero_stage=3",
                                       "parallel.pp=1", "parallel.tp=8", "training.micro_batch=1",
                                       "features.megatron_fsdp=true"};
  std::vector<std::string> with = z3, ag = z3;
  with.push_back("features.fp8_params=true");
  ag.push_back("features.fp8_all_gather=true");
  const auto s = testing::shipped_scenario("128xh100_70b.toml", z3);
  const auto a = step::lower(s), b = step::lower(testing::shipped_scenario("128xh100_70b.toml", with));
  const double dp = s.parallel.dp;
  // 80 layers' linear weights, sharded over tp and the dp shard group: 1 byte less each.
  CHECK(a.params_bytes[0] - b.params_bytes[0] == doctest::Approx(80 * kLinear / 8 / dp).epsilon(1e-6));
  // The gathers move what features.fp8_all_gather moves.
  CHECK(step::simulate(testing::shipped_scenario("128xh100_70b.toml", with)).step_time_s ==
        doctest::Approx(step::simulate(testing::shipped_scenario("128xh100_70b.toml", ag)).step_time_s).epsilon(1e-12));
}
