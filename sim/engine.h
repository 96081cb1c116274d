#pragma once
// The discrete-event engine: a task graph played out on per-rank streams.
//
// Streams are in-order queues (like CUDA streams): a task starts when it is at
// the head of its stream, every predecessor has finished, and time has come.
// Each rank has one compute stream and any number of communication streams
// that run concurrently with it. Tasks may share a Resource (a NIC, an NVLink
// port): concurrent tasks on one resource split its capacity (fair share), so
// two transfers on one NIC each go slower. A task on a compute stream is
// slowed by `contention` while any task flagged `interferes` runs on another
// stream of the same rank (overlap is not free).
//
// Time is integer nanoseconds; ties run FIFO by event sequence number, so
// runs are deterministic. No global state: many Simulations may run at once.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace mfusim::sim {

struct Time {
  std::int64_t ns = 0;
  auto operator<=>(const Time&) const = default;
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
};

struct StreamSpec { int rank = 0; std::string name; bool compute = false; };

class TaskGraph {
 public:
  StreamId add_stream(int rank, std::string name, bool compute);
  ResourceId add_resource(std::string name, double capacity = 1.0);
  TaskId add(TaskSpec);                         // appended to its stream's queue
  void depend(TaskId before, TaskId after);     // `after` waits for `before` to finish
  void set_contention(double factor);           // compute slowdown while interfering comm runs (e.g. 0.1 = 10%)
  std::size_t size() const;
  // accessors for the executor and writers
  const TaskSpec& task(TaskId) const;
  const std::vector<StreamSpec>& streams() const;
  // ... implementation-defined storage (Boost.Graph adjacency list)
};

struct Interval { TaskId task; Time start, end; };

// What one run produced, read by the report writers.
struct Timeline {
  std::vector<Interval> intervals;              // one per task, in completion order
  Time makespan;
  std::int64_t events = 0;                      // events processed (for benchmarks)
  std::vector<std::int64_t> peak_memory;        // per rank, bytes, from memory_delta
  std::vector<TaskId> critical_path;
};

// Thrown when nothing can run but work remains. The message names every
// stream's next task and what it waits for.
struct Deadlock : std::runtime_error { using std::runtime_error::runtime_error; };

Timeline run(const TaskGraph&);

}  // namespace mfusim::sim
