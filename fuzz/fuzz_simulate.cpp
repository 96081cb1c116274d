// libFuzzer target: arbitrary bytes as a scenario file, through the whole
// pipeline a user's file goes through: load and validate, then (for a
// scenario of bounded size) lower, simulate, and the text and JSON reports.
// Bad input must surface as ConfigError or sim::TimeLimitError (a step beyond
// the documented limit) and nothing else; any other exception, crash, hang or
// sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/loader.h"
#include "report/json.h"
#include "report/simulate.h"
#include "report/text.h"
#include "sim/time.h"

namespace {

// Sizes that keep one execution in milliseconds (the fuzzer needs thousands
// per second): the work of a step grows with ranks x layers x micro-batches.
bool bounded(const mfusim::config::Scenario& s) {
  return s.gpus >= 1 && s.gpus <= 64 && s.model.layers <= 16 && s.microbatches() <= 32 && s.training.seq_len <= 32768 &&
         s.model.hidden <= 16384 && s.parallel.vpp <= 8;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    auto loaded = mfusim::config::load_scenario_string(text, MFUSIM_FUZZ_SCENARIO_PATH);
    if (!mfusim::config::validate(loaded.base).empty() || !bounded(loaded.base)) return 0;
    const auto r = mfusim::report::simulate(loaded.base);
    (void)mfusim::report::text_report(r, {});
    (void)mfusim::report::to_json(r, {});
  } catch (const mfusim::config::ConfigError&) {
  } catch (const mfusim::sim::TimeLimitError&) {
  }
  return 0;
}
