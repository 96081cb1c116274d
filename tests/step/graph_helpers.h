#pragma once
// Helpers of the step tests that read a simulated step's task graph and the loader's errors.
#include <string>
#include <vector>

#include "config/loader.h"
#include "step/simulate.h"

namespace mfusim::testing {

// A scenario from inline TOML (named as `path` in its errors), with --set overrides.
inline config::Scenario fixture_scenario(const char* text, const std::string& path,
                                         const std::vector<std::string>& sets = {}) {
  config::LoadOptions o;
  o.overrides = sets;
  return config::load_scenario_string(text, path, o).base;
}

// One simulated step with its timeline and task graph kept.
inline step::StepResult run_with_timeline(const config::Scenario& s) {
  step::SimulateOptions o;
  o.keep_timeline = true;
  return step::simulate(s, o);
}

// The tasks of a simulated step (kept with its timeline) with this name.
inline std::vector<sim::TaskId> tasks_named(const step::StepResult& r, const std::string& name) {
  std::vector<sim::TaskId> out;
  for (std::size_t i = 0; i < r.graph->size(); ++i)
    if (r.graph->name(static_cast<sim::TaskId>(i)) == name) out.push_back(static_cast<sim::TaskId>(i));
  return out;
}

// The ConfigError `load` throws, or "(no error)".
template <class Load>
std::string config_error_of(Load&& load) {
  try {
    load();
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace mfusim::testing
