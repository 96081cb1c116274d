// features.recompute_num_layers: Megatron's --recompute-method block --recompute-num-layers N, the first N
// layers of each model chunk fully recomputed (models::block_recompute_layers).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "config/loader.h"
#include "models/flops.h"
#include "models/rank_shape.h"
#include "step/simulate.h"
#include "study/plan.h"
#include "tests/shipped_scenario.h"

using namespace mfusim;

namespace {

config::Scenario eight_b(std::vector<std::string> sets) { return mfusim::testing::shipped_scenario("8xh100_llama3_8b.toml", sets); }

std::vector<int> flagged(const config::Scenario& s) {
  std::vector<int> out;
  const auto on = models::block_recompute_layers(s);
  for (std::size_t i = 0; i < on.size(); ++i)
    if (on[i]) out.push_back(static_cast<int>(i));
  return out;
}

}  // namespace

TEST_CASE("recompute_num_layers: the first N layers of each chunk, as Megatron's TransformerBlock checkpoints them") {
  // 32 layers on pp 2 x vpp 2 (interleaved): four chunks of 8, layers 0-7, 8-15, 16-23, 24-31.
  auto s = eight_b({"features.recompute=\"full\"", "features.recompute_num_layers=3", "parallel.pp=2", "parallel.vpp=2",
                    "schedule.name=\"interleaved-1f1b\""});
  CHECK(flagged(s) == std::vector<int>{0, 1, 2, 8, 9, 10, 16, 17, 18, 24, 25, 26});
  // The V-shaped schedules hold two chunks per rank too: pp 2 under zb-v is four chunks.
  s = eight_b({"features.recompute=\"full\"", "features.recompute_num_layers=1", "parallel.pp=2", "schedule.name=\"zb-v\""});
  CHECK(flagged(s) == std::vector<int>{0, 8, 16, 24});
  // One chunk (pp 1): the model's first N layers; N above a chunk's layers checkpoints them all.
  s = eight_b({"features.recompute=\"full\"", "features.recompute_num_layers=5"});
  CHECK(flagged(s) == std::vector<int>{0, 1, 2, 3, 4});
  s = eight_b({"features.recompute=\"full\"", "features.recompute_num_layers=100"});
  CHECK(flagged(s).size() == 32);
  // 0 (the default) is every layer: no per-layer list.
  CHECK(models::block_recompute_layers(eight_b({"features.recompute=\"full\""})).empty());
}

TEST_CASE("recompute_num_layers: the step recomputes N / L of the layers, its memory between none and full") {
  step::SimulateOptions opt;
  const auto none = step::simulate(eight_b({}), opt);
  const auto full = step::simulate(eight_b({"features.recompute=\"full\""}), opt);
  const auto five = step::simulate(eight_b({"features.recompute=\"full\"", "features.recompute_num_layers=5"}), opt);
  const auto all = step::simulate(eight_b({"features.recompute=\"full\"", "features.recompute_num_layers=32"}), opt);
  REQUIRE(full.breakdown.recompute > 0);
  // Llama 3 8B's layers are alike: five of 32 recompute 5/32 of the full recompute's time.
  CHECK(five.breakdown.recompute == doctest::Approx(full.breakdown.recompute * 5.0 / 32.0).epsilon(0.01));
  CHECK(none.step_time_s < five.step_time_s);
  CHECK(five.step_time_s < full.step_time_s);
  CHECK(full.memory.peak_gib < five.memory.peak_gib);
  CHECK(five.memory.peak_gib < none.memory.peak_gib);
  // Every layer of the one chunk: the same step as full recompute.
  CHECK(all.step_time_s == full.step_time_s);
  CHECK(all.memory.peak_gib == full.memory.peak_gib);
  // HFU counts the recomputed FLOPs of those layers only.
  const auto& m = eight_b({}).model;
  const auto s5 = eight_b({"features.recompute=\"full\"", "features.recompute_num_layers=5"});
  const models::RankShape sh5 = models::rank_shape(s5);
  CHECK(models::recompute_flops_per_token(m, 8192, config::Recompute::full, &sh5) ==
        doctest::Approx(models::recompute_flops_per_token(m, 8192, config::Recompute::full) * 5.0 / 32.0));
}

TEST_CASE("recompute_num_layers: with another recompute, or with recompute_every, it is an error") {
  auto error_of = [](std::vector<std::string> sets) {
    try {
      (void)eight_b(sets);
    } catch (const config::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error_of({"features.recompute_num_layers=5"}).find("needs features.recompute = \"full\"") != std::string::npos);
  CHECK(error_of({"features.recompute=\"selective\"", "features.recompute_num_layers=5"}).find("needs features.recompute") !=
        std::string::npos);
  CHECK(error_of({"features.recompute=\"full\"", "features.recompute_every=2", "features.recompute_num_layers=5"})
            .find("give one of them") != std::string::npos);
  CHECK(error_of({"features.recompute=\"full\"", "features.recompute_num_layers=-1"}).find("out of range") != std::string::npos);
  CHECK(error_of({"features.recompute=\"full\"", "features.recompute_num_layers=5"}).empty());
}

TEST_CASE("recompute_num_layers and recompute_every: the planner's step-time bound stays below the step, and counts the skipped layers' recompute out") {
  // study/plan.h's contract: step_time_lower_bound(s) <= the simulated step. With recompute on a few layers
  // only, a bound that priced every layer's recompute could exceed the step and skip a layout that belongs in
  // the top rows.
  step::SimulateOptions opt;
  for (const auto& sets : std::vector<std::vector<std::string>>{
           {"features.recompute=\"full\""},
           {"features.recompute=\"full\"", "features.recompute_num_layers=1"},
           {"features.recompute=\"full\"", "features.recompute_every=8"}}) {
    CAPTURE(sets.back());
    const auto s = eight_b(sets);
    CHECK(study::step_time_lower_bound(s) <= step::simulate(s, opt).step_time_s);
  }
  // The bound of N = 1 lies well under full recompute's bound: one layer's recompute of 32.
  const double full = study::step_time_lower_bound(eight_b({"features.recompute=\"full\""}));
  const double one = study::step_time_lower_bound(eight_b({"features.recompute=\"full\"", "features.recompute_num_layers=1"}));
  const double none = study::step_time_lower_bound(eight_b({}));
  CHECK(one < full);
  CHECK(one - none == doctest::Approx((full - none) / 32.0).epsilon(0.02));
}

TEST_CASE("recompute_num_layers: not with torchtitan's block (its layer checkpointing is recompute_every)") {
  std::string e;
  try {
    (void)eight_b({"features.recompute=\"full\"", "features.recompute_num_layers=2", "features.model_code=\"torchtitan\""});
  } catch (const config::ConfigError& x) {
    e = x.what();
  }
  CHECK(e.find("Megatron's block method") != std::string::npos);
}
