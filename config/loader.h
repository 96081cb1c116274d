#pragma once
// Loading and validating scenario, model, hardware and calibration files.
// Every problem is collected as a Diagnostic with its source position; the
// caller prints them all (`file:line:col: error: ...`) and exits 2.
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "config/scenario.h"

namespace mfusim::config {

struct Diagnostic {
  std::string file;
  int line = 0, column = 0;   // 0 when no position exists
  std::string message;
  std::string str() const;    // "file:line:col: error: message" (or "file: error: message")
};

// Thrown by every loader entry point when input is bad; holds every problem found.
class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(std::vector<Diagnostic> diags);
  const std::vector<Diagnostic>& diagnostics() const { return diags_; }
 private:
  std::vector<Diagnostic> diags_;
};

struct LoadOptions {
  std::vector<std::string> overrides;      // "--set KEY=VALUE", in order
  std::vector<std::string> search_dirs;    // extra data dirs for named models/hardware
  // A [[whatif]] rung that does not resolve is kept with WhatIf::error set
  // instead of failing the load (`mfusim run` with --set: an infeasible rung
  // is a row that says why).
  bool whatif_errors_as_rows = false;
};

struct LoadedScenario {
  Scenario base;                            // the scenario with --set applied
  std::vector<WhatIf> whatifs;              // the [[whatif]] ladder, each resolved
};

LoadedScenario load_scenario(const std::string& path, const LoadOptions& = {});
// Parses scenario text as if read from `path` (used by tests and the fuzzer).
LoadedScenario load_scenario_string(const std::string& text, const std::string& path, const LoadOptions& = {});

models::ModelSpec load_model(const std::string& path);          // models/*.toml or a HF config.json
hardware::HardwareSpec load_hardware(const std::string& path);

// Re-check a Scenario built or modified in code (sweep, plan, diagnose):
// the same consistency rules as the file, reported without positions.
std::vector<Diagnostic> validate(const Scenario&);

// Apply one dotted KEY=VALUE to a copy of the scenario's source and re-resolve.
// Used by sweep/plan/diagnose so that every point is validated like a file.
Scenario with_overrides(const std::string& scenario_path, const std::vector<std::string>& overrides,
                        const LoadOptions& = {});

// Names available in the data dirs (models/, hardware/) for `mfusim list`.
std::vector<std::string> list_models(const LoadOptions& = {});
std::vector<std::string> list_hardware(const LoadOptions& = {});
// The file a model/hardware name resolves to in the data dirs ("" when none).
std::string model_file(const std::string& name, const LoadOptions& = {});
std::string hardware_file(const std::string& name, const LoadOptions& = {});

// Refuses TOML text that nests deeper than toml++ and the loaders may recurse
// (64 levels: table headers, dotted keys, inline tables and arrays together;
// docs/scenario.md), by a linear scan; throws ConfigError with file:line:col.
// Every loader here calls it; a reader that calls toml::parse itself should too.
void check_toml_nesting(const std::string& text, const std::string& path);

// A human-readable dump of the resolved scenario (for `mfusim check`).
std::string describe(const Scenario&);

}  // namespace mfusim::config
