#pragma once
// Consecutive training steps: the step's task graph repeated, each copy linked
// to the one before it, played until the time between consecutive steps (the
// period) settles. Where nothing overlaps two steps the period is one step's
// makespan; with optimizer post-validation (Zero Bubble §4) each rank starts
// its next step after its own optimizer, so a schedule whose ranks finish at
// different times tiles with the next step, and the DP parameter all-gather
// that follows the optimizer overlaps the next step's forward.
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/engine.h"
#include "step/analysis.h"
#include "step/lower.h"

namespace mfusim::step {

// How step k links to step k + 1 beyond the streams' order (each stream runs
// step k + 1's tasks after step k's): (task of step k, task of step k + 1), as
// single-step task ids.
using StepLinks = std::vector<std::pair<sim::TaskId, sim::TaskId>>;

struct SteadyState {
  double period_s = 0;                    // time between the ends of the last two steps
  int steps = 0;                          // steps simulated
  bool settled = false;                   // the last two periods were equal
  std::vector<RankParts> parts;           // per rank: the breakdown over the last period
  std::vector<std::int64_t> peak_memory;  // per rank, over all steps (bytes, or the lab's units)
};

// The links for the schedule lab: with `synchronised`, every rank's first op of
// step k + 1 waits for every rank's last op of step k (a global barrier before
// the optimizer); without, only the streams' order links the steps.
StepLinks lab_links(const sim::TaskGraph&, bool synchronised);

// The links for a full scenario: the DP parameter all-gathers at the start of a
// step (dp_comm tasks with no predecessor) wait for the rank's optimizer of the
// step before, and the rank's first compute of step k + 1 waits for what
// follows its optimizer (the all-gather after the optimizer step).
StepLinks scenario_links(const sim::TaskGraph&);

// Plays 3 steps, or 4 when the first two periods differ (at most max_steps).
// low: the lowering's side information for the breakdown (null for the lab).
SteadyState steady_state(const sim::TaskGraph&, const StepLinks&, int P, const Lowered* low, int max_steps = 4);

// The same timeline seen up to time x: every interval clamped to [0, x]
// (tasks after x become empty at x), makespan x. The breakdown of a window
// [a, b] is analyze(clamp(b)) - analyze(clamp(a)).
sim::Timeline clamp_timeline(const sim::Timeline&, std::int64_t x);

}  // namespace mfusim::step
