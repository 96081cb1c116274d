#pragma once
// What one simulated training step produced, read off the timeline: the
// numbers of SPEC §4, plus the graph and timeline for pictures and traces.
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/scenario.h"
#include "sim/engine.h"
#include "step/lower.h"
#include "step/training_run.h"

namespace mfusim::step {

// Breakdown parts of SPEC §4 `breakdown_s`, per GPU (the slowest pipeline
// rank's view); they partition [0, step_time] of that rank exactly.
struct Breakdown {
  double forward = 0, backward = 0, recompute = 0, optimizer = 0;
  double tp_comm_exposed = 0, pp_comm_exposed = 0, dp_comm_exposed = 0, ep_comm_exposed = 0;
  double bubble = 0, dataloader = 0, gc = 0, launch_overhead = 0;
  double cp_comm_exposed = 0;    // extension: ring-attention exchange not hidden (counted in tp? no: own part)
  // Idle time caused by unequal stage work (embedding, LM head, uneven splits, MTP), apart from `bubble`,
  // the schedule's own idle time (step/imbalance.cpp states the method).
  double imbalance = 0;
  double total() const {
    return forward + backward + recompute + optimizer + tp_comm_exposed + pp_comm_exposed + dp_comm_exposed +
           ep_comm_exposed + bubble + dataloader + gc + launch_overhead + cp_comm_exposed + imbalance;
  }
};

struct Memory {
  double capacity_gib = 0, peak_gib = 0;
  bool fits = true;
  std::vector<double> per_stage_peak_gib;     // per pipeline rank
  double params_gib = 0, grads_gib = 0, optimizer_gib = 0, activations_gib = 0;   // on the peak rank
  // The caching allocator's reserved peak (torch.cuda.max_memory_reserved): the timeline's allocations
  // played through sim/caching_allocator.h (step::reserved_peaks), plus the same static bytes and runtime
  // reserve as peak_gib; the largest over ranks (normally >= peak_gib: segments hold every block).
  // 0: not computed (SimulateOptions::reserved_memory off); the reports then leave it out.
  double peak_reserved_gib = 0;
};

struct RankView {           // per pipeline rank, for the text report
  double busy_s = 0, bubble_s = 0, exposed_comm_s = 0;
  int peak_inflight_microbatches = 0;
  double imbalance_s = 0;     // idle time from unequal stage work (Breakdown::imbalance of this rank)
};

struct StepResult {
  config::Scenario scenario;
  double params = 0, activated_params = 0, model_flops_per_token = 0;
  int microbatches = 0;
  double step_time_s = 0, tokens_per_s = 0, tokens_per_s_per_gpu = 0, tflops_per_gpu = 0;
  double mfu = 0, mfu_attn = 0, hfu = 0, bubble_fraction = 0;
  Breakdown breakdown;
  int breakdown_rank = 0;
  // Of the breakdown's compute parts (forward, backward, recompute, optimizer...), the time the
  // communication running beside them added (its kernels' SMs and HBM traffic, hardware/interference.h):
  // the compute tasks' time beyond their work at full rate, on the breakdown's rank.
  double interference_s = 0;
  // The ranks the rank waits for every micro-batch and the pace its kernels ran at for them (run 40,
  // docs/cost-model.md 2f); 1 / 1 in the schedule lab (fixed op costs).
  int sync_group_ranks = 1;
  double sync_pace = 1.0;
  // The boards whose slowest the step waits for once per step, where the pace includes the calibration's
  // [board_spread] (run 46, docs/cost-model.md 2g): the job's GPUs; 0 where it does not.
  int job_boards = 0;
  // One step's makespan (first task start to last task end); step_time_s is the period across
  // consecutive steps, equal to it unless steps overlap (optimizer post-validation, parameter gathers).
  double makespan_s = 0;
  int steady_steps = 1;       // steps simulated to reach the period (1: one step)
  Memory memory;
  std::vector<RankView> ranks;
  std::vector<std::string> warnings;          // e.g. TP spans NVLink domains
  double days_to_train = 0, cost_usd = 0;     // when tokens_to_train (and price) are given
  // The run around the steps (step/training_run.h), when tokens_to_train is given: days_to_train is its
  // mean wall clock, interruptions, restarts and checkpoint saves included; cost_usd prices those days.
  struct Run {
    double days_of_steps = 0;          // tokens_to_train at the simulated step, back to back
    double checkpoint_save_s = 0;      // the blocking time of one save used
    bool save_from_host_link = false;  // derived from the rank's state and the host link (else given or 0)
    bool save_unpriced = false;        // no host link bandwidth in the profile and no save time given
    double checkpoint_state_gib = 0;   // the largest rank's parameters and optimizer state
    TrainingRunResult sim;
  } run;
  std::int64_t tasks = 0, events = 0;
  // The simulated graph and timeline (kept for --trace / --svg / ASCII).
  std::shared_ptr<const sim::TaskGraph> graph;
  std::shared_ptr<const sim::Timeline> timeline;
  // Per task of the graph: FLOPs and launch time, for the trace's args (full scenarios only).
  std::shared_ptr<const std::vector<TaskInfo>> task_info;
};

struct WhatIfResult {
  std::string name;
  double step_time_s = 0, mfu = 0, delta_mfu = 0;
  bool fits = true;
  std::string error;   // an infeasible rung: why (the numbers are 0)
};

}  // namespace mfusim::step
