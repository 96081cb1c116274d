// Consecutive steps and the steady-state period (see steady.h).
#include "step/steady.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace mfusim::step {

namespace {

// Per rank: the compute stream's first and last task (-1 when it has none).
struct Ends {
  std::vector<sim::TaskId> first, last;
};
Ends compute_ends(const sim::TaskGraph& g) {
  const int P = g.ranks();
  Ends e;
  e.first.assign(static_cast<std::size_t>(P), -1);
  e.last.assign(static_cast<std::size_t>(P), -1);
  const auto& streams = g.streams();
  for (std::size_t s = 0; s < streams.size(); ++s) {
    if (!streams[s].compute) continue;
    const auto& q = g.stream_tasks(static_cast<sim::StreamId>(s));
    if (q.empty()) continue;
    const auto r = static_cast<std::size_t>(streams[s].rank);
    if (e.first[r] < 0 || q.front() < e.first[r]) e.first[r] = q.front();
    e.last[r] = std::max(e.last[r], q.back());
  }
  return e;
}

Breakdown minus(const Breakdown& a, const Breakdown& b) {
  Breakdown d;
  d.forward = a.forward - b.forward;
  d.backward = a.backward - b.backward;
  d.recompute = a.recompute - b.recompute;
  d.optimizer = a.optimizer - b.optimizer;
  d.tp_comm_exposed = a.tp_comm_exposed - b.tp_comm_exposed;
  d.pp_comm_exposed = a.pp_comm_exposed - b.pp_comm_exposed;
  d.dp_comm_exposed = a.dp_comm_exposed - b.dp_comm_exposed;
  d.ep_comm_exposed = a.ep_comm_exposed - b.ep_comm_exposed;
  d.bubble = a.bubble - b.bubble;
  d.imbalance = a.imbalance - b.imbalance;
  d.dataloader = a.dataloader - b.dataloader;
  d.gc = a.gc - b.gc;
  d.launch_overhead = a.launch_overhead - b.launch_overhead;
  d.cp_comm_exposed = a.cp_comm_exposed - b.cp_comm_exposed;
  return d;
}

}  // namespace

StepLinks lab_links(const sim::TaskGraph& g, bool synchronised) {
  StepLinks links;
  if (!synchronised) return links;
  const auto e = compute_ends(g);
  for (sim::TaskId a : e.last)
    for (sim::TaskId b : e.first)
      if (a >= 0 && b >= 0) links.emplace_back(a, b);
  return links;
}

StepLinks scenario_links(const sim::TaskGraph& g) {
  StepLinks links;
  const auto& tasks = g.tasks();
  const auto& streams = g.streams();
  const int P = g.ranks();
  const auto e = compute_ends(g);
  // Per rank: its optimizer step (the first optimizer task of its compute stream).
  std::vector<sim::TaskId> optim(static_cast<std::size_t>(P), -1);
  for (std::size_t s = 0; s < streams.size(); ++s) {
    if (!streams[s].compute) continue;
    for (sim::TaskId t : g.stream_tasks(static_cast<sim::StreamId>(s)))
      if (tasks[static_cast<std::size_t>(t)].category == sim::Category::optimizer) {
        optim[static_cast<std::size_t>(streams[s].rank)] = t;
        break;
      }
  }
  std::vector<char> has_pred(tasks.size(), 0);
  for (const auto& [a, b] : g.edges()) {
    has_pred[b] = 1;
    // What follows a rank's optimizer (the parameter all-gather when it is not overlapped) is needed
    // before the rank's next forward.
    const int r = streams[static_cast<std::size_t>(tasks[a].stream)].rank;
    if (static_cast<sim::TaskId>(a) == optim[static_cast<std::size_t>(r)] &&
        !streams[static_cast<std::size_t>(tasks[b].stream)].compute && e.first[static_cast<std::size_t>(r)] >= 0)
      links.emplace_back(static_cast<sim::TaskId>(b), e.first[static_cast<std::size_t>(r)]);
  }
  // A parameter all-gather at the start of a step gathers what the rank's optimizer of the step before wrote.
  for (std::size_t t = 0; t < tasks.size(); ++t) {
    // (not a blocking collective on a compute stream: delayed scaling's amax all-reduce)
    if (has_pred[t] || tasks[t].category != sim::Category::dp_comm ||
        streams[static_cast<std::size_t>(tasks[t].stream)].compute)
      continue;
    const auto r = static_cast<std::size_t>(streams[static_cast<std::size_t>(tasks[t].stream)].rank);
    if (optim[r] >= 0) links.emplace_back(optim[r], static_cast<sim::TaskId>(t));
  }
  return links;
}

sim::Timeline clamp_timeline(const sim::Timeline& tl, std::int64_t x) {
  sim::Timeline c;
  c.intervals = tl.intervals;
  c.interval_of = tl.interval_of;
  c.started = tl.started;
  c.makespan = sim::Time{std::min(x, tl.makespan.ns)};
  const bool waits = !tl.host_wait_ns.empty();
  if (waits) c.host_wait_ns = tl.host_wait_ns;
  for (std::size_t i = 0; i < c.intervals.size(); ++i) {
    auto& iv = c.intervals[i];
    iv.start.ns = std::min(iv.start.ns, x);
    const std::int64_t full = iv.end.ns - tl.intervals[i].start.ns;
    iv.end.ns = std::min(iv.end.ns, x);
    if (waits) {
      // The host wait is the tail of the task: what is left of it after the clamp.
      const std::int64_t cut = full - (iv.end.ns - iv.start.ns);
      c.host_wait_ns[i] = std::max<std::int64_t>(0, c.host_wait_ns[i] - cut);
    }
  }
  return c;
}

SteadyState steady_state(const sim::TaskGraph& g, const StepLinks& links, int P, const Lowered* low, int max_steps) {
  const std::size_t n = g.size();
  if (n == 0) throw std::logic_error("steady_state: an empty step");
  SteadyState out;
  auto play = [&](int K) {
    sim::TaskGraph m = g;
    m.reserve(n * static_cast<std::size_t>(K));
    const auto& edges = g.edges();
    std::vector<std::pair<sim::TaskId, sim::TaskId>> shifted(edges.size());
    for (int k = 1; k < K; ++k) {
      const auto base = static_cast<sim::TaskId>(n * static_cast<std::size_t>(k));
      const auto prev = static_cast<sim::TaskId>(n * static_cast<std::size_t>(k - 1));
      m.add_copies(g.tasks().data(), n);
      for (std::size_t i = 0; i < edges.size(); ++i)
        shifted[i] = {static_cast<sim::TaskId>(edges[i].first) + base, static_cast<sim::TaskId>(edges[i].second) + base};
      m.depend_all(shifted.data(), shifted.size());
      for (const auto& [a, b] : links) m.depend(a + prev, b + base);
    }
    return m;
  };
  int K = std::min(3, max_steps);
  sim::TaskGraph m;
  sim::Timeline tl;
  std::vector<std::int64_t> end;
  for (;;) {
    m = play(K);
    tl = sim::run(m);
    end.assign(static_cast<std::size_t>(K), 0);
    for (const auto& iv : tl.intervals) {
      auto& e = end[static_cast<std::size_t>(iv.task) / n];
      e = std::max(e, iv.end.ns);
    }
    out.settled = K >= 3 && end[K - 1] - end[K - 2] == end[K - 2] - end[K - 3];
    if (out.settled || K >= max_steps) break;
    ++K;
  }
  out.steps = K;
  const std::int64_t lo = K >= 2 ? end[static_cast<std::size_t>(K - 2)] : 0, hi = end[static_cast<std::size_t>(K - 1)];
  out.period_s = static_cast<double>(hi - lo) * 1e-9;
  out.peak_memory = tl.peak_memory;
  // The side information per task, repeated for each step.
  Lowered rep;
  const Lowered* low_rep = nullptr;
  if (low) {
    rep.info.reserve(low->info.size() * static_cast<std::size_t>(K));
    for (int k = 0; k < K; ++k) rep.info.insert(rep.info.end(), low->info.begin(), low->info.end());
    rep.parts = low->parts;
    for (int k = 0; k < K; ++k)
      for (const auto& [t, target] : low->send_target)
        rep.send_target.emplace_hint(rep.send_target.end(), t + static_cast<sim::TaskId>(n * static_cast<std::size_t>(k)),
                                     target);
    low_rep = &rep;
  }
  const auto a = analyze(m, clamp_timeline(tl, lo), P, low_rep);
  const auto b = analyze(m, clamp_timeline(tl, hi), P, low_rep);
  out.parts.resize(static_cast<std::size_t>(P));
  for (std::size_t r = 0; r < out.parts.size(); ++r) {
    out.parts[r].b = minus(b[r].b, a[r].b);
    out.parts[r].busy = b[r].busy - a[r].busy;
    out.parts[r].interference = b[r].interference - a[r].interference;
  }
  return out;
}

}  // namespace mfusim::step
