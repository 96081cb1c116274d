#pragma once
// Schedule-lab mode (SPEC §3 [schedule.costs]): a PipelineSchedule with fixed
// op times, lowered to a TaskGraph and played on the engine. Nothing else is
// simulated: no TP/DP/EP collectives, optimizer, data loading or GC.
//
// Lowering contract:
//  - each op is one task on its rank's compute stream, in the order's order;
//    durations: F = f; B = b when the schedule splits W (then W = w, or 0 when
//    w is absent), else B = b + w (with no w, b is the whole backward);
//    FB = fb, default f + b + w.
//  - a stage-to-stage transfer between different ranks is a task of duration
//    comm on the sender's comm stream "rankR/send-F->rankQ" (F output to the
//    next virtual stage) or "rankR/send-B->rankQ" (B output to the previous),
//    named like its producer's half ("F mb3 chunk1");
//    same-rank hand-offs are plain dependencies.
//  - ops are routed by scanning the order: (kind, microbatch, stage) -> the
//    rank and task that run it, so the rank of a stage may depend on the
//    micro-batch (DualPipe).
//  - memory in units of one micro-batch's activations M_B: +1 at F start; B
//    frees 1 at its end, or 1 - M_W when W is split off (W frees M_W).
#include <cstdint>
#include <vector>

#include "config/scenario.h"
#include "schedules/schedule.h"
#include "sim/engine.h"

namespace mfusim::schedules {

// memory_delta of one micro-batch's activations (M_B) in the lab's task graphs.
inline constexpr std::int64_t kLabMemoryUnit = 1'000'000;

struct LabOptions {
  // M_W / M_B: activation memory kept from B until W. Qi et al. 2024 Table 1
  // (no s x s attention term, i.e. flash attention): 32sbh / 34sbh.
  double w_memory_fraction = 32.0 / 34.0;
};

struct LabResult {
  sim::TaskGraph graph;
  sim::Timeline timeline;
  double makespan_s = 0;
  double bubble_fraction = 0;              // mean over ranks of (makespan - compute busy) / makespan
  std::vector<double> peak_activations;    // per rank, in units of M_B (in-flight micro-batches when W is not split)
  std::vector<double> busy_s;              // per rank, compute stream busy time
};

// Throws std::logic_error when the schedule is not a valid op set (an op
// missing or repeated, a stage out of range); sim::Deadlock when its order
// cannot be played.
// The lab costs as per-rank costs for a schedule planned from costs (zb-auto): F = f, B = b, W = w
// (0 when absent), the same on every rank.
StageCosts stage_costs(const config::ScheduleCosts&, int ranks, int max_inflight = 0, double w_memory_fraction = 1.0);

sim::TaskGraph lower_lab(const PipelineSchedule&, const config::ScheduleCosts&, const LabOptions& = {});
LabResult run_lab(const PipelineSchedule&, const config::ScheduleCosts&, const LabOptions& = {});

}  // namespace mfusim::schedules
