#include "step/simulate.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "models/accounting.h"
#include "models/rank_shape.h"
#include "schedules/lab.h"
#include "step/lower.h"
#include "sim/process_memory.h"
#include "step/analysis.h"
#include "step/steady.h"

namespace mfusim::step {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// tokens_to_train at the simulated step, and the run around it (step/training_run.h): interruptions at
// the scenario's rate over all its GPUs, restarts, and checkpoint saves whose blocking part is, unless
// the scenario gives it, the largest rank's parameters and optimizer state copied to host memory over
// the hardware's host link (an asynchronous save: MegaScale's first stage, Megatron's async save).
void training_run(StepResult& r, const Lowered& low, int P) {
  const config::Scenario& s = r.scenario;
  const auto& rl = s.reliability;
  auto& run = r.run;
  double state = 0;
  for (int rk = 0; rk < P; ++rk)
    state = std::max(state, low.params_bytes[static_cast<std::size_t>(rk)] + low.optimizer_bytes[static_cast<std::size_t>(rk)]);
  run.checkpoint_state_gib = state / kGiB;
  if (rl.checkpoint_save_s) {
    run.checkpoint_save_s = *rl.checkpoint_save_s;
  } else if (s.hardware.pcie_bandwidth > 0) {
    run.checkpoint_save_s = state / s.hardware.pcie_bandwidth;
    run.save_from_host_link = true;
  } else {
    run.save_unpriced = true;
  }
  TrainingRunInput in;
  // Whole steps: the last one runs whole even where the tokens end inside it.
  const double tokens_per_step = static_cast<double>(s.training.global_batch) * s.training.seq_len;
  in.work_s = std::ceil(s.training.tokens_to_train / tokens_per_step - 1e-9) * r.step_time_s;
  in.step_s = r.step_time_s;
  in.interruption_rate = rl.interruptions_per_1k_gpu_days / 1000.0 * s.gpus / 86400.0;
  in.restart_s = rl.restart_minutes * 60.0;
  in.checkpoint_save_s = run.checkpoint_save_s;
  in.checkpoint_interval_s = rl.checkpoint_interval_minutes * 60.0;
  in.seed = s.seed;
  run.days_of_steps = in.work_s / 86400.0;
  run.sim = simulate_training_run(in);
  if (!run.sim.finishes) {   // no days: the report and the JSON say why
    char buf[400];
    std::snprintf(buf, sizeof buf,
                  "the run does not finish: an interruption every %.3g min on average (%.3g per 1,000 GPU-days over %d "
                  "GPUs) against %.3g-min checkpoint segments and %.3g-min restarts: a segment would need over a "
                  "million attempts (reliability.*)",
                  1.0 / in.interruption_rate / 60.0, rl.interruptions_per_1k_gpu_days, s.gpus,
                  (run.sim.interval_s + run.checkpoint_save_s) / 60.0, rl.restart_minutes);
    r.warnings.push_back(buf);
    return;
  }
  r.days_to_train = run.sim.wall_mean_s / 86400.0;
  r.cost_usd = s.cost.price_per_gpu_hour * s.gpus * run.sim.wall_mean_s / 3600.0;
}

}  // namespace

void check_work(const config::Scenario& s, bool per_layer) {
  const WorkEstimate w = estimate_work(s, per_layer);
  if (w.tasks <= kMaxStepTasks) return;
  char buf[640];
  std::snprintf(buf, sizeof buf,
                "mfusim: error: the step is too large to simulate: %d micro-batches per pipeline make %.3g pipeline "
                "ops and at least %.3g tasks (%s lowering, about %.3g GB), above the limit of %.3g tasks "
                "(docs/scenario.md, \"Limits on work and output\"); use %sfewer micro-batches per step (a larger "
                "training.micro_batch or parallel.dp, or a smaller training.global_batch)",
                s.microbatches(), w.ops, w.tasks, per_layer ? "per-layer" : "coarse", w.bytes * 1e-9,
                kMaxStepTasks, per_layer ? "`mfusim run --coarse` (one task per op) or " : "");
  throw WorkLimitError(buf);
}

StepResult simulate(const config::Scenario& s, const SimulateOptions& opt) {
  check_work(s, opt.per_layer);   // before any schedule or graph is built
  if (s.schedule.costs) return simulate_lab(s, opt);
  auto low = std::make_shared<Lowered>(lower(s, LowerOptions{opt.per_layer}));
  auto tl = std::make_shared<sim::Timeline>(sim::run(low->graph));
  const auto& g = low->graph;
  const int P = low->ranks;
  const double T = tl->makespan.ns * 1e-9;

  StepResult r;
  r.scenario = s;
  r.microbatches = s.microbatches();
  r.makespan_s = T;
  r.step_time_s = T;
  r.tasks = static_cast<std::int64_t>(g.size());
  r.events = tl->events;
  r.warnings = low->warnings;
  r.sync_group_ranks = low->sync_group_ranks;
  r.sync_pace = low->sync_pace;
  r.job_boards = low->job_boards;
  if (const std::string w = hardware::power_extrapolation_warning(s.calibration ? &*s.calibration : nullptr, s.hardware);
      !w.empty())
    r.warnings.push_back(w);
  // Consecutive steps where they can overlap: with optimizer post-validation each rank's next step
  // follows its own optimizer (and the parameter all-gathers after it or overlapping the next forward,
  // steady.h). Without it the global synchronisation before the optimizer starts every rank's next step
  // together, right after the synchronisation and its own optimizer step: one step's makespan is the
  // period, up to the ranks' different optimizer times (milliseconds), not worth two more simulations.
  const bool steady = s.features.optimizer_post_validation && P > 1;
  const StepLinks links = steady ? scenario_links(g) : StepLinks{};
  std::vector<RankParts> parts;
  std::vector<std::int64_t> peak_memory = tl->peak_memory;
  if (steady) {
    auto ss = steady_state(g, links, P, low.get());
    r.step_time_s = ss.period_s;
    r.steady_steps = ss.steps;
    parts = std::move(ss.parts);
    peak_memory = std::move(ss.peak_memory);
  } else {
    parts = analyze(g, *tl, P, low.get());
  }
  if (P > 1 && opt.split_imbalance) {
    // The schedule's own bubble, from the coarse lowering (one task per op).
    if (opt.per_layer) {
      const Lowered coarse = lower(s, LowerOptions{false});
      split_imbalance(parts, balanced_bubble(coarse.graph, &coarse, steady, P));
    } else {
      split_imbalance(parts, balanced_bubble(g, low.get(), steady, P));
    }
  }
  const double T_step = r.step_time_s;
  summarize(r, parts, T_step);

  // ---- throughput and utilisation ----
  const double tokens = static_cast<double>(s.training.global_batch) * s.training.seq_len;
  const auto pc = models::count_params(s.model);
  r.params = pc.total;
  r.activated_params = pc.activated;
  r.model_flops_per_token = models::model_flops_per_token(s.model, s.training.seq_len, true);
  const double peak = s.hardware.peak_flops(s.training.precision);
  r.tokens_per_s = T_step > 0 ? tokens / T_step : 0;
  r.tokens_per_s_per_gpu = r.tokens_per_s / s.gpus;
  const double denom = s.gpus * peak;
  r.mfu = denom > 0 ? models::model_flops_per_token(s.model, s.training.seq_len, false) * r.tokens_per_s / denom : 0;
  r.mfu_attn = denom > 0 ? r.model_flops_per_token * r.tokens_per_s / denom : 0;
  const models::RankShape shape = models::rank_shape(s);
  r.hfu = denom > 0 ? (r.model_flops_per_token +
                       models::recompute_flops_per_token(s.model, s.training.seq_len, s.features.recompute, &shape)) *
                          r.tokens_per_s / denom
                    : 0;
  r.tflops_per_gpu = r.mfu_attn * peak / 1e12;

  // ---- memory, from the timeline's allocations ----
  r.memory.capacity_gib = s.hardware.hbm_bytes / kGiB;
  int peak_rank = 0;
  double peak_bytes = 0;
  for (int rk = 0; rk < P; ++rk) {
    const double act = rk < static_cast<int>(peak_memory.size()) ? static_cast<double>(peak_memory[rk]) : 0.0;
    const double total = low->static_bytes[rk] + act + kRuntimeReserveBytes;
    r.memory.per_stage_peak_gib.push_back(total / kGiB);
    if (total > peak_bytes) { peak_bytes = total; peak_rank = rk; }
  }
  r.memory.peak_gib = peak_bytes / kGiB;
  r.memory.fits = peak_bytes <= s.hardware.hbm_bytes;
  r.memory.params_gib = low->params_bytes[peak_rank] / kGiB;
  r.memory.grads_gib = low->grads_bytes[peak_rank] / kGiB;   // + the backward's gradients held at the peak, below
  r.memory.optimizer_gib = low->optimizer_bytes[peak_rank] / kGiB;
  // (the plain PyTorch recipe: the gradients the backward had allocated by the peak are not activations)
  const double lazy_grads =
      low->lazy_grads.empty() ? 0.0 : static_cast<double>(held_at_peak(g, *tl, peak_rank, low->lazy_grads));
  r.memory.activations_gib = (peak_bytes - low->static_bytes[peak_rank] - lazy_grads - kRuntimeReserveBytes) / kGiB;
  r.memory.grads_gib += lazy_grads / kGiB;
  if (s.training.tokens_to_train > 0 && r.tokens_per_s > 0) training_run(r, *low, P);
  if (opt.reserved_memory) {
    const auto reserved = reserved_peaks(g, *tl, P, low.get());
    double top = 0;
    for (int rk = 0; rk < P; ++rk)
      top = std::max(top, low->static_bytes[rk] + static_cast<double>(reserved[static_cast<std::size_t>(rk)]) + kRuntimeReserveBytes);
    r.memory.peak_reserved_gib = top / kGiB;
  }
  if (opt.keep_timeline) {
    r.graph = std::shared_ptr<const sim::TaskGraph>(low, &low->graph);
    r.timeline = tl;
    r.task_info = std::shared_ptr<const std::vector<TaskInfo>>(low, &low->info);
  }
  return r;
}

}  // namespace mfusim::step

namespace mfusim::step {

StepResult simulate_lab(const config::Scenario& s, const SimulateOptions& opt) {
  const std::string name = config::to_string(s.schedule.name);
  // zb-auto plans from the lab's costs, under the lab's memory accounting (LabOptions: M_W / M_B).
  const schedules::LabOptions lab_opt;
  const auto sched = schedules::generate(
      name, pipeline_shape(s),
      schedules::stage_costs(*s.schedule.costs, s.parallel.pp, s.schedule.max_inflight, lab_opt.w_memory_fraction));
  auto lab = std::make_shared<schedules::LabResult>(schedules::run_lab(sched, *s.schedule.costs, lab_opt));
  StepResult r;
  r.scenario = s;
  r.microbatches = s.microbatches();
  r.makespan_s = lab->makespan_s;
  r.step_time_s = lab->makespan_s;
  r.tasks = static_cast<std::int64_t>(lab->graph.size());
  r.events = lab->timeline.events;
  // Without post-validation a global synchronisation before the optimizer starts every rank's next
  // step together: the period is one step's makespan. With it, each rank's next step follows its own
  // last op (steady.h).
  const bool steady = s.features.optimizer_post_validation && s.parallel.pp > 1;
  std::vector<RankParts> parts;
  std::vector<double> peak_activations = lab->peak_activations;
  if (steady) {
    auto ss = steady_state(lab->graph, lab_links(lab->graph, false), s.parallel.pp, nullptr);
    r.step_time_s = ss.period_s;
    r.steady_steps = ss.steps;
    parts = std::move(ss.parts);
    for (std::size_t i = 0; i < peak_activations.size() && i < ss.peak_memory.size(); ++i)
      peak_activations[i] = static_cast<double>(ss.peak_memory[i]) / static_cast<double>(schedules::kLabMemoryUnit);
  } else {
    parts = analyze(lab->graph, lab->timeline, s.parallel.pp, nullptr);
  }
  if (s.parallel.pp > 1 && opt.split_imbalance)
    split_imbalance(parts, balanced_bubble(lab->graph, nullptr, steady, s.parallel.pp));
  summarize(r, parts, r.step_time_s);
  // Schedule lab: only the schedule is simulated; throughput and memory in
  // bytes are not defined (activations are counted in micro-batch units).
  r.memory.fits = true;
  r.warnings.push_back("schedule-lab mode: op costs from [schedule.costs]; no model FLOPs, communication or memory");
  for (std::size_t i = 0; i < peak_activations.size(); ++i) r.ranks[i].peak_inflight_microbatches =
      static_cast<int>(std::ceil(peak_activations[i] - 1e-9));
  if (opt.keep_timeline) {
    r.graph = std::shared_ptr<const sim::TaskGraph>(lab, &lab->graph);
    r.timeline = std::shared_ptr<const sim::Timeline>(lab, &lab->timeline);
  }
  return r;
}

}  // namespace mfusim::step
