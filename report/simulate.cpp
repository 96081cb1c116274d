#include "report/simulate.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>

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
// The sweep needs each rank's start/end events in time order. A stream runs
// one task at a time in queue order, so each stream's events are already
// sorted; they are gathered per stream (runs) and merged, O(n log streams)
// instead of a sort of all events. Events at the same instant may come in any
// order: the sweep accrues time only when the clock moves, after every event
// at the previous instant has been applied.
std::vector<RankParts> analyze(const sim::TaskGraph& g, const sim::Timeline& tl, int P, const schedules::Lowered* low) {
  struct Ev { std::int64_t t; int delta; int part; };   // part -1: compute
  std::vector<RankParts> parts(P);
  const auto& streams = g.streams();
  for (const auto& iv : tl.intervals) {
    const auto& task = g.task(iv.task);
    const auto& st = streams[task.stream];
    if (!st.compute) continue;
    auto& b = parts[st.rank].b;
    const double dur = (iv.end.ns - iv.start.ns) * 1e-9;
    const schedules::TaskInfo info = low ? low->info[iv.task] : schedules::TaskInfo{};
    const double nominal = task.duration_ns * 1e-9;
    const double launch = nominal > 0 ? info.launch_ns * 1e-9 * (dur / nominal) : 0;
    const double body = dur - launch;
    b.launch_overhead += launch;
    parts[st.rank].busy += dur;
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
      continue;
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
  }

  // Per rank: the events of each stream as one sorted run (run_end marks the ends).
  std::vector<std::vector<Ev>> evs(P);
  std::vector<std::vector<std::size_t>> run_end(P);
  for (std::size_t s = 0; s < streams.size(); ++s) {
    const int rank = streams[s].rank;
    auto& e = evs[rank];
    const std::size_t before = e.size();
    for (sim::TaskId t : g.stream_tasks(static_cast<sim::StreamId>(s))) {
      const int part = streams[s].compute ? -1 : part_of(g.task(t).category);
      if (!streams[s].compute && part < 0) continue;
      const auto& iv = tl.of(t);
      e.push_back({iv.start.ns, +1, part});
      e.push_back({iv.end.ns, -1, part});
    }
    if (e.size() > before) run_end[rank].push_back(e.size());
  }
  // Stage-to-stage sends also keep their receiving rank waiting: one run per
  // (sending stream, receiving rank), in task order (= queue order).
  if (low && !low->send_target.empty()) {
    std::map<std::pair<sim::StreamId, int>, std::vector<Ev>> recv;
    for (const auto& [t, target] : low->send_target) {
      const auto& task = g.task(t);
      const int part = part_of(task.category);
      if (part < 0 || streams[task.stream].rank == target) continue;
      const auto& iv = tl.of(t);
      auto& v = recv[{task.stream, target}];
      v.push_back({iv.start.ns, +1, part});
      v.push_back({iv.end.ns, -1, part});
    }
    for (const auto& [key, v] : recv) {
      auto& e = evs[key.second];
      e.insert(e.end(), v.begin(), v.end());
      run_end[key.second].push_back(e.size());
    }
  }

  std::vector<Ev> buf;
  for (int rk = 0; rk < P; ++rk) {
    auto& e = evs[rk];
    // Bottom-up merge of the sorted runs, by time.
    std::vector<std::size_t> ends = run_end[rk];
    while (ends.size() > 1) {
      buf.resize(e.size());
      std::vector<std::size_t> merged;
      std::size_t from = 0;
      for (std::size_t i = 0; i < ends.size(); i += 2) {
        const std::size_t mid = ends[i], to = i + 1 < ends.size() ? ends[i + 1] : ends[i];
        std::merge(e.begin() + from, e.begin() + mid, e.begin() + mid, e.begin() + to, buf.begin() + from,
                   [](const Ev& a, const Ev& b) { return a.t < b.t; });
        merged.push_back(to);
        from = to;
      }
      e.swap(buf);
      ends.swap(merged);
    }
    std::array<int, p_count> active{};
    int compute = 0;
    std::array<double, p_count + 1> exposed{};   // last slot: bubble
    std::int64_t prev = 0;
    auto account = [&](std::int64_t until) {
      if (until <= prev) return;
      if (compute == 0) {
        int which = p_count;
        for (int k = 0; k < p_count; ++k)
          if (active[k] > 0) { which = k; break; }
        exposed[which] += (until - prev) * 1e-9;
      }
      prev = until;
    };
    for (const Ev& x : e) {
      account(x.t);
      if (x.part < 0) compute += x.delta;
      else active[x.part] += x.delta;
    }
    account(tl.makespan.ns);
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
