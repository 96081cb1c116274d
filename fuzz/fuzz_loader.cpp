// libFuzzer target: arbitrary bytes as a scenario file. Bad input must surface
// as ConfigError and nothing else; any other exception, crash, hang or
// sanitizer report is a bug in config/.
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/loader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    auto loaded = mfusim::config::load_scenario_string(text, MFUSIM_FUZZ_SCENARIO_PATH);
    (void)mfusim::config::describe(loaded.base);
    (void)mfusim::config::validate(loaded.base);
  } catch (const mfusim::config::ConfigError&) {
  }
  return 0;
}
