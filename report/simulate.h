#pragma once
// One simulated training step: lower the scenario, play the task graph, and
// read the report off the timeline.
#include "config/scenario.h"
#include "report/step_result.h"

namespace mfusim::report {

struct SimulateOptions {
  bool per_layer = true;        // per-layer tasks (see schedules::LowerOptions)
  bool keep_timeline = true;    // keep graph and timeline in the result (traces, pictures)
};

StepResult simulate(const config::Scenario&, const SimulateOptions& = {});

// The schedule-lab variant ([schedule.costs]): fixed op costs, only the schedule.
StepResult simulate_lab(const config::Scenario&, const SimulateOptions& = {});

}  // namespace mfusim::report
