#pragma once
// The discrete-event engine: a task graph played out on per-rank streams.
//
// Streams are in-order queues (like CUDA streams): a task starts when it is at
// the head of its stream, every predecessor has finished, and time has come.
// A stream runs one task at a time. Each rank has one compute stream and any
// number of communication streams that run concurrently with it. Tasks may
// share a Resource (a NIC, an NVLink port): concurrent tasks on one resource
// split its capacity (fair share, progress-based: rates are recomputed when
// the set of active tasks on the resource changes), so two transfers on one
// NIC each go at half rate. A task on a compute stream is slowed by
// `contention` (duration x (1 + contention)) while any task flagged
// `interferes` runs on a non-compute stream of the same rank.
//
// Memory: a task's positive memory_delta is allocated at its start, a negative
// one freed at its end; memory_release (>= 0) is freed at its end as well (a
// task that both allocates and frees, e.g. DualPipe's F&B).
//
// Time is integer nanoseconds; ties run FIFO by event sequence number, so
// runs are deterministic. No global state: many Simulations may run at once.
#include <compare>
#include <memory>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

namespace mfusim::sim {

struct Time {
  std::int64_t ns = 0;
  auto operator<=>(const Time&) const = default;
  double seconds() const { return static_cast<double>(ns) * 1e-9; }
};

enum class Category : std::uint8_t {
  forward, backward, weight_grad, recompute, optimizer,
  tp_comm, pp_comm, dp_comm, ep_comm, cp_comm,
  dataloader, gc, launch, other, count_
};
const char* to_string(Category);

using TaskId = std::int32_t;
using StreamId = std::int32_t;
using ResourceId = std::int32_t;

struct TaskSpec {
  StreamId stream = 0;
  std::int64_t duration_ns = 0;     // at full rate, alone on its resources
  Category category = Category::other;
  std::string name;                 // "F mb3 chunk1" (trace/SVG label); may be empty for inner tasks
  std::int32_t microbatch = -1;     // for labels, pictures and memory tracking
  std::int32_t chunk = -1;
  char kind = 0;                    // 'F','B','W','R','S' (send), 'C' (collective), 'O' (optimizer)...
  std::vector<ResourceId> resources;
  bool interferes = false;          // slows the rank's compute stream while running
  std::int64_t memory_delta = 0;    // bytes allocated at start (+) or freed at end (-) on the stream's rank
  std::int64_t memory_release = 0;  // bytes (>= 0) freed at end, in addition (tasks that allocate and free)
};

struct StreamSpec { int rank = 0; std::string name; bool compute = false; };
struct ResourceSpec { std::string name; double capacity = 1.0; };

// The work of one simulated step: tasks (vertices of a Boost.Graph adjacency
// list, vertex index == TaskId) with dependency edges, each task queued on one
// stream in insertion order. Invariants: every task's stream and resources
// exist; capacities > 0; contention >= 0.
class TaskGraph {
 public:
  // Out-edges only (directedS): the executor derives predecessors in flat arrays.
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, TaskSpec>;

  TaskGraph();
  TaskGraph(const TaskGraph&);
  TaskGraph& operator=(const TaskGraph&);
  // Moves are cheap (Boost's adjacency_list has no move, so it lives behind a
  // pointer); a moved-from TaskGraph may only be assigned to or destroyed.
  TaskGraph(TaskGraph&&) noexcept = default;
  TaskGraph& operator=(TaskGraph&&) noexcept = default;
  ~TaskGraph();

  StreamId add_stream(int rank, std::string name, bool compute);
  ResourceId add_resource(std::string name, double capacity = 1.0);
  TaskId add(TaskSpec);                         // appended to its stream's queue
  void depend(TaskId before, TaskId after);     // `after` waits for `before` to finish
  void set_contention(double factor);           // compute slowdown while interfering comm runs (e.g. 0.1 = 10%)
  void reserve(std::size_t tasks);
  std::size_t size() const;
  std::size_t dependencies() const;
  int ranks() const;                            // 1 + highest stream rank (0 when no stream)

  const TaskSpec& task(TaskId) const;
  const std::vector<StreamSpec>& streams() const;
  const std::vector<ResourceSpec>& resources() const;
  const std::vector<TaskId>& stream_tasks(StreamId) const;   // queue order
  double contention() const { return contention_; }
  const Graph& graph() const { return *graph_; }

 private:
  std::unique_ptr<Graph> graph_;
  std::vector<StreamSpec> streams_;
  std::vector<ResourceSpec> resources_;
  std::vector<std::vector<TaskId>> stream_tasks_;
  double contention_ = 0.0;
  int ranks_ = 0;
  std::size_t edges_ = 0;
};

struct Interval { TaskId task; Time start, end; };

struct MemoryPoint { Time at; std::int64_t bytes; };

// What one run produced, read by the report writers.
struct Timeline {
  std::vector<Interval> intervals;              // one per task, in completion order
  std::vector<std::int32_t> interval_of;        // task id -> index into intervals
  Time makespan;
  std::int64_t events = 0;                      // events processed (for benchmarks)
  std::vector<std::int64_t> peak_memory;        // per rank, bytes, from memory_delta
  std::vector<std::vector<MemoryPoint>> memory; // per rank, bytes after each change (empty when no task has memory)
  std::vector<std::int64_t> busy_ns;            // per stream, time with a task running
  std::vector<TaskId> critical_path;            // first to last: each task started when the previous ended

  const Interval& of(TaskId t) const { return intervals[static_cast<std::size_t>(interval_of[static_cast<std::size_t>(t)])]; }
};

// Thrown when nothing can run but work remains. The message names every
// stream's next task and the predecessors it still waits for.
struct Deadlock : std::runtime_error { using std::runtime_error::runtime_error; };

Timeline run(const TaskGraph&);

}  // namespace mfusim::sim
