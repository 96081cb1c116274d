#pragma once
// A shipped scenario (scenarios/<file>) loaded as `mfusim run` would, with optional --set overrides.
#include <filesystem>
#include <string>
#include <vector>

#include "config/loader.h"

namespace mfusim::testing {

inline config::Scenario shipped_scenario(const std::string& file, const std::vector<std::string>& sets = {}) {
  config::LoadOptions o;
  o.overrides = sets;
  const std::string root = std::filesystem::path(MFUSIM_TEST_DIR).parent_path().string();
  return config::load_scenario(root + "/scenarios/" + file, o).base;
}

}  // namespace mfusim::testing
