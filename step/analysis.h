#pragma once
// The step's breakdown read off a played timeline: per pipeline rank, the busy
// compute time by category and each idle stretch of the compute stream
// attributed to the communication it overlaps, else to the bubble; and the
// critical rank's breakdown in the result.
#include <vector>

#include "sim/engine.h"
#include "step/lower.h"
#include "step/result.h"

namespace mfusim::step {

struct RankParts {
  Breakdown b;
  double busy = 0;
};

// low: the lowering's side information (merged op tasks' parts, send
// targets); null for the schedule lab.
std::vector<RankParts> analyze(const sim::TaskGraph& g, const sim::Timeline& tl, int P, const Lowered* low);

// The critical rank (least bubble) and the mean bubble fraction.
void summarize(StepResult& r, const std::vector<RankParts>& parts, double T);

}  // namespace mfusim::step
