// The executor: plays a TaskGraph on its streams and records the Timeline.
// One loop over a (time, seq) event queue of task completions (ns-3 style);
// a finished task releases its successors (SimGrid style). The fast path
// (no resources, no contention) computes each end time once at start; the
// dynamic path keeps the progress and rate of each stream's running task, and
// re-times the tasks on a resource (or a rank's compute tasks) when the set of
// active tasks changes.
//
// Set-up reads the TaskGraph directly: task fields straight from its TaskSpecs
// (no per-task copies), successors from a CSR array built from its edge list
// in one counting sort (stable: successors keep their `depend` order, which
// fixes the tie order of simultaneous starts). The state of a running task
// lives with its stream (a stream runs one task at a time). Only resources that
// tasks of several streams use keep a list of active tasks: a resource of one
// stream is never shared. The critical path needs each task's latest-ending
// predecessor: it is noted when the predecessors finish (they finish in time
// order), so no predecessor lists are built; the deadlock report, which needs
// them, scans the edge list.
#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <sstream>
#include <string>

#include "sim/engine.h"
#include "sim/event_queue.h"
#include "sim/process_memory.h"
#include "sim/time.h"

namespace mfusim::sim {
namespace {

// The time left (ns) of `remaining` ns of work at rate r, rounded up; a slowed
// task that would end past the step limit is an error, never a wrapped cast.
std::int64_t slowed_ns(double remaining, double r) {
  const double left = std::ceil(remaining / r - 1e-6);
  if (!(left <= static_cast<double>(kMaxStepNs)))
    throw TimeLimitError("error: a task slowed by sharing or contention would end after " + time_limit_text() +
                         ": the simulated step is beyond the limit of the simulator");
  return static_cast<std::int64_t>(left);
}

// An event: the stream whose running task completes, stamped with the stream's
// version when it was queued (a re-timed task leaves stale events behind).
struct Ev { StreamId stream; std::uint32_t version; };

std::string describe(const TaskGraph& g, TaskId t) {
  const TaskSpec& s = g.task(t);
  std::string out = "task " + std::to_string(t);
  const std::string name = g.name(t);
  if (!name.empty()) out += " '" + name + "'";
  out += " on " + g.streams()[static_cast<std::size_t>(s.stream)].name;
  return out;
}

class Executor {
 public:
  explicit Executor(const TaskGraph& g) : g_(g), tasks_(g.tasks().data()) {}

  Timeline play();

 private:
  struct Stream {
    const TaskId* next = nullptr;   // queue head
    const TaskId* end = nullptr;
    TaskId running = -1;
    std::uint32_t version = 0;
    int rank = 0;
    bool compute = false;
    bool neighbours = false;        // dynamic path: the running task holds a shared resource or interferes
    std::int64_t started = 0;       // of the running task
    std::int64_t last_update = 0;   // dynamic path: when remaining was last brought up to date
    double remaining = 0;           // dynamic path: nanoseconds of work left at full rate
    double rate = 0;
    std::int64_t host_clock = 0;    // the host's issue of this stream's tasks so far (TaskSpec::host_ns)
    std::int64_t host_floor = 0;    // the running task ends no earlier (its issue by the host)
    std::int64_t host_wait = 0;     // how long past the end of its work (as last timed)
  };

  const TaskSpec& spec(TaskId t) const { return tasks_[static_cast<std::size_t>(t)]; }
  bool interferes(const TaskSpec& s, const Stream& st) const { return s.interferes != 0 && !st.compute; }
  // A task of class c started (+1) or ended (-1) on the rank: its compute's slowdown is that of
  // the slowest class running.
  void count_interferer(int rank, std::uint8_t c, int delta);
  // try_start is the check made for every finished predecessor (cheap, inlined);
  // start the work done once per task (one call, out of line).
  [[gnu::always_inline]] inline void try_start(StreamId s, std::int64_t now);
  [[gnu::noinline]] void start(Stream& st, StreamId s, TaskId t, std::int64_t now);
  void finish(StreamId s, std::int64_t now);
  [[gnu::always_inline]] inline double rate_of(const Stream& st, const TaskSpec& t) const;
  void retime(StreamId s, std::int64_t now, bool force);
  // Queues the running task's end: when its work ends, or later when the host has not issued it
  // yet (TaskSpec::host_ns); the difference is its host wait.
  [[gnu::always_inline]] inline void queue_end(Stream& st, StreamId s, std::int64_t work_end) {
    st.host_wait = std::max<std::int64_t>(0, st.host_floor - work_end);
    queue_.insert(work_end + st.host_wait, Ev{s, st.version});
  }
  void retime_neighbours(const Stream& st, const TaskSpec& spec, TaskId t, std::int64_t now);
  // A compute task on a rank starts (+1) or ends (-1): the rank's running tasks of a class that
  // slows beside compute (TaskGraph::contention_self) are re-timed when the rank's compute turns
  // on or off. A compute task that ends as another starts at the same time (the usual case)
  // changes nothing: finish() defers its check until the tasks it released have started.
  bool counts_as_compute(const Stream& st, const TaskSpec& sp) const { return any_self_ && st.compute && !sp.mix.host_only; }
  void retime_self(int rank, std::int64_t now);
  void memory_change(int rank, std::int64_t delta, std::int64_t now);
  [[noreturn]] void deadlock(std::int64_t now) const;
  void critical_path();

  const TaskGraph& g_;
  const TaskSpec* tasks_;
  std::size_t n_ = 0;
  bool dynamic_ = false;
  bool track_memory_ = false;
  EventQueue<Ev> queue_;
  Timeline tl_;
  // per task
  std::vector<std::uint32_t> succ_begin_, succ_;   // successors, CSR, in depend order
  // The dependency state of one task, in one array (a successor's update
  // touches one line), filled by one loop at set-up (no per-field memsets).
  struct Dep {
    std::int64_t ready_at;   // end of the latest-ending finished predecessor (-1: none)
    TaskId ready_by;         // that predecessor (the lowest id among equal ends)
    std::int32_t pending;    // predecessors not yet finished
  };
  std::unique_ptr<Dep[]> dep_;
  // per stream
  std::vector<Stream> streams_;
  // per rank
  std::vector<std::int64_t> memory_;
  std::vector<std::int32_t> interferers_;
  std::vector<std::array<std::int32_t, TaskGraph::kContentionClasses>> class_count_;   // per rank, per class
  // Per rank, the slowest active class's factor for each kind of compute (GEMM, attention), the
  // largest HBM fraction, and the largest uniform factor (classes of one factor for every kind).
  struct RankSlowdown { double gemm = 1, attention = 1, hbm = 0, uniform = 1; };
  std::vector<RankSlowdown> rank_slowdown_;
  std::array<double, TaskGraph::kContentionClasses> class_slowdown_{};
  std::array<double, TaskGraph::kContentionClasses> class_attention_{};
  std::array<double, TaskGraph::kContentionClasses> class_hbm_{};
  std::array<char, TaskGraph::kContentionClasses> class_uniform_{};
  std::array<double, TaskGraph::kContentionClasses> class_self_{};   // 1 + contention_self
  bool any_self_ = false;                 // some class slows beside compute
  std::vector<std::int32_t> computing_;   // per rank: running compute tasks (not host-only)
  std::vector<std::vector<StreamId>> comm_streams_;   // per rank (any_self_ only)
  int deferred_rank_ = -1;                // finish(): the rank whose compute-off check waits
  // A compute task's time multiplier beside the rank's active classes (its ComputeMix blend).
  static double blend(const RankSlowdown& r, const TaskSpec& t) {
    if (t.mix.host_only) return 1.0;
    return mix_slowdown(t.mix.attention / 255.0, t.mix.memory / 255.0, t.mix.memory_coef / 255.0, r.gemm, r.attention,
                        r.hbm, r.uniform);
  }
  std::vector<std::vector<StreamId>> compute_streams_;
  // per resource
  std::vector<std::vector<TaskId>> active_;        // running tasks (resources used by several streams only)
  std::vector<char> shared_;
  std::vector<double> capacity_;
  std::size_t finished_ = 0;
};

void Executor::memory_change(int rank, std::int64_t delta, std::int64_t now) {
  auto r = static_cast<std::size_t>(rank);
  memory_[r] += delta;
  tl_.peak_memory[r] = std::max(tl_.peak_memory[r], memory_[r]);
  tl_.memory[r].push_back(MemoryPoint{Time{now}, memory_[r]});
}

// Rate of a running task: the least fair share over its resources (a resource
// of one stream has one active task, this one), slowed while the rank's compute
// is interfered with.
inline double Executor::rate_of(const Stream& st, const TaskSpec& t) const {
  double r = 1.0;
  for (ResourceId res : t.resources) {
    auto i = static_cast<std::size_t>(res);
    const double active = shared_[i] ? static_cast<double>(active_[i].size()) : 1.0;
    r = std::min(r, capacity_[i] / active);
  }
  if (st.compute && interferers_[static_cast<std::size_t>(st.rank)] > 0) r /= blend(rank_slowdown_[static_cast<std::size_t>(st.rank)], t);
  else if (interferes(t, st) && computing_[static_cast<std::size_t>(st.rank)] > 0) r /= class_self_[t.interferes];
  return r;
}

void Executor::retime_self(int rank, std::int64_t now) {
  for (StreamId cs : comm_streams_[static_cast<std::size_t>(rank)]) {
    const Stream& c = streams_[static_cast<std::size_t>(cs)];
    if (c.running >= 0 && class_self_[spec(c.running).interferes] != 1.0) retime(cs, now, false);
  }
}

void Executor::count_interferer(int rank, std::uint8_t c, int delta) {
  const auto r = static_cast<std::size_t>(rank);
  interferers_[r] += delta;
  class_count_[r][c] += delta;
  RankSlowdown s;
  for (int k = 1; k < TaskGraph::kContentionClasses; ++k) {
    const auto i = static_cast<std::size_t>(k);
    if (class_count_[r][i] <= 0) continue;
    s.gemm = std::max(s.gemm, class_slowdown_[i]);
    s.attention = std::max(s.attention, class_attention_[i]);
    s.hbm = std::max(s.hbm, class_hbm_[i]);
    if (class_uniform_[i]) s.uniform = std::max(s.uniform, class_slowdown_[i]);
  }
  rank_slowdown_[r] = s;
}

void Executor::retime(StreamId s, std::int64_t now, bool force) {
  Stream& st = streams_[static_cast<std::size_t>(s)];
  const double r = rate_of(st, spec(st.running));
  if (!force && r == st.rate) return;
  if (!force) st.remaining = std::max(0.0, st.remaining - st.rate * static_cast<double>(now - st.last_update));
  st.last_update = now;
  st.rate = r;
  ++st.version;
  // At full rate from the start, the end is the duration (ceil(d - 1e-6) == d
  // for an integer 0 <= d < 2^52), without the division and rounding.
  const auto left = force && r == 1.0 && st.remaining < 0x1p52
                        ? static_cast<std::int64_t>(st.remaining)
                        : slowed_ns(st.remaining, r);
  queue_end(st, s, checked_add_ns(now, std::max<std::int64_t>(0, left), "the end of a task"));
}

// Re-time every running task whose rate depends on t being active: those on
// t's shared resources, and the rank's compute tasks when t interferes.
void Executor::retime_neighbours(const Stream& st, const TaskSpec& sp, TaskId t, std::int64_t now) {
  for (ResourceId res : sp.resources) {
    const auto i = static_cast<std::size_t>(res);
    if (!shared_[i]) continue;
    for (TaskId u : active_[i])
      if (u != t) retime(spec(u).stream, now, false);
  }
  if (interferes(sp, st))
    for (StreamId cs : compute_streams_[static_cast<std::size_t>(st.rank)])
      if (streams_[static_cast<std::size_t>(cs)].running >= 0) retime(cs, now, false);
}

void Executor::start(Stream& st, StreamId s, TaskId t, std::int64_t now) {
  const TaskSpec& sp = spec(t);
  st.running = t;
  st.started = now;
  tl_.started.push_back(t);
  if (sp.memory_delta > 0) memory_change(st.rank, sp.memory_delta, now);
  st.host_clock = checked_add_ns(st.host_clock, sp.host_ns, "the host's issue time of a stream");
  st.host_floor = sp.host_ns > 0 ? st.host_clock : 0;
  if (counts_as_compute(st, sp) && computing_[static_cast<std::size_t>(st.rank)]++ == 0 && st.rank != deferred_rank_)
    retime_self(st.rank, now);
  if (!dynamic_) {
    ++st.version;
    queue_end(st, s, checked_add_ns(now, sp.duration_ns, "the end of a task"));
    return;
  }
  const bool interfering = interferes(sp, st);
  // The usual task holds no shared resource and does not interfere: its rate
  // is the least capacity of its resources (each has one active task, this
  // one: capacity / 1.0 == capacity), taken in the same order as rate_of.
  double r = 1.0;
  bool shared = false;
  for (ResourceId res : sp.resources) {
    const auto i = static_cast<std::size_t>(res);
    shared |= shared_[i] != 0;
    r = std::min(r, capacity_[i]);
  }
  if (shared || interfering) {
    for (ResourceId res : sp.resources)
      if (shared_[static_cast<std::size_t>(res)]) active_[static_cast<std::size_t>(res)].push_back(t);
    if (interfering) count_interferer(st.rank, sp.interferes, +1);
    st.neighbours = true;
    st.remaining = static_cast<double>(sp.duration_ns);
    retime(s, now, true);
    retime_neighbours(st, sp, t, now);
    return;
  }
  if (st.compute && interferers_[static_cast<std::size_t>(st.rank)] > 0) r /= blend(rank_slowdown_[static_cast<std::size_t>(st.rank)], sp);
  st.neighbours = false;
  st.remaining = static_cast<double>(sp.duration_ns);
  st.last_update = now;
  st.rate = r;
  ++st.version;
  // As retime(s, now, true): at full rate the end is the duration.
  const auto left = r == 1.0 && st.remaining < 0x1p52 ? sp.duration_ns : slowed_ns(st.remaining, r);
  queue_end(st, s, checked_add_ns(now, std::max<std::int64_t>(0, left), "the end of a task"));
}

inline void Executor::try_start(StreamId s, std::int64_t now) {
  Stream& st = streams_[static_cast<std::size_t>(s)];
  if (st.running >= 0 || st.next == st.end) return;
  const TaskId t = *st.next;
  if (dep_[static_cast<std::size_t>(t)].pending == 0) start(st, s, t, now);
}

void Executor::finish(StreamId s, std::int64_t now) {
  Stream& st = streams_[static_cast<std::size_t>(s)];
  const TaskId t = st.running;
  const auto i = static_cast<std::size_t>(t);
  const TaskSpec& sp = spec(t);
  tl_.interval_of[i] = static_cast<std::int32_t>(tl_.intervals.size());
  tl_.intervals.push_back(Interval{t, Time{st.started}, Time{now}});
  if (st.host_wait > 0 || !tl_.host_wait_ns.empty()) [[unlikely]] {
    tl_.host_wait_ns.resize(tl_.intervals.size());
    tl_.host_wait_ns.back() = st.host_wait;
  }
  tl_.busy_ns[static_cast<std::size_t>(s)] += now - st.started;
  ++finished_;
  const std::int64_t freed = (sp.memory_delta < 0 ? -sp.memory_delta : 0) + sp.memory_release;
  if (freed != 0) memory_change(st.rank, -freed, now);
  st.running = -1;
  ++st.next;
  const bool computed = counts_as_compute(st, sp);
  if (computed) {
    --computing_[static_cast<std::size_t>(st.rank)];
    deferred_rank_ = st.rank;
  }
  if (st.neighbours) {
    st.neighbours = false;
    for (ResourceId res : sp.resources) {
      if (!shared_[static_cast<std::size_t>(res)]) continue;
      auto& a = active_[static_cast<std::size_t>(res)];
      auto it = std::find(a.begin(), a.end(), t);
      *it = a.back();
      a.pop_back();
    }
    if (interferes(sp, st)) count_interferer(st.rank, sp.interferes, -1);
    retime_neighbours(st, sp, t, now);
  }
  try_start(s, now);
  const std::uint32_t* v = succ_.data() + succ_begin_[i];
  const std::uint32_t* v_end = succ_.data() + succ_begin_[i + 1];
  for (; v != v_end; ++v) {
    const std::size_t j = *v;
    // Predecessors finish in time order: the latest end so far is `now`; on a
    // tie the lowest id is kept (the order of Boost's in-edges, by source).
    Dep& d = dep_[j];
    if (now > d.ready_at) { d.ready_at = now; d.ready_by = t; }
    else if (t < d.ready_by) d.ready_by = t;
    if (--d.pending == 0) try_start(tasks_[j].stream, now);
  }
  if (computed) {
    deferred_rank_ = -1;
    if (computing_[static_cast<std::size_t>(st.rank)] == 0) retime_self(st.rank, now);
  }
}

Timeline Executor::play() {
  n_ = g_.size();
  const auto& streams = g_.streams();
  const std::size_t S = streams.size();
  const auto R = static_cast<std::size_t>(g_.ranks());

  // Successors as CSR (counting sort by source, stable), and in-degrees.
  const auto& edges = g_.edges();
  // The per-task arrays are advised to huge pages before their first touch.
  succ_begin_.reserve(n_ + 2);
  advise_huge_storage(succ_begin_);
  succ_begin_.assign(n_ + 2, 0);
  dep_.reset(new Dep[n_]);   // default-initialised: filled here
  advise_huge(dep_.get(), n_ * sizeof(Dep));
  for (std::size_t v = 0; v < n_; ++v) dep_[v] = Dep{-1, 0, 0};
  for (const auto& [a, b] : edges) {
    ++succ_begin_[a + 2];
    ++dep_[b].pending;
  }
  for (std::size_t v = 2; v < n_ + 2; ++v) succ_begin_[v] += succ_begin_[v - 1];
  succ_.reserve(edges.size());
  advise_huge_storage(succ_);
  succ_.resize(edges.size());
  for (const auto& [a, b] : edges) succ_[succ_begin_[a + 1]++] = b;   // succ_begin_[a] = first of a afterwards
  succ_begin_.pop_back();

  track_memory_ = g_.any_memory();
  dynamic_ = g_.any_resources() || (g_.any_interferes() && g_.max_contention() > 0);
  for (int c = 0; c < TaskGraph::kContentionClasses; ++c) {
    const auto i = static_cast<std::size_t>(c);
    class_slowdown_[i] = c == 0 ? 1.0 : 1.0 + g_.contention(c);
    class_attention_[i] = c == 0 ? 1.0 : 1.0 + g_.contention_attention(c);
    class_hbm_[i] = c == 0 ? 0.0 : g_.contention_hbm(c);
    class_uniform_[i] = c != 0 && g_.contention_uniform(c) ? 1 : 0;
    class_self_[i] = c == 0 ? 1.0 : 1.0 + g_.contention_self(c);
    any_self_ |= dynamic_ && class_self_[i] != 1.0;
  }

  streams_.resize(S);
  compute_streams_.assign(R, {});
  for (std::size_t s = 0; s < S; ++s) {
    const auto& q = g_.stream_tasks(static_cast<StreamId>(s));
    Stream& st = streams_[s];
    st.next = q.data();
    st.end = q.data() + q.size();
    st.rank = streams[s].rank;
    st.compute = streams[s].compute;
    if (st.compute) compute_streams_[static_cast<std::size_t>(st.rank)].push_back(static_cast<StreamId>(s));
  }
  computing_.assign(R, 0);
  comm_streams_.assign(any_self_ ? R : 0, {});
  if (any_self_)
    for (std::size_t s = 0; s < S; ++s)
      if (!streams_[s].compute) comm_streams_[static_cast<std::size_t>(streams_[s].rank)].push_back(static_cast<StreamId>(s));
  memory_.assign(R, 0);
  interferers_.assign(R, 0);
  class_count_.assign(R, {});
  rank_slowdown_.assign(R, RankSlowdown{});
  if (dynamic_) {
    const std::size_t nres = g_.resources().size();
    active_.assign(nres, {});
    shared_.resize(nres);
    capacity_.resize(nres);
    for (std::size_t r = 0; r < nres; ++r) {
      shared_[r] = g_.resource_shared(static_cast<ResourceId>(r));
      capacity_[r] = g_.resources()[r].capacity;
    }
  }
  tl_.intervals.reserve(n_);
  tl_.started.reserve(n_);
  tl_.interval_of.reserve(n_);
  advise_huge_storage(tl_.intervals);
  advise_huge_storage(tl_.started);
  advise_huge_storage(tl_.interval_of);
  tl_.interval_of.assign(n_, -1);
  tl_.peak_memory.assign(R, 0);
  tl_.memory.assign(track_memory_ ? R : 0, {});
  tl_.busy_ns.assign(S, 0);
  queue_.reserve(std::min<std::size_t>(n_, S * 4 + 16));

  std::int64_t now = 0;
  for (std::size_t s = 0; s < S; ++s) try_start(static_cast<StreamId>(s), 0);
  while (!queue_.empty()) {
    const auto e = queue_.take_next();
    ++tl_.events;
    if (e.payload.version == streams_[static_cast<std::size_t>(e.payload.stream)].version) {
      now = e.time;
      finish(e.payload.stream, now);
    }
    queue_.done();
  }
  if (finished_ != n_) deadlock(now);
  tl_.makespan = Time{now};
  critical_path();
  return std::move(tl_);
}

// From the last task to finish back to the start: each step goes to the
// predecessor that ended last (ties: the lowest id), or to the task before it
// on its stream when that one ended strictly later.
//
// Each step goes back in time, so the tasks met on one stream come in reverse
// queue order: a cursor per stream finds each one's place by walking back.
void Executor::critical_path() {
  if (n_ == 0) return;
  std::vector<std::size_t> cursor(streams_.size());
  for (std::size_t s = 0; s < streams_.size(); ++s) cursor[s] = g_.stream_tasks(static_cast<StreamId>(s)).size();
  TaskId t = tl_.intervals.back().task;
  for (;;) {
    tl_.critical_path.push_back(t);
    const auto i = static_cast<std::size_t>(t);
    TaskId best = dep_[i].ready_at >= 0 ? dep_[i].ready_by : -1;
    const std::int64_t best_end = dep_[i].ready_at;
    const auto s = static_cast<std::size_t>(spec(t).stream);
    const auto& q = g_.stream_tasks(static_cast<StreamId>(s));
    std::size_t c = cursor[s];
    while (c > 0 && q[c - 1] != t) --c;
    if (c == 0) c = static_cast<std::size_t>(std::lower_bound(q.begin(), q.end(), t) - q.begin()) + 1;   // not reached
    cursor[s] = c - 1;   // q[c - 1] == t
    if (c > 1 && tl_.of(q[c - 2]).end.ns > best_end) best = q[c - 2];
    if (best < 0) break;
    t = best;
  }
  std::reverse(tl_.critical_path.begin(), tl_.critical_path.end());
}

void Executor::deadlock(std::int64_t now) const {
  std::ostringstream out;
  out << "deadlock at t=" << now << " ns: " << finished_ << " of " << n_
      << " tasks finished; nothing can run. Next task of each unfinished stream:";
  for (std::size_t s = 0; s < streams_.size(); ++s) {
    const Stream& st = streams_[s];
    if (st.next == st.end) continue;
    const TaskId t = *st.next;
    out << "\n  " << g_.streams()[s].name << ": " << describe(g_, t) << " waits for";
    // Predecessors from the graph's in-edges (built here only, on this error
    // path; the run itself uses its own successor lists), by source id.
    const TaskGraph::Graph& graph = g_.graph();
    std::vector<TaskId> preds;
    for (auto [e, e_end] = boost::in_edges(static_cast<std::uint32_t>(t), graph); e != e_end; ++e)
      preds.push_back(static_cast<TaskId>(boost::source(*e, graph)));
    std::sort(preds.begin(), preds.end());
    int shown = 0, more = 0;
    for (TaskId u : preds) {
      if (tl_.interval_of[static_cast<std::size_t>(u)] >= 0) continue;
      if (shown == 4) { ++more; continue; }
      out << (shown++ ? ";" : "") << " " << describe(g_, u);
      const Stream& us = streams_[static_cast<std::size_t>(spec(u).stream)];
      if (us.next != us.end && *us.next != u) out << " (queued behind " << describe(g_, *us.next) << ")";
    }
    if (more) out << "; and " << more << " more";
    if (shown == 0) out << " nothing (not yet reached)";
  }
  throw Deadlock(out.str());
}

}  // namespace

Timeline run(const TaskGraph& g) { return Executor(g).play(); }

}  // namespace mfusim::sim
