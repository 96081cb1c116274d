#pragma once
// The JSON of `mfusim plan` built from plain rows, so that a plan and the
// merge of its shards (`mfusim merge`) print it through one function.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "study/plan.h"

namespace mfusim::tools {

struct PlanRow {
  std::string layout, schedule, recompute;
  int recompute_num_layers = 0;   // full recompute of the first N layers of each chunk (0: every layer, or none)
  double step_time_s = 0;
  study::Objectives obj;
  double margin_gib = 0;     // HBM left free at the simulated peak
  std::string report;        // report::write_step JSON (top level) with kPointSlot for the point object
};
inline const std::string kPointSlot = "\"@point@\"";

struct PlanChoice {
  std::string hardware;
  int gpus = 0;
  std::size_t considered = 0, invalid = 0, pruned = 0, skipped = 0, simulated = 0, failed = 0, fitting = 0;
  std::map<std::string, std::size_t> failures;
  std::string searched;
  std::vector<PlanRow> rows;   // fitting, fastest first
};

double row_key(const PlanRow&, study::RankBy);
// The ranked JSON array (SPEC §2) over every choice, best first by `rank_by`.
std::string plan_json(const std::vector<PlanChoice>&, study::RankBy);
// Whether each choice's best row is on the Pareto front of (time, GPUs, cost).
std::vector<char> pareto_of(const std::vector<PlanChoice>&);

}  // namespace mfusim::tools
