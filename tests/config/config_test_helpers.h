#pragma once
// Shared by the tests of config/: the test data roots, a directory listing and
// the text of the ConfigError a call throws.
#include <algorithm>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "config/loader.h"

namespace config_test {

namespace fs = std::filesystem;

inline const std::string kTests = MFUSIM_TEST_DIR;
inline const std::string kRoot = fs::path(MFUSIM_TEST_DIR).parent_path().string();

inline std::vector<fs::path> files_in(const std::string& dir, const std::string& ext) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ext) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

inline std::string error_text(const std::function<void()>& f) {
  try {
    f();
  } catch (const mfusim::config::ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace config_test
