// zb-auto's memory limit with unequal stages (schedules/zb_auto.cpp, StageCosts::activation / fixed): one
// memory for every rank, 1F1B's peak, each rank holding as many of its own micro-batches as fit. A first
// rank lighter than the others (DeepSeek-V3's dense first layers) no longer caps every rank at its bytes.
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "config/loader.h"
#include "schedules/lab.h"
#include "schedules/schedule.h"
#include "step/simulate.h"
#include "tests/shipped_scenario.h"

using namespace mfusim;

namespace {
// Per rank, the most micro-batches between a forward and its weight-gradient pass: the lab's memory
// timeline with M_W = M_B (an activation freed only at its W), on unit costs.
std::vector<double> peak_inflight(const schedules::PipelineSchedule& s) {
  return schedules::run_lab(s, config::ScheduleCosts{.f = 1, .b = 1, .w = 1.0, .comm = 0, .fb = {}},
                            schedules::LabOptions{.w_memory_fraction = 1.0})
      .peak_activations;
}
}  // namespace

TEST_CASE("zb-auto: the limit is 1F1B's peak memory on every rank, each rank in its own micro-batches") {
  const schedules::PipelineShape shape{.ranks = 4, .microbatches = 16};
  auto costs = schedules::uniform_costs(4, 1, 1, 1, 0);
  costs.w_memory_fraction = 1.0;
  // Ranks 1-3 keep three times rank 0's bytes per micro-batch: 1F1B's peak is rank 1's, 3 x 3 = 9 of rank
  // 0's micro-batches, so rank 0 may hold 9 and the others 3 each (the limit in rank 0's bytes had held
  // them to 4 / 3 -> 1, one micro-batch at a time).
  costs.activation = {1, 3, 3, 3};
  const auto light_first = peak_inflight(schedules::zb_auto(shape, costs));
  CHECK(light_first[0] <= 9);
  for (int r = 1; r < 4; ++r) {
    CAPTURE(r);
    CHECK(light_first[static_cast<std::size_t>(r)] <= 3);
    CHECK(light_first[static_cast<std::size_t>(r)] >= 2);
  }
  // Weights count too: ranks 1-3 holding 3 units more than rank 0 raise the peak to 3 + 9 = 12 and leave
  // each of them the same 3 micro-batches beside their weights.
  costs.fixed = {0, 3, 3, 3};
  const auto with_fixed = peak_inflight(schedules::zb_auto(shape, costs));
  for (int r = 1; r < 4; ++r) CHECK(with_fixed[static_cast<std::size_t>(r)] <= 3);
  // Equal stages: max_inflight micro-batches on every rank, as before (pp = 4).
  costs.activation.clear();
  costs.fixed.clear();
  for (double n : peak_inflight(schedules::zb_auto(shape, costs))) CHECK(n <= 4);
  // A wrong-sized fixed vector is refused.
  costs.activation = {1, 3, 3, 3};
  costs.fixed = {0, 1};
  CHECK_THROWS_AS(schedules::zb_auto(shape, costs), std::invalid_argument);
}

TEST_CASE("zb-auto on DeepSeek-V3's H800 pipeline: faster than 1F1B with less bubble (it had serialised to 83 s)") {
  const auto one = step::simulate(testing::shipped_scenario("2048xh800_deepseek_v3.toml", {"schedule.name=1f1b"}));
  const auto zb = step::simulate(testing::shipped_scenario("2048xh800_deepseek_v3.toml", {"schedule.name=zb-auto"}));
  MESSAGE("1f1b " << one.step_time_s << " s, zb-auto " << zb.step_time_s << " s");
  CHECK(zb.step_time_s < one.step_time_s);
  CHECK(zb.bubble_fraction < one.bubble_fraction);
  CHECK(zb.memory.fits);
}
