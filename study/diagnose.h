#pragma once
// `mfusim diagnose`: each MFU lever tried on its own from the scenario,
// ranked by MFU gain, with the breakdown part it shrinks most.
#include <string>
#include <vector>

#include "config/loader.h"
#include "step/result.h"
#include "study/sweep.h"

namespace mfusim::study {

struct LeverResult {
  std::string lever;         // "flash attention"
  std::string change;        // "features.flash_attention=true"
  double mfu_before = 0, mfu_after = 0, delta_mfu = 0, step_time_s = 0;
  bool fits = true;
  std::string shrinks;       // breakdown part that shrinks most ("bubble")
  double shrinks_s = 0;      // by how much (seconds per step)
  std::string why;           // why the lever helps: the mechanism behind the part it shrinks
  bool planner = false;      // found by the layout planner (study::plan) rather than toggled
};

struct Diagnosis {
  step::StepResult base;
  std::vector<LeverResult> levers;   // ranked: fitting ones by delta_mfu, then the rest
};

// Why a breakdown part shrinks under a lever (one sentence; docs/levers.md).
std::string why_it_helps(const std::string& lever, const std::string& part);

// The candidate changes for a scenario (those that differ from it and pass validation).
std::vector<std::pair<std::string, std::vector<std::string>>> lever_candidates(const config::Scenario&);

Diagnosis diagnose(const std::string& scenario_path, const config::LoadOptions&, const Progress& = {});

}  // namespace mfusim::study
