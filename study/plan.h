#pragma once
// `mfusim plan`: search parallel layouts (tp, pp, dp, cp, ep, vpp,
// micro-batch, schedule, recompute) for the scenario's model, hardware and
// GPU count. Cheap checks first (shape rules, a memory lower bound), then
// every surviving point is simulated in parallel (coarse per-op lowering) and
// the fitting ones are ranked by step time (or time / cost to train).
//
// Contract of the lower bound: memory_lower_bound(s) <= the simulated peak of
// every pipeline rank of s (static + activations + runtime reserve) in both
// lowerings, so pruning on it never drops a point that fits.
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "config/scenario.h"
#include "step/result.h"
#include "study/sweep.h"

namespace mfusim::study {

// What "best" means. step: step time; days: time to train tokens_to_train
// (without it: seconds per token, the same order); cost: USD to train (without
// a price: GPU-seconds per token). Within one (hardware, GPU count) the three
// orders agree (global batch and GPUs fixed); they differ across choices.
enum class RankBy { step, days, cost };
RankBy parse_rank_by(const std::string&);   // throws std::invalid_argument
const char* to_string(RankBy);

// `--framework`: keep the search to what a training framework ships
// (docs/plan.md "Frameworks" cites each): its pipeline schedules, its
// recompute modes and whether it runs context parallelism.
enum class Framework { any, megatron, torchtitan, deepspeed };
Framework parse_framework(const std::string&);   // throws std::invalid_argument
const char* to_string(Framework);

// What the search may change. Keys the user set with --set are held at the
// base's value (SPEC §2): parallel.tp, parallel.cp, parallel.pp, parallel.dp,
// parallel.ep, parallel.vpp, training.micro_batch, schedule.name,
// features.recompute, parallel.sequence_parallel, moe.fb_rearrange.
struct SearchConstraints {
  std::set<std::string> fixed;       // dotted keys held fixed
  Framework framework = Framework::any;
};
// The keys of `overrides` ("KEY=VALUE") that name a searched key (a whole
// table such as "parallel" fixes all of its searched keys).
std::set<std::string> fixed_keys(const std::vector<std::string>& overrides);
// The keys plan searches (and --set holds), in one list: parallel.*, training.micro_batch, schedule.name,
// features.recompute, features.recompute_num_layers, moe.fb_rearrange, moe.overlap_ep_comm.
const std::vector<std::string>& searched_keys();
// The values each searched key may take for `gpus` GPUs (dp follows).
struct SearchSpace {
  std::vector<int> tp, cp, pp, ep, micro_batch, vpp;
  std::vector<config::ScheduleKind> schedules;
  std::vector<config::Recompute> recompute;
  int dp = 0;                        // > 0: held fixed
  int sequence_parallel = -1;        // 0/1: held fixed; -1: on with tp > 1
  std::vector<std::string> fixed;    // the held keys, for the header
  Framework framework = Framework::any;
  // DualPipe's F&B arrangement (moe.fb_rearrange: 1 the DeepSeek-V3 report's Figure 4, 0 the
  // plain alternation), searched for MoE models with ep > 1 under dualpipe / dualpipev, the only
  // points where it changes the step; empty: not searched (dense models, no DualPipe schedule).
  std::vector<int> fb_rearrange;
  // Megatron's EP all-to-all overlap (moe.overlap_ep_comm) tried on and off where its schedule has it.
  bool overlap_ep_comm = false;
  // Full recompute of the first N layers of each chunk only (features.recompute_num_layers, Megatron's block
  // method) tried at a quarter, a half and three quarters of a chunk's mean layers and at the scenario's own N,
  // beside every layer (Megatron's framework or any, dense models, Megatron's code; not when the key or
  // features.recompute is held).
  bool recompute_num_layers = false;
  // Where it is not searched, full recompute keeps the scenario's N (true: held, or a framework with the block
  // method) or recomputes every layer (false: torchtitan's and DeepSpeed's, which have no block method).
  bool keep_recompute_num_layers = true;
};
SearchSpace search_space(const config::Scenario& base, int gpus, const SearchConstraints& = {});
// One line: "tp 1,2,4,8 | cp 1,2,4 | ... (held by --set: schedule.name; framework megatron)".
std::string describe(const SearchSpace&);

struct PlanOptions {
  bool prune = true;           // memory lower-bound pruning before simulation
  bool per_layer = false;      // simulation granularity (see step::LowerOptions)
  std::size_t keep = 0;        // keep only the best `keep` results (0 = all)
  // With keep > 0: simulate in order of a step-time lower bound and stop once
  // the bound exceeds the keep-th best step found (the top `keep` are the same
  // as without it; the rest are counted as skipped, not simulated).
  bool bound_time = true;
  unsigned threads = 0;        // 0 = all cores
  SearchConstraints constraints{};   // held keys and framework (--set, --framework)
  // Memory each GPU must keep free beyond the simulated peak (which already
  // holds the runtime reserve): a point fits when peak + headroom <= HBM.
  double headroom_bytes = 0;
  Shard shard{};               // --shard K/N: only that slice of the enumerated layouts
};

struct PlanPoint {
  config::Scenario scenario;   // the candidate layout
  step::StepResult result;   // without graph/timeline
};

struct PlanResult {
  int gpus = 0;
  std::string hardware;
  std::size_t considered = 0;     // layouts enumerated
  std::size_t invalid = 0;        // shape rules / divisibility
  std::size_t pruned = 0;         // cannot fit (memory lower bound)
  std::size_t skipped = 0;        // cannot reach the top `keep` (step-time lower bound); not simulated
  std::size_t simulated = 0;
  std::size_t failed = 0;         // points whose simulation failed (see failures)
  // Why: each distinct error message with its count (a step beyond the time
  // limit, an internal error), so that no failed point goes unexplained.
  std::map<std::string, std::size_t> failures;
  std::size_t fitting = 0;
  std::string searched;           // describe(search_space(...)): what the search varied
  double seconds = 0;             // wall time of plan()
  std::vector<PlanPoint> ranked;  // fitting points, fastest first
};

// Every layout of the search space for `gpus` GPUs, before any check.
std::vector<config::Scenario> enumerate_layouts(const config::Scenario& base, int gpus,
                                                const SearchConstraints& = {});
// A lower bound of the simulated peak memory over the pipeline ranks (bytes):
// each rank's static memory (weights, gradients, optimizer state of every
// stage it holds) plus the activations of the micro-batches whose forward has
// run and whose backward has not, counted right after each forward in the
// rank's op order (schedule-exact; W stashes and recompute buffers left out),
// plus the runtime reserve.
double memory_lower_bound(const config::Scenario&);

// Whether ZeRO-3 proposed from `base` (plan's ZeRO-3 layouts, diagnose's ZeRO-3 lever) runs as Megatron-FSDP
// (features.megatron_fsdp): a Megatron-FSDP base stays one; from a base below ZeRO-3 a Megatron block shards as
// Megatron-FSDP and torchtitan's as PyTorch's FSDP2; a PyTorch FSDP base stays PyTorch's.
bool zero3_as_megatron_fsdp(const config::Scenario& base);
// A lower bound of the simulated step time (seconds), from the same cost
// model as the lowering, without communication, bubbles or contention (which
// only add): the larger of the compute the busiest pipeline rank's stream
// must run (m micro-batches through every stage it holds: forward, backward,
// weight gradient, recompute) and one micro-batch's forward through all
// stages and backward back (a chain of dependencies).
double step_time_lower_bound(const config::Scenario&);
std::string layout_label(const config::Scenario&);

PlanResult plan(const config::Scenario& base, int gpus, const PlanOptions& = {}, const Progress& = {});

// The objectives of a plan point for a purchase comparison.
struct Objectives {
  double time_s = 0;   // time to train tokens_to_train (or seconds per token when not given)
  double gpus = 0;
  double cost = 0;     // USD (or GPU-seconds per token when no price / tokens)
};
Objectives objectives(const step::StepResult&);
double rank_key(const step::StepResult&, RankBy);
// Pareto front of (time to train, GPUs, cost), all minimised: true where no
// other point is at least as good in all three and better in one.
std::vector<bool> pareto_front(const std::vector<Objectives>&);

}  // namespace mfusim::study
