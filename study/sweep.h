#pragma once
// `mfusim sweep`: the cartesian product of --vary keys, each point loaded and
// validated like a file (config::with_overrides), simulated in parallel.
#include <functional>
#include <string>
#include <vector>

#include "config/loader.h"
#include "step/result.h"

namespace mfusim::study {

struct Vary {
  std::string key;                    // dotted scenario key
  std::vector<std::string> values;
};
// Parses "KEY=V1,V2,..." (throws config::ConfigError naming the flag on bad syntax).
Vary parse_vary(const std::string& arg);

struct SweepPoint {
  std::vector<std::pair<std::string, std::string>> point;   // key, value
  bool ok = false;
  std::string error;                  // why the point is infeasible (config error or simulation failure)
  step::StepResult result;
};

using Progress = std::function<void(std::size_t done, std::size_t total)>;

std::vector<SweepPoint> sweep(const std::string& scenario_path, const std::vector<Vary>& vary,
                              const config::LoadOptions& base, const Progress& progress = {});

// "pp=4 schedule.name=1f1b" style point label and the JSON object of the point.
std::string point_label(const SweepPoint&);
std::string point_json(const SweepPoint&);

}  // namespace mfusim::study
