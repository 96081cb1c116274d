#pragma once
// The command line of the per-scenario comparison programs (validation_deepgemm,
// validation_fp8_kernels): [SCENARIO] [--set KEY=VALUE ...], the H800 DeepSeek-V3 scenario by default.
#include <cstdio>
#include <string>

#include "config/loader.h"

namespace mfusim::validation {

// Fills path and lo from argv; false (usage printed) on anything else.
inline bool scenario_args(int argc, char** argv, std::string& path, config::LoadOptions& lo) {
  path = "scenarios/2048xh800_deepseek_v3.toml";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--set" && i + 1 < argc) lo.overrides.push_back(argv[++i]);
    else if (!a.empty() && a[0] != '-') path = a;
    else {
      std::fprintf(stderr, "usage: %s [SCENARIO] [--set KEY=VALUE ...]\n", argv[0]);
      return false;
    }
  }
  return true;
}

}  // namespace mfusim::validation
