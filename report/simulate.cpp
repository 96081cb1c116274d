#include "report/simulate.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <stdexcept>

#include "models/accounting.h"
#include "schedules/lab.h"
#include "schedules/lowering.h"

namespace mfusim::report {

namespace {

using sim::Category;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Exposed time is attributed to the communication the idle compute stream
// overlaps, in this priority (the first one present wins).
enum Part : int { p_tp, p_ep, p_cp, p_data, p_pp, p_dp, p_count };
int part_of(Category c) {
  switch (c) {
    case Category::tp_comm: return p_tp;
    case Category::ep_comm: return p_ep;
    case Category::cp_comm: return p_cp;
    case Category::dataloader: return p_data;
    case Category::pp_comm: return p_pp;
    case Category::dp_comm: return p_dp;
    default: return -1;
  }
}

struct RankParts {
  Breakdown b;
  double busy = 0;
};


// Per-rank breakdown read off the timeline: busy compute by category (merged
// op tasks split by their parts), and each idle stretch of the compute stream
// attributed to the communication it overlaps, else to the bubble.
//
// One sweep over the whole timeline in time order: the engine lists the tasks
// in completion order (intervals, ends non-decreasing) and in start order
// (started, starts non-decreasing), so merging the two lists gives every start
// and end event in time order without sorting. Each event goes to the sweep
// state of its rank (and of the receiving rank for a stage-to-stage send).
// Within a rank the events come in time order, as a sort of the rank's events
// would give them; events at the same instant may come in any order, because
// a rank's sweep accrues time only when its clock moves, after every event at
// the previous instant has been applied. So each rank accrues the same
// sequence of intervals, and every floating-point sum is the same, as a sweep
// over that rank's sorted events. The busy time by category is summed at the
// end events, in completion order.
std::vector<RankParts> analyze(const sim::TaskGraph& g, const sim::Timeline& tl, int P, const schedules::Lowered* low) {
  std::vector<RankParts> parts(P);
  const auto& streams = g.streams();
  if (tl.started.size() != tl.intervals.size())
    throw std::logic_error("analyze: the timeline lacks the start order of its tasks");

  struct Sweep {
    std::int64_t prev = 0;
    int compute = 0;
    std::array<int, p_count> active{};
    std::array<double, p_count + 1> exposed{};   // last slot: bubble
    void account(std::int64_t until) {
      if (until <= prev) return;
      if (compute == 0) {
        int which = p_count;
        for (int k = 0; k < p_count; ++k)
          if (active[k] > 0) { which = k; break; }
        exposed[which] += (until - prev) * 1e-9;
      }
      prev = until;
    }
    void apply(std::int64_t t, int delta, int part) {
      account(t);
      if (part < 0) compute += delta;
      else active[part] += delta;
    }
  };
  std::vector<Sweep> sweep(P);

  // Per stream: rank and role; per category: the part; per task: the rank a
  // stage-to-stage send also keeps waiting (-1: none).
  struct StreamRole { int rank; bool compute; };
  std::vector<StreamRole> role(streams.size());
  for (std::size_t s = 0; s < streams.size(); ++s) role[s] = {streams[s].rank, streams[s].compute};
  std::array<int, static_cast<std::size_t>(Category::count_)> part_of_cat{};
  for (std::size_t c = 0; c < part_of_cat.size(); ++c) part_of_cat[c] = part_of(static_cast<Category>(c));
  std::vector<int> recv_rank;
  if (low && !low->send_target.empty()) {
    recv_rank.assign(g.size(), -1);
    for (const auto& [t, target] : low->send_target) recv_rank[static_cast<std::size_t>(t)] = target;
  }

  // One event of task t at time x (+1 start, -1 end); returns the task's stream role.
  auto event = [&](sim::TaskId t, std::int64_t x, int delta) -> const StreamRole& {
    const auto& task = g.task(t);
    const StreamRole& r = role[static_cast<std::size_t>(task.stream)];
    if (r.compute) {
      sweep[r.rank].apply(x, delta, -1);
      return r;
    }
    const int part = part_of_cat[static_cast<std::size_t>(task.category)];
    if (part < 0) return r;
    sweep[r.rank].apply(x, delta, part);
    if (!recv_rank.empty()) {
      const int target = recv_rank[static_cast<std::size_t>(t)];
      if (target >= 0 && target != r.rank) sweep[target].apply(x, delta, part);
    }
    return r;
  };

  // Busy compute of a finished task, by category.
  auto busy = [&](const sim::Interval& iv, int rank) {
    const auto& task = g.task(iv.task);
    auto& b = parts[rank].b;
    const double dur = (iv.end.ns - iv.start.ns) * 1e-9;
    const schedules::TaskInfo info = low ? low->info[iv.task] : schedules::TaskInfo{};
    const double nominal = task.duration_ns * 1e-9;
    const double launch = nominal > 0 ? info.launch_ns * 1e-9 * (dur / nominal) : 0;
    const double body = dur - launch;
    b.launch_overhead += launch;
    parts[rank].busy += dur;
    if (info.parts >= 0) {
      // A merged op task: split its time over the parts it absorbed, in proportion.
      const auto& pt = low->parts[info.parts];
      std::int64_t sum = 0;
      for (auto x : pt) sum += x;
      const double scale = sum > 0 ? body / (sum * 1e-9) : 0;
      auto share = [&](Category c) { return pt[static_cast<std::size_t>(c)] * 1e-9 * scale; };
      b.forward += share(Category::forward);
      b.backward += share(Category::backward) + share(Category::weight_grad);
      b.recompute += share(Category::recompute);
      b.tp_comm_exposed += share(Category::tp_comm);
      b.ep_comm_exposed += share(Category::ep_comm);
      b.cp_comm_exposed += share(Category::cp_comm);
      return;
    }
    switch (task.category) {
      case Category::forward: b.forward += body; break;
      case Category::backward:
      case Category::weight_grad: b.backward += body; break;
      case Category::recompute: b.recompute += body; break;
      case Category::optimizer: b.optimizer += body; break;
      case Category::dataloader: b.dataloader += body; break;
      case Category::gc: b.gc += body; break;
      default: b.forward += body; break;
    }
  };

  // Merge the start order and the completion order by time.
  const std::size_t n = tl.intervals.size();
  std::size_t i = 0;
  for (const sim::Interval& iv : tl.intervals) {
    for (; i < n; ++i) {
      const sim::TaskId t = tl.started[i];
      const std::int64_t start = tl.of(t).start.ns;
      if (start > iv.end.ns) break;
      event(t, start, +1);
    }
    const StreamRole& r = event(iv.task, iv.end.ns, -1);
    if (r.compute) busy(iv, r.rank);
  }
  for (; i < n; ++i) {   // unreachable when every task ends after it starts; kept for safety
    const sim::TaskId t = tl.started[i];
    event(t, tl.of(t).start.ns, +1);
  }

  for (int rk = 0; rk < P; ++rk) {
    auto& sw = sweep[rk];
    sw.account(tl.makespan.ns);
    const auto& exposed = sw.exposed;
    auto& b = parts[rk].b;
    b.tp_comm_exposed += exposed[p_tp];
    b.ep_comm_exposed += exposed[p_ep];
    b.cp_comm_exposed += exposed[p_cp];
    b.dataloader += exposed[p_data];
    b.pp_comm_exposed = exposed[p_pp];
    b.dp_comm_exposed = exposed[p_dp];
    b.bubble = exposed[p_count];
  }
  return parts;
}

// The critical rank (least bubble) and the mean bubble fraction.
void summarize(StepResult& r, const std::vector<RankParts>& parts, double T) {
  const int P = static_cast<int>(parts.size());
  int crit = 0;
  double bubble_sum = 0;
  r.ranks.resize(P);
  for (int rk = 0; rk < P; ++rk) {
    bubble_sum += parts[rk].b.bubble;
    if (parts[rk].b.bubble < parts[crit].b.bubble) crit = rk;
    r.ranks[rk].busy_s = parts[rk].busy;
    r.ranks[rk].bubble_s = parts[rk].b.bubble;
    const auto& b = parts[rk].b;
    r.ranks[rk].exposed_comm_s = b.tp_comm_exposed + b.ep_comm_exposed + b.cp_comm_exposed + b.pp_comm_exposed + b.dp_comm_exposed;
  }
  r.breakdown = parts[crit].b;
  r.breakdown_rank = crit;
  r.bubble_fraction = T > 0 ? bubble_sum / P / T : 0;
}

}  // namespace

StepResult simulate(const config::Scenario& s, const SimulateOptions& opt) {
  if (s.schedule.costs) return simulate_lab(s, opt);
  auto low = std::make_shared<schedules::Lowered>(schedules::lower(s, schedules::LowerOptions{opt.per_layer}));
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
  }
  return r;
}

}  // namespace mfusim::report

namespace mfusim::report {

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

}  // namespace mfusim::report
