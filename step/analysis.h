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
  double interference = 0;   // of the compute parts of b: what communication beside it added (StepResult::interference_s)
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

// Bytes the allocations in `allocs` (task, bytes it allocates at its start and keeps: Lowered::lazy_grads)
// hold on `rank` at the instant the rank's allocated timeline peaks (the first instant it reaches its
// maximum, replayed with the frees before the allocations at one instant). The executor can count an
// allocation started by one task's end before another task's free at the same instant (it handles ends in
// the order they were scheduled), so its peak may lie at an instant this replay does not see; no shipped
// or validation scenario shows a difference (their peaks and instants match the replay on every rank).
std::int64_t held_at_peak(const sim::TaskGraph& g, const sim::Timeline& tl, int rank,
                          const std::vector<std::pair<sim::TaskId, std::int64_t>>& allocs);

// Per rank: the caching allocator's reserved peak (bytes) over the step's allocation stream
// (sim/caching_allocator.h). The stream is the timeline's memory changes on that rank in time order: a
// task's memory_delta > 0 is one block allocated at its start on the task's stream, a free (memory_delta
// < 0, memory_release) at its end returns the live blocks it pairs with (the same size and micro-batch,
// chunk and layer first). The step is played again and again through one allocator (every step
// allocates the same; the cache carries over, as in training) until a step creates no segment (it then
// repeats for ever; at most `steps` plays), and the peak is that last step's, as torch reports it after
// reset_peak_memory_stats. Bytes outside the timeline (weights, optimizer state) are not part of it
// (allocated once, in blocks of their own size).
std::vector<std::int64_t> reserved_peaks(const sim::TaskGraph& g, const sim::Timeline& tl, int P, const Lowered* low,
                                         int steps = 8);

}  // namespace mfusim::step
