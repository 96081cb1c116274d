#include "schedules/lab.h"

#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

#include "sim/time.h"

namespace mfusim::schedules {
namespace {

constexpr std::int64_t kUnit = kLabMemoryUnit;   // memory_delta of one micro-batch's activations

struct Lowering {
  explicit Lowering(const PipelineSchedule& sched) : s(sched) {}
  const PipelineSchedule& s;
  sim::TaskGraph g;
  int p = 0, S = 0, m = 0;
  std::int64_t comm_ns = 0;
  std::vector<sim::StreamId> compute;
  std::map<std::tuple<int, char, int>, sim::StreamId> send_streams;   // (rank, 'F'|'B', dest)
  std::vector<sim::TaskId> where;    // key(kind, mb, stage) -> task
  std::vector<int> rank_of_task;

  enum Half { kF = 0, kB = 1, kW = 2 };
  std::size_t key(int half, int mb, int stage) const {
    return (static_cast<std::size_t>(half) * static_cast<std::size_t>(m) + static_cast<std::size_t>(mb)) *
               static_cast<std::size_t>(S) + static_cast<std::size_t>(stage);
  }
  static std::string half_name(int half, int mb, int stage) {
    return std::string(half == kF ? "F" : half == kB ? "B" : "W") + " mb" + std::to_string(mb) + " stage" + std::to_string(stage);
  }
  void place(int half, int mb, int stage, sim::TaskId t, int rank) {
    if (mb < 0 || mb >= m || stage < 0 || stage >= S)
      throw std::logic_error(s.name + ": op " + half_name(half, mb, stage) + " out of range (stages=" + std::to_string(S) + ")");
    auto& slot = where[key(half, mb, stage)];
    if (slot >= 0) throw std::logic_error(s.name + ": op " + half_name(half, mb, stage) + " appears twice (rank " + std::to_string(rank) + ")");
    slot = t;
  }
  sim::TaskId find(int half, int mb, int stage) const {
    auto t = where[key(half, mb, stage)];
    if (t < 0) throw std::logic_error(s.name + ": op " + half_name(half, mb, stage) + " is missing from the schedule");
    return t;
  }
  sim::StreamId send_stream(int rank, char dir, int dest) {
    auto k = std::make_tuple(rank, dir, dest);
    auto it = send_streams.find(k);
    if (it != send_streams.end()) return it->second;
    auto id = g.add_stream(rank, "rank" + std::to_string(rank) + "/send-" + dir + "->rank" + std::to_string(dest), false);
    send_streams.emplace(k, id);
    return id;
  }
  void connect(sim::TaskId from, sim::TaskId to, char dir, int mb, int chunk) {
    const int a = rank_of_task[static_cast<std::size_t>(from)], b = rank_of_task[static_cast<std::size_t>(to)];
    if (a == b) {
      g.depend(from, to);
      return;
    }
    sim::TaskSpec x;
    x.stream = send_stream(a, dir, b);
    x.duration_ns = comm_ns;
    x.category = sim::Category::pp_comm;
    x.kind = 'S';
    x.microbatch = mb;
    x.chunk = chunk;
    auto t = g.add(x, label(Op{.kind = dir == 'F' ? OpKind::F : OpKind::B, .stage = 0, .microbatch = mb, .chunk = chunk}));
    rank_of_task.push_back(a);
    g.depend(from, t);
    g.depend(t, to);
  }
};

}  // namespace

StageCosts stage_costs(const config::ScheduleCosts& c, int ranks, int max_inflight, double w_memory_fraction) {
  return uniform_costs(ranks, c.f, c.b, c.w.value_or(0.0), c.comm, max_inflight, w_memory_fraction);
}

sim::TaskGraph lower_lab(const PipelineSchedule& s, const config::ScheduleCosts& c, const LabOptions& o) {
  Lowering L(s);
  L.p = static_cast<int>(s.order.size());
  L.S = s.stages;
  for (const auto& ops : s.order)
    for (const Op& op : ops) L.m = std::max({L.m, op.microbatch + 1, op.microbatch_b + 1});
  if (L.p < 1 || L.S < 1) throw std::logic_error(s.name + ": empty schedule");
  L.where.assign(static_cast<std::size_t>(3 * L.m * L.S), -1);
  L.comm_ns = sim::checked_ns(c.comm, "the lab schedule's stage-to-stage send time");
  const double w = c.w.value_or(0.0);
  const std::int64_t f_ns = sim::checked_ns(c.f, "the lab schedule's forward time"),
                     w_ns = sim::checked_ns(w, "the lab schedule's weight-gradient time");
  // Per op: a B split from its W costs b (W costs w); an unsplit B is the whole backward, b + w.
  // DualPipe mixes both in one schedule (dualpipe.py runs some backwards with enable_zb=False).
  const std::int64_t b_split_ns = sim::checked_ns(c.b, "the lab schedule's backward time"),
                     b_full_ns = sim::checked_ns(c.b + w, "the lab schedule's backward + weight-gradient time");
  const std::int64_t fb_ns = sim::checked_ns(c.fb.value_or(c.f + c.b + w), "the lab schedule's F&B time");
  const std::int64_t mw = std::llround(o.w_memory_fraction * static_cast<double>(kUnit));
  std::vector<char> b_split(static_cast<std::size_t>(L.m * L.S), 0);   // (mb, stage): its B is split from W

  std::size_t n_ops = 0;
  for (const auto& ops : s.order) n_ops += ops.size();
  L.g.reserve(n_ops * 2);
  L.rank_of_task.reserve(n_ops * 2);
  for (int r = 0; r < L.p; ++r) L.compute.push_back(L.g.add_stream(r, "rank" + std::to_string(r) + "/compute", true));

  // Pass 1: one compute task per op, routed by (kind, microbatch, stage).
  for (int r = 0; r < L.p; ++r)
    for (const Op& op : s.order[static_cast<std::size_t>(r)]) {
      sim::TaskSpec t;
      t.stream = L.compute[static_cast<std::size_t>(r)];
      t.microbatch = op.microbatch;
      t.chunk = op.chunk;
      switch (op.kind) {
        case OpKind::F: t.duration_ns = f_ns; t.category = sim::Category::forward; t.kind = 'F'; t.memory_delta = kUnit; break;
        case OpKind::B:
          t.duration_ns = op.split_w ? b_split_ns : b_full_ns;
          t.category = sim::Category::backward;
          t.kind = 'B';
          t.memory_delta = -(kUnit - (op.split_w ? mw : 0));
          if (op.split_w) b_split[static_cast<std::size_t>(op.microbatch * L.S + op.stage)] = 1;
          break;
        case OpKind::W: t.duration_ns = w_ns; t.category = sim::Category::weight_grad; t.kind = 'W'; t.memory_delta = -mw; break;
        case OpKind::FB:
          t.duration_ns = fb_ns; t.category = sim::Category::forward; t.kind = 'X';
          t.memory_delta = kUnit;
          t.memory_release = kUnit - (op.split_w ? mw : 0);
          if (op.split_w) b_split[static_cast<std::size_t>(op.microbatch_b * L.S + op.stage_b)] = 1;
          break;
      }
      auto id = L.g.add(t, label(op));
      L.rank_of_task.push_back(r);
      switch (op.kind) {
        case OpKind::F: L.place(Lowering::kF, op.microbatch, op.stage, id, r); break;
        case OpKind::B: L.place(Lowering::kB, op.microbatch, op.stage, id, r); break;
        case OpKind::W: L.place(Lowering::kW, op.microbatch, op.stage, id, r); break;
        case OpKind::FB:
          L.place(Lowering::kF, op.microbatch, op.stage, id, r);
          L.place(Lowering::kB, op.microbatch_b, op.stage_b, id, r);
          break;
      }
    }
  // Every (microbatch, stage) needs its F and B, and a W exactly when that B is split.
  for (int mb = 0; mb < L.m; ++mb)
    for (int st = 0; st < L.S; ++st) {
      L.find(Lowering::kF, mb, st);
      L.find(Lowering::kB, mb, st);
      if (b_split[static_cast<std::size_t>(mb * L.S + st)]) L.find(Lowering::kW, mb, st);
      else if (L.where[L.key(Lowering::kW, mb, st)] >= 0)
        throw std::logic_error(s.name + ": W op for mb" + std::to_string(mb) + " stage" + std::to_string(st) +
                               " but its B is not split");
    }

  // Pass 2, in each producer's order (so each send stream is in production order):
  // F(mb, s) -> F(mb, s+1), or -> B(mb, S-1) at the last stage; F(mb, s) -> B(mb, s);
  // B(mb, s) -> B(mb, s-1); B(mb, s) -> W(mb, s).
  auto outputs_f = [&](sim::TaskId t, int mb, int st, int chunk) {
    if (st + 1 < L.S) L.connect(t, L.find(Lowering::kF, mb, st + 1), 'F', mb, chunk);
    auto b = L.find(Lowering::kB, mb, st);
    if (b != t) {
      if (st + 1 == L.S) L.connect(t, b, 'F', mb, chunk);
      else L.g.depend(t, b);
    }
  };
  auto outputs_b = [&](sim::TaskId t, int mb, int st, int chunk) {
    if (st > 0) L.connect(t, L.find(Lowering::kB, mb, st - 1), 'B', mb, chunk);
    if (b_split[static_cast<std::size_t>(mb * L.S + st)]) L.g.depend(t, L.find(Lowering::kW, mb, st));
  };
  sim::TaskId id = 0;
  for (int r = 0; r < L.p; ++r)
    for (const Op& op : s.order[static_cast<std::size_t>(r)]) {
      // Compute tasks were added first, in this same order: ids 0..n_ops-1.
      switch (op.kind) {
        case OpKind::F: outputs_f(id, op.microbatch, op.stage, op.chunk); break;
        case OpKind::B: outputs_b(id, op.microbatch, op.stage, op.chunk); break;
        case OpKind::W: break;
        case OpKind::FB:
          outputs_f(id, op.microbatch, op.stage, op.chunk);
          outputs_b(id, op.microbatch_b, op.stage_b, op.chunk_b);
          break;
      }
      ++id;
    }
  return std::move(L.g);
}

LabResult run_lab(const PipelineSchedule& s, const config::ScheduleCosts& c, const LabOptions& o) {
  LabResult r;
  r.graph = lower_lab(s, c, o);
  r.timeline = sim::run(r.graph);
  r.makespan_s = r.timeline.makespan.seconds();
  const int p = static_cast<int>(s.order.size());
  r.busy_s.assign(static_cast<std::size_t>(p), 0.0);
  for (std::size_t st = 0; st < r.graph.streams().size(); ++st) {
    const auto& spec = r.graph.streams()[st];
    if (spec.compute) r.busy_s[static_cast<std::size_t>(spec.rank)] += static_cast<double>(r.timeline.busy_ns[st]) * 1e-9;
  }
  const double span = static_cast<double>(r.timeline.makespan.ns);
  double idle = 0;
  for (int k = 0; k < p; ++k) idle += span > 0 ? (span - r.busy_s[static_cast<std::size_t>(k)] * 1e9) / span : 0.0;
  r.bubble_fraction = idle / p;
  for (auto bytes : r.timeline.peak_memory) r.peak_activations.push_back(static_cast<double>(bytes) / static_cast<double>(kUnit));
  r.peak_activations.resize(static_cast<std::size_t>(p), 0.0);
  return r;
}

}  // namespace mfusim::schedules
