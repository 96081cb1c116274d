// The executor: plays a TaskGraph on its streams and records the Timeline.
// One loop over a (time, seq) event queue of task completions (ns-3 style);
// a finished task releases its successors (SimGrid style). The fast path
// (no resources, no contention) computes each end time once at start; the
// dynamic path keeps per-task progress and rate, and re-times the tasks on a
// resource (or a rank's compute tasks) when the set of active tasks changes.
// Dependencies come from the TaskGraph's Boost CSR graph: adjacent_vertices
// (successors) drive the dependency counters, in_edges (predecessors) the
// critical path and the deadlock report.
#include <algorithm>
#include <cmath>
#include <span>
#include <sstream>
#include <string>

#include "sim/engine.h"
#include "sim/event_queue.h"

namespace mfusim::sim {
namespace {

struct Ev { TaskId task; std::uint32_t version; };

std::string describe(const TaskGraph& g, TaskId t) {
  const TaskSpec& s = g.task(t);
  std::string out = "task " + std::to_string(t);
  if (!s.name.empty()) out += " '" + s.name + "'";
  out += " on " + g.streams()[static_cast<std::size_t>(s.stream)].name;
  return out;
}

class Executor {
 public:
  explicit Executor(const TaskGraph& g) : g_(g) {}

  Timeline play();

 private:
  void try_start(StreamId s, std::int64_t now);
  void start(TaskId t, std::int64_t now);
  void finish(TaskId t, std::int64_t now);
  double rate_of(TaskId t) const;
  void retime(TaskId t, std::int64_t now, bool force);
  void retime_neighbours(TaskId t, std::int64_t now);
  void memory_change(int rank, std::int64_t delta, std::int64_t now);
  [[noreturn]] void deadlock(std::int64_t now) const;
  void critical_path();

  const TaskGraph& g_;
  std::size_t n_ = 0;
  bool dynamic_ = false;
  bool track_memory_ = false;
  EventQueue<Ev> queue_;
  Timeline tl_;
  // per task
  const TaskGraph::Graph* graph_ = nullptr;   // successors (out-edges), predecessors (in-edges)
  std::vector<std::int32_t> pending_;
  std::vector<std::int32_t> stream_of_;
  std::vector<std::int64_t> duration_, alloc_, free_;
  std::vector<std::int32_t> res_begin_, res_;     // resources per task, flattened (dynamic path)
  std::vector<char> interferes_;                  // task slows its rank's compute (non-compute stream)
  std::span<const ResourceId> resources_of(std::size_t i) const {
    return {res_.data() + res_begin_[i], static_cast<std::size_t>(res_begin_[i + 1] - res_begin_[i])};
  }
  std::vector<std::int32_t> queue_begin_, queue_end_, queue_flat_;   // stream queues, flattened
  std::vector<std::int64_t> start_, end_;
  std::vector<double> remaining_, rate_;
  std::vector<std::int64_t> last_update_;
  std::vector<std::uint32_t> version_;
  // per stream
  std::vector<std::int32_t> head_, running_;
  std::vector<int> rank_of_stream_;
  std::vector<char> compute_;
  // per rank
  std::vector<std::int64_t> memory_;
  std::vector<std::int32_t> interferers_;
  std::vector<std::vector<StreamId>> compute_streams_;
  // per resource
  std::vector<std::vector<TaskId>> active_;
  std::vector<double> capacity_;
  double slowdown_ = 1.0;
  std::size_t finished_ = 0;
};

void Executor::memory_change(int rank, std::int64_t delta, std::int64_t now) {
  auto r = static_cast<std::size_t>(rank);
  memory_[r] += delta;
  tl_.peak_memory[r] = std::max(tl_.peak_memory[r], memory_[r]);
  tl_.memory[r].push_back(MemoryPoint{Time{now}, memory_[r]});
}

double Executor::rate_of(TaskId t) const {
  double r = 1.0;
  for (ResourceId res : resources_of(static_cast<std::size_t>(t))) {
    auto i = static_cast<std::size_t>(res);
    r = std::min(r, capacity_[i] / static_cast<double>(active_[i].size()));
  }
  auto st = static_cast<std::size_t>(stream_of_[static_cast<std::size_t>(t)]);
  if (compute_[st] && interferers_[static_cast<std::size_t>(rank_of_stream_[st])] > 0) r /= slowdown_;
  return r;
}

void Executor::retime(TaskId t, std::int64_t now, bool force) {
  auto i = static_cast<std::size_t>(t);
  const double r = rate_of(t);
  if (!force && r == rate_[i]) return;
  if (!force) remaining_[i] = std::max(0.0, remaining_[i] - rate_[i] * static_cast<double>(now - last_update_[i]));
  last_update_[i] = now;
  rate_[i] = r;
  ++version_[i];
  const auto left = static_cast<std::int64_t>(std::ceil(remaining_[i] / r - 1e-6));
  queue_.insert(now + std::max<std::int64_t>(0, left), Ev{t, version_[i]});
}

// Re-time every running task whose rate depends on t being active: those on
// t's resources, and the rank's compute tasks when t interferes.
void Executor::retime_neighbours(TaskId t, std::int64_t now) {
  const auto i = static_cast<std::size_t>(t);
  for (ResourceId res : resources_of(i))
    for (TaskId u : active_[static_cast<std::size_t>(res)])
      if (u != t) retime(u, now, false);
  auto st = static_cast<std::size_t>(stream_of_[i]);
  if (interferes_[i])
    for (StreamId cs : compute_streams_[static_cast<std::size_t>(rank_of_stream_[st])]) {
      TaskId u = running_[static_cast<std::size_t>(cs)];
      if (u >= 0) retime(u, now, false);
    }
}

void Executor::start(TaskId t, std::int64_t now) {
  auto i = static_cast<std::size_t>(t);
  auto st = static_cast<std::size_t>(stream_of_[i]);
  running_[st] = t;
  start_[i] = now;
  if (alloc_[i] != 0) memory_change(rank_of_stream_[st], alloc_[i], now);
  if (!dynamic_) {
    queue_.insert(now + duration_[i], Ev{t, 0});
    return;
  }
  for (ResourceId res : resources_of(i)) active_[static_cast<std::size_t>(res)].push_back(t);
  if (interferes_[i]) ++interferers_[static_cast<std::size_t>(rank_of_stream_[st])];
  remaining_[i] = static_cast<double>(duration_[i]);
  retime(t, now, true);
  retime_neighbours(t, now);
}

void Executor::try_start(StreamId s, std::int64_t now) {
  auto st = static_cast<std::size_t>(s);
  if (running_[st] >= 0 || head_[st] >= queue_end_[st]) return;
  TaskId t = queue_flat_[static_cast<std::size_t>(head_[st])];
  if (pending_[static_cast<std::size_t>(t)] == 0) start(t, now);
}

void Executor::finish(TaskId t, std::int64_t now) {
  auto i = static_cast<std::size_t>(t);
  const StreamId stream = stream_of_[i];
  auto st = static_cast<std::size_t>(stream);
  end_[i] = now;
  tl_.interval_of[i] = static_cast<std::int32_t>(tl_.intervals.size());
  tl_.intervals.push_back(Interval{t, Time{start_[i]}, Time{now}});
  tl_.busy_ns[st] += now - start_[i];
  ++finished_;
  if (free_[i] != 0) memory_change(rank_of_stream_[st], -free_[i], now);
  running_[st] = -1;
  ++head_[st];
  if (dynamic_) {
    for (ResourceId res : resources_of(i)) {
      auto& a = active_[static_cast<std::size_t>(res)];
      auto it = std::find(a.begin(), a.end(), t);
      *it = a.back();
      a.pop_back();
    }
    if (interferes_[i]) --interferers_[static_cast<std::size_t>(rank_of_stream_[st])];
    retime_neighbours(t, now);
  }
  try_start(stream, now);
  for (auto [v, v_end] = boost::adjacent_vertices(static_cast<std::uint32_t>(t), *graph_); v != v_end; ++v)
    if (--pending_[*v] == 0) try_start(stream_of_[*v], now);
}

Timeline Executor::play() {
  n_ = g_.size();
  const auto& streams = g_.streams();
  const std::size_t S = streams.size();
  const auto R = static_cast<std::size_t>(g_.ranks());
  const auto& graph = g_.graph();
  graph_ = &graph;

  const auto& tasks = g_.tasks();
  pending_.resize(n_);
  stream_of_.resize(n_);
  duration_.resize(n_);
  alloc_.resize(n_);
  free_.resize(n_);
  interferes_.resize(n_);
  res_begin_.resize(n_ + 1);
  res_begin_[0] = 0;
  res_.clear();
  bool any_resources = false, any_interferes = false;
  for (std::size_t v = 0; v < n_; ++v) {
    const TaskSpec& s = tasks[v];
    stream_of_[v] = s.stream;
    duration_[v] = s.duration_ns;
    alloc_[v] = s.memory_delta > 0 ? s.memory_delta : 0;
    free_[v] = (s.memory_delta < 0 ? -s.memory_delta : 0) + s.memory_release;
    interferes_[v] = s.interferes && !streams[static_cast<std::size_t>(s.stream)].compute;
    if (!s.resources.empty()) {
      res_.insert(res_.end(), s.resources.begin(), s.resources.end());
      any_resources = true;
    }
    res_begin_[v + 1] = static_cast<std::int32_t>(res_.size());
    any_interferes |= s.interferes;
    track_memory_ |= s.memory_delta != 0 || s.memory_release != 0;
    pending_[v] = static_cast<std::int32_t>(boost::in_degree(static_cast<std::uint32_t>(v), graph));
  }
  dynamic_ = any_resources || (any_interferes && g_.contention() > 0);
  slowdown_ = 1.0 + g_.contention();

  start_.assign(n_, -1);
  end_.assign(n_, -1);
  queue_flat_.clear();
  queue_flat_.reserve(n_);
  queue_begin_.resize(S);
  queue_end_.resize(S);
  for (std::size_t s = 0; s < S; ++s) {
    const auto& q = g_.stream_tasks(static_cast<StreamId>(s));
    queue_begin_[s] = static_cast<std::int32_t>(queue_flat_.size());
    queue_flat_.insert(queue_flat_.end(), q.begin(), q.end());
    queue_end_[s] = static_cast<std::int32_t>(queue_flat_.size());
  }
  head_ = queue_begin_;
  running_.assign(S, -1);
  rank_of_stream_.resize(S);
  compute_.resize(S);
  compute_streams_.assign(R, {});
  for (std::size_t s = 0; s < S; ++s) {
    rank_of_stream_[s] = streams[s].rank;
    compute_[s] = streams[s].compute;
    if (streams[s].compute) compute_streams_[static_cast<std::size_t>(streams[s].rank)].push_back(static_cast<StreamId>(s));
  }
  memory_.assign(R, 0);
  interferers_.assign(R, 0);
  if (dynamic_) {
    remaining_.assign(n_, 0);
    rate_.assign(n_, 0);
    last_update_.assign(n_, 0);
    version_.assign(n_, 0);
    active_.assign(g_.resources().size(), {});
    capacity_.clear();
    for (const auto& r : g_.resources()) capacity_.push_back(r.capacity);
  }
  tl_.intervals.reserve(n_);
  tl_.interval_of.assign(n_, -1);
  tl_.peak_memory.assign(R, 0);
  tl_.memory.assign(track_memory_ ? R : 0, {});
  tl_.busy_ns.assign(S, 0);
  queue_.reserve(std::min<std::size_t>(n_, S * 4 + 16));

  std::int64_t now = 0;
  for (std::size_t s = 0; s < S; ++s) try_start(static_cast<StreamId>(s), 0);
  while (!queue_.empty()) {
    const auto e = queue_.remove_next();
    ++tl_.events;
    if (dynamic_ && e.payload.version != version_[static_cast<std::size_t>(e.payload.task)]) continue;
    now = e.time;
    finish(e.payload.task, now);
  }
  if (finished_ != n_) deadlock(now);
  tl_.makespan = Time{now};
  critical_path();
  return std::move(tl_);
}

void Executor::critical_path() {
  if (n_ == 0) return;
  std::vector<std::int32_t> pos(n_);
  for (std::size_t s = 0; s < g_.streams().size(); ++s) {
    const auto& q = g_.stream_tasks(static_cast<StreamId>(s));
    for (std::size_t k = 0; k < q.size(); ++k) pos[static_cast<std::size_t>(q[k])] = static_cast<std::int32_t>(k);
  }
  TaskId t = tl_.intervals.back().task;
  for (;;) {
    tl_.critical_path.push_back(t);
    auto i = static_cast<std::size_t>(t);
    TaskId best = -1;
    std::int64_t best_end = -1;
    auto consider = [&](TaskId u) {
      auto e = end_[static_cast<std::size_t>(u)];
      if (e <= start_[i] && e > best_end) { best = u; best_end = e; }
    };
    for (auto [e, e_end] = boost::in_edges(static_cast<std::uint32_t>(t), *graph_); e != e_end; ++e)
      consider(static_cast<TaskId>(boost::source(*e, *graph_)));
    if (pos[i] > 0) consider(g_.stream_tasks(stream_of_[i])[static_cast<std::size_t>(pos[i] - 1)]);
    if (best < 0) break;
    t = best;
  }
  std::reverse(tl_.critical_path.begin(), tl_.critical_path.end());
}

void Executor::deadlock(std::int64_t now) const {
  std::ostringstream out;
  out << "deadlock at t=" << now << " ns: " << finished_ << " of " << n_
      << " tasks finished; nothing can run. Next task of each unfinished stream:";
  for (std::size_t s = 0; s < g_.streams().size(); ++s) {
    if (head_[s] >= queue_end_[s]) continue;
    TaskId t = queue_flat_[static_cast<std::size_t>(head_[s])];
    out << "\n  " << g_.streams()[s].name << ": " << describe(g_, t) << " waits for";
    int shown = 0, more = 0;
    for (auto [e, e_end] = boost::in_edges(static_cast<std::uint32_t>(t), *graph_); e != e_end; ++e) {
      const auto u = static_cast<TaskId>(boost::source(*e, *graph_));
      if (end_[static_cast<std::size_t>(u)] >= 0) continue;
      if (shown == 4) { ++more; continue; }
      out << (shown++ ? ";" : "") << " " << describe(g_, u);
      const auto us = static_cast<std::size_t>(stream_of_[static_cast<std::size_t>(u)]);
      if (head_[us] < queue_end_[us] && queue_flat_[static_cast<std::size_t>(head_[us])] != u)
        out << " (queued behind " << describe(g_, queue_flat_[static_cast<std::size_t>(head_[us])]) << ")";
    }
    if (more) out << "; and " << more << " more";
    if (shown == 0) out << " nothing (not yet reached)";
  }
  throw Deadlock(out.str());
}

}  // namespace

Timeline run(const TaskGraph& g) { return Executor(g).play(); }

}  // namespace mfusim::sim
