#pragma once
// One simulated training step: lower the scenario, play the task graph, and
// read the report off the timeline.
#include <stdexcept>

#include "config/scenario.h"
#include "step/result.h"

namespace mfusim::step {

// Memory every GPU holds besides the model state and activations: CUDA
// context, cuBLAS workspaces, NCCL buffers and allocator slack. 2 GiB is an
// assumption (PyTorch reports ~0.5–1 GiB of context on H100; NCCL buffers and
// fragmentation add the rest); documented in docs/accounting.md. Part of every
// simulated peak, and of plan's memory lower bound.
inline constexpr double kRuntimeReserveBytes = 2.0 * 1024.0 * 1024.0 * 1024.0;

// The work of one simulated step, estimated from the scenario alone, before the
// schedule or the task graph is built (step/op_items.cpp): pipeline ops (every rank's
// F and B of every micro-batch and virtual stage), tasks of the lowered graph (a lower
// bound: per-layer lowering has at least one task per layer of each op and three per op
// for sends, data loading and GC; coarse lowering at least one per op) and the memory
// they take (kBytesPerTaskPerLayer or kBytesPerTaskCoarse per estimated task).
struct WorkEstimate {
  double ops = 0;
  double tasks = 0;
  double bytes = 0;
};
WorkEstimate estimate_work(const config::Scenario&, bool per_layer);

// The documented cap on the work of one step (docs/scenario.md, "Limits on work and
// output"): a scenario whose estimate exceeds it is refused before anything is built.
inline constexpr double kMaxStepTasks = 5e6;
// Peak memory of `mfusim run` per estimated task (the tasks, their side information, the
// engine's events and edges, the schedule), measured on scenarios/8xh100_llama3_8b.toml
// (tp 2, pp 1, 32 layers): per-layer, 16,384 micro-batches, 1.15e6 estimated tasks, 909 MB
// peak RSS and 26 s; coarse, 262,144 micro-batches, 5.2e5 estimated tasks, 268 MB and 4 s.
inline constexpr double kBytesPerTaskPerLayer = 800;
inline constexpr double kBytesPerTaskCoarse = 510;

// Too much work for one step: exit 2 with the estimate and the way out.
struct WorkLimitError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Throws WorkLimitError when estimate_work(s, per_layer).tasks > kMaxStepTasks.
void check_work(const config::Scenario&, bool per_layer);

struct SimulateOptions {
  bool per_layer = true;        // per-layer tasks (see step::LowerOptions)
  bool keep_timeline = true;    // keep graph and timeline in the result (traces, pictures)
  // Split the idle time into the schedule's bubble and the imbalance of unequal stage work
  // (a second, coarse simulation with every stage's work set to the mean; step/imbalance.cpp).
  bool split_imbalance = true;
  // Play the timeline's allocations through the caching-allocator model for memory.peak_reserved_gib
  // (step::reserved_peaks: a replay of each rank's allocations). plan and diagnose rank layouts by the
  // allocated peak and leave it off (peak_reserved_gib stays 0 there, and reports leave it out).
  bool reserved_memory = true;
};

step::StepResult simulate(const config::Scenario&, const SimulateOptions& = {});

// The schedule-lab variant ([schedule.costs]): fixed op costs, only the schedule.
step::StepResult simulate_lab(const config::Scenario&, const SimulateOptions& = {});

}  // namespace mfusim::step
