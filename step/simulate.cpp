#include "step/simulate.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <stdexcept>

#include "models/accounting.h"
#include "schedules/lab.h"
#include "step/lower.h"
#include "sim/process_memory.h"
#include "step/analysis.h"

namespace mfusim::step {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

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
  r.step_time_s = T;
  r.tasks = static_cast<std::int64_t>(g.size());
  r.events = tl->events;
  r.warnings = low->warnings;
  auto parts = analyze(g, *tl, P, low.get());
  summarize(r, parts, T);

  // ---- throughput and utilisation ----
  const double tokens = static_cast<double>(s.training.global_batch) * s.training.seq_len;
  const auto pc = models::count_params(s.model);
  r.params = pc.total;
  r.activated_params = pc.activated;
  r.model_flops_per_token = models::model_flops_per_token(s.model, s.training.seq_len, true);
  const double peak = s.hardware.peak_flops(s.training.precision);
  r.tokens_per_s = T > 0 ? tokens / T : 0;
  r.tokens_per_s_per_gpu = r.tokens_per_s / s.gpus;
  const double denom = s.gpus * peak;
  r.mfu = denom > 0 ? models::model_flops_per_token(s.model, s.training.seq_len, false) * r.tokens_per_s / denom : 0;
  r.mfu_attn = denom > 0 ? r.model_flops_per_token * r.tokens_per_s / denom : 0;
  r.hfu = denom > 0 ? (r.model_flops_per_token +
                       models::recompute_flops_per_token(s.model, s.training.seq_len, s.features.recompute)) *
                          r.tokens_per_s / denom
                    : 0;
  r.tflops_per_gpu = r.mfu_attn * peak / 1e12;
  if (s.training.tokens_to_train > 0 && r.tokens_per_s > 0) {
    const double seconds = s.training.tokens_to_train / r.tokens_per_s;
    r.days_to_train = seconds / 86400.0;
    r.cost_usd = s.cost.price_per_gpu_hour * s.gpus * seconds / 3600.0;
  }

  // ---- memory, from the timeline's allocations ----
  r.memory.capacity_gib = s.hardware.hbm_bytes / kGiB;
  int peak_rank = 0;
  double peak_bytes = 0;
  for (int rk = 0; rk < P; ++rk) {
    const double act = rk < static_cast<int>(tl->peak_memory.size()) ? static_cast<double>(tl->peak_memory[rk]) : 0.0;
    const double total = low->static_bytes[rk] + act + kRuntimeReserveBytes;
    r.memory.per_stage_peak_gib.push_back(total / kGiB);
    if (total > peak_bytes) { peak_bytes = total; peak_rank = rk; }
  }
  r.memory.peak_gib = peak_bytes / kGiB;
  r.memory.fits = peak_bytes <= s.hardware.hbm_bytes;
  r.memory.params_gib = low->params_bytes[peak_rank] / kGiB;
  r.memory.grads_gib = low->grads_bytes[peak_rank] / kGiB;
  r.memory.optimizer_gib = low->optimizer_bytes[peak_rank] / kGiB;
  r.memory.activations_gib = (peak_bytes - low->static_bytes[peak_rank] - kRuntimeReserveBytes) / kGiB;
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
  const auto sched = schedules::generate(
      name, schedules::PipelineShape{s.parallel.pp, s.microbatches(), schedules::chunks_for(name, s.parallel.vpp)});
  auto lab = std::make_shared<schedules::LabResult>(schedules::run_lab(sched, *s.schedule.costs));
  StepResult r;
  r.scenario = s;
  r.microbatches = s.microbatches();
  r.step_time_s = lab->makespan_s;
  r.tasks = static_cast<std::int64_t>(lab->graph.size());
  r.events = lab->timeline.events;
  const auto parts = analyze(lab->graph, lab->timeline, s.parallel.pp, nullptr);
  summarize(r, parts, r.step_time_s);
  // Schedule lab: only the schedule is simulated; throughput and memory in
  // bytes are not defined (activations are counted in micro-batch units).
  r.memory.fits = true;
  r.warnings.push_back("schedule-lab mode: op costs from [schedule.costs]; no model FLOPs, communication or memory");
  for (std::size_t i = 0; i < lab->peak_activations.size(); ++i) r.ranks[i].peak_inflight_microbatches =
      static_cast<int>(std::ceil(lab->peak_activations[i] - 1e-9));
  if (opt.keep_timeline) {
    r.graph = std::shared_ptr<const sim::TaskGraph>(lab, &lab->graph);
    r.timeline = std::shared_ptr<const sim::Timeline>(lab, &lab->timeline);
  }
  return r;
}

}  // namespace mfusim::step
