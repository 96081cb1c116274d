#pragma once
// `mfusim plan`: search parallel layouts (tp, pp, dp, cp, ep, vpp,
// micro-batch, schedule, recompute) for the scenario's model, hardware and
// GPU count. Cheap checks first (shape rules, a memory lower bound), then
// every surviving point is simulated in parallel and the fitting ones are
// ranked by step time.
#include <cstddef>
#include <string>
#include <vector>

#include "config/scenario.h"
#include "report/step_result.h"
#include "study/sweep.h"

namespace mfusim::study {

struct PlanOptions {
  bool prune = true;           // memory lower-bound pruning before simulation
  bool per_layer = false;      // simulation granularity (see schedules::LowerOptions)
  std::size_t keep = 0;        // keep only the best `keep` results (0 = all)
};

struct PlanPoint {
  config::Scenario scenario;   // the candidate layout
  report::StepResult result;   // without graph/timeline
};

struct PlanResult {
  int gpus = 0;
  std::string hardware;
  std::size_t considered = 0;     // layouts enumerated
  std::size_t invalid = 0;        // shape rules / divisibility
  std::size_t pruned = 0;         // cannot fit (memory lower bound)
  std::size_t simulated = 0;
  std::size_t failed = 0;         // simulation errors (internal; should be 0)
  std::size_t fitting = 0;
  std::vector<PlanPoint> ranked;  // fitting points, fastest first
};

// Every layout of the search space for `gpus` GPUs, before any check.
std::vector<config::Scenario> enumerate_layouts(const config::Scenario& base, int gpus);
// A lower bound of the simulated peak memory of pipeline rank 0 (bytes).
double memory_lower_bound(const config::Scenario&);
std::string layout_label(const config::Scenario&);

PlanResult plan(const config::Scenario& base, int gpus, const PlanOptions& = {}, const Progress& = {});

}  // namespace mfusim::study
