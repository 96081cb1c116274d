// libFuzzer target: arbitrary bytes as a scenario file, through the whole
// pipeline a user's file goes through: load and validate, then (for a
// scenario of bounded size) lower, simulate, and the text and JSON reports.
// Bad input must surface as ConfigError or sim::TimeLimitError (a step beyond
// the documented limit) and nothing else; any other exception, crash, hang or
// sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <string>
#include <vector>

#include "config/loader.h"
#include "report/json.h"
#include "step/simulate.h"
#include "report/text.h"
#include "sim/time.h"

namespace {

// Sizes that keep one execution in milliseconds (the fuzzer needs thousands
// per second): the work of a step grows with ranks x layers x micro-batches.
bool bounded(const mfusim::config::Scenario& s) {
  return s.gpus >= 1 && s.gpus <= 64 && s.model.layers <= 16 && s.microbatches() <= 32 && s.training.seq_len <= 32768 &&
         s.model.hidden <= 16384 && s.parallel.vpp <= 8;
}

// A larger scenario is cut down to the bounds (fewer layers, fewer
// micro-batches, the same layout) rather than skipped, so that the shipped
// scenarios in the corpus reach the simulation too.
std::vector<std::string> shrink(const mfusim::config::Scenario& s, int layers_per_stage) {
  const int stages = s.parallel.pp * std::max(1, s.parallel.vpp) * 2;   // enough for two-chunk schedules
  const long long m = std::min<long long>(s.microbatches(), 16);
  const long long dp = std::max(1, s.parallel.dp);
  return {"model.layers=" + std::to_string(std::min(16, stages * layers_per_stage)),
          "training.global_batch=" + std::to_string(dp * s.training.micro_batch * std::max<long long>(1, m))};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    auto loaded = mfusim::config::load_scenario_string(text, MFUSIM_FUZZ_SCENARIO_PATH);
    if (!mfusim::config::validate(loaded.base).empty()) return 0;
    if (!bounded(loaded.base)) {
      if (loaded.base.gpus > 64 || loaded.base.gpus < 1) return 0;
      mfusim::config::LoadOptions lo;
      lo.overrides = shrink(loaded.base, 1);
      try {
        loaded = mfusim::config::load_scenario_string(text, MFUSIM_FUZZ_SCENARIO_PATH, lo);
      } catch (const mfusim::config::ConfigError&) {
        return 0;   // the cut-down layout breaks a shape rule: nothing to simulate
      }
      if (!mfusim::config::validate(loaded.base).empty() || !bounded(loaded.base)) return 0;
    }
    const auto r = mfusim::step::simulate(loaded.base);
    (void)mfusim::report::text_report(r, {});
    (void)mfusim::report::to_json(r, {});
  } catch (const mfusim::config::ConfigError&) {
  } catch (const mfusim::sim::TimeLimitError&) {
  }
  return 0;
}
