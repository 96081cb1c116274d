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

// The critical rank (least idle time) and the mean idle fraction (bubble and imbalance).
void summarize(StepResult& r, const std::vector<RankParts>& parts, double T);

// Imbalance apart from the bubble (step/imbalance.cpp). The same lowered step
// with every op's work set to the mean of its kind over all ranks (F, B, W,
// F&B and the optimizer step: the embedding, the LM head and uneven layer
// splits spread evenly), played again; its per-rank bubble is the schedule's
// own. `steady`: played as consecutive steps (steady.h) like the measured run.
// g: the step's graph (low: its lowering's side information, null for the lab).
std::vector<double> balanced_bubble(const sim::TaskGraph& g, const Lowered* low, bool steady, int P);
// Per rank: imbalance = measured bubble - balanced bubble, clamped to [0, bubble]; moved from `bubble`
// to `imbalance` (the parts still sum to the same total).
void split_imbalance(std::vector<RankParts>& parts, const std::vector<double>& balanced);

}  // namespace mfusim::step
