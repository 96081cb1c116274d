// The work estimate before lowering (step::estimate_work, step::check_work): constant
// time in the number of micro-batches, a lower bound on the tasks actually built, and a
// refusal above step::kMaxStepTasks with the estimate and the way out (docs/scenario.md,
// "Limits on work and output"), never a bad_alloc.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "config/loader.h"
#include "step/simulate.h"

namespace fs = std::filesystem;
using namespace mfusim;

namespace {
const std::string kRoot = fs::path(MFUSIM_TEST_DIR).parent_path().string();

config::Scenario scenario(const std::string& file, std::vector<std::string> sets = {}) {
  config::LoadOptions lo;
  lo.overrides = std::move(sets);
  return config::load_scenario(kRoot + "/scenarios/" + file, lo).base;
}
}  // namespace

TEST_CASE("work estimate: a lower bound on the tasks of both lowerings") {
  for (const char* file : {"8xh100_llama3_8b.toml", "128xh100_70b.toml"}) {
    CAPTURE(file);
    for (const char* sched : {"1f1b", "interleaved-1f1b", "zb-h1"}) {
      CAPTURE(sched);
      std::vector<std::string> sets = {std::string("schedule.name=") + sched,
                                       std::string("parallel.pp=") + (std::string(file) == "128xh100_70b.toml" ? "4" : "2")};
      if (std::string(sched) == "interleaved-1f1b") sets.push_back("parallel.vpp=2");
      const auto s = scenario(file, sets);
      for (bool per_layer : {true, false}) {
        CAPTURE(per_layer);
        step::SimulateOptions so;
        so.per_layer = per_layer;
        so.keep_timeline = false;
        const auto r = step::simulate(s, so);
        const auto w = step::estimate_work(s, per_layer);
        CHECK(w.tasks > 0);
        CHECK(w.tasks <= static_cast<double>(r.tasks));
        // and not a vacuous bound: within 5x of what was built
        CHECK(w.tasks * 5 >= static_cast<double>(r.tasks));
      }
    }
  }
}

TEST_CASE("work estimate: a million micro-batches are refused at once with the estimate and the way out") {
  // 8 GPUs, tp 2, dp 4: a global batch of 4,194,304 is 1,048,576 micro-batches per pipeline.
  const auto s = scenario("8xh100_llama3_8b.toml", {"training.global_batch=4194304"});
  const auto t0 = std::chrono::steady_clock::now();
  std::string msg;
  try {
    step::simulate(s);
  } catch (const step::WorkLimitError& e) {
    msg = e.what();
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(secs < 1.0);   // before any schedule is built (28 s and 13 GB before the estimate)
  CHECK(msg.find("mfusim: error: the step is too large to simulate: 1048576 micro-batches") == 0);
  CHECK(msg.find("per-layer lowering") != std::string::npos);
  CHECK(msg.find("--coarse") != std::string::npos);
  CHECK(msg.find("fewer micro-batches per step") != std::string::npos);
  const auto w = step::estimate_work(s, true);
  CHECK(w.tasks > step::kMaxStepTasks);
  CHECK(w.bytes > 1e9);
  // Four million micro-batches are above the cap in coarse lowering too (8.4e6 ops); its
  // message does not offer --coarse again.
  step::SimulateOptions coarse;
  coarse.per_layer = false;
  msg.clear();
  try {
    step::simulate(scenario("8xh100_llama3_8b.toml", {"training.global_batch=16777216"}), coarse);
  } catch (const step::WorkLimitError& e) {
    msg = e.what();
  }
  CHECK(msg.find("coarse lowering") != std::string::npos);
  CHECK(msg.find("--coarse") == std::string::npos);
  // Four million micro-batches (which exhausted memory before): the same refusal.
  CHECK_THROWS_AS(step::simulate(scenario("8xh100_llama3_8b.toml", {"training.global_batch=16777216"})),
                  step::WorkLimitError);
}

TEST_CASE("work estimate: below the cap, coarse mode runs what per-layer refuses") {
  // 80,000 micro-batches: per-layer about 5.6e6 tasks (refused), coarse about 1.6e5 (runs).
  const auto s = scenario("8xh100_llama3_8b.toml", {"training.global_batch=320000"});
  CHECK(step::estimate_work(s, true).tasks > step::kMaxStepTasks);
  CHECK(step::estimate_work(s, false).tasks < step::kMaxStepTasks);
  CHECK_THROWS_AS(step::simulate(s), step::WorkLimitError);
  step::SimulateOptions coarse;
  coarse.per_layer = false;
  coarse.keep_timeline = false;
  const auto r = step::simulate(s, coarse);
  CHECK(r.microbatches == 80000);
  CHECK(r.step_time_s > 0);
}
