#pragma once
// One simulated training step: lower the scenario, play the task graph, and
// read the report off the timeline.
#include "config/scenario.h"
#include "step/result.h"

namespace mfusim::step {

// Memory every GPU holds besides the model state and activations: CUDA
// context, cuBLAS workspaces, NCCL buffers and allocator slack. 2 GiB is an
// assumption (PyTorch reports ~0.5–1 GiB of context on H100; NCCL buffers and
// fragmentation add the rest); documented in docs/accounting.md. Part of every
// simulated peak, and of plan's memory lower bound.
inline constexpr double kRuntimeReserveBytes = 2.0 * 1024.0 * 1024.0 * 1024.0;

struct SimulateOptions {
  bool per_layer = true;        // per-layer tasks (see step::LowerOptions)
  bool keep_timeline = true;    // keep graph and timeline in the result (traces, pictures)
  // Split the idle time into the schedule's bubble and the imbalance of unequal stage work
  // (a second, coarse simulation with every stage's work set to the mean; step/imbalance.cpp).
  bool split_imbalance = true;
};

step::StepResult simulate(const config::Scenario&, const SimulateOptions& = {});

// The schedule-lab variant ([schedule.costs]): fixed op costs, only the schedule.
step::StepResult simulate_lab(const config::Scenario&, const SimulateOptions& = {});

}  // namespace mfusim::step
