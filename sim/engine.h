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
// `interferes` runs on a non-compute stream of the same rank. A task's
// `interferes` names its contention class (1..kContentionClasses-1, each with
// its own factor: the footprint of its kind of communication kernel,
// hardware/interference.h); while tasks of several classes run, compute runs at
// the slowest class's rate. A class may give each kind of compute its own
// factor (GEMMs, attention, memory-bound kernels: contention_class(gemm,
// attention, hbm)); a compute task's ComputeMix says what share of its time is
// attention and memory-bound work (the rest runs at the GEMM factor), and it
// slows by the time-weighted blend of the factors. A class may also slow its own tasks
// while the rank computes (`self`, contention_class(gemm, attention, hbm, self)): a
// communication kernel paced by its SMs runs at the clock that the compute beside it holds the
// GPU at (hardware::sm_paced_comm_slowdown); a compute task on the rank whose ComputeMix is
// host_only (the GPU idle) does not count.
//
// Memory: a task's positive memory_delta is allocated at its start, a negative
// one freed at its end; memory_release (>= 0) is freed at its end as well (a
// task that both allocates and frees, e.g. DualPipe's F&B).
//
// Time is integer nanoseconds; ties run FIFO by event sequence number, so
// runs are deterministic. No global state: many Simulations may run at once.
#include <algorithm>
#include <array>
#include <compare>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/graph/compressed_sparse_row_graph.hpp>

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

// The resources of one task, stored inline (no heap allocation per task): at
// most kCapacity. Built like a vector: `{nic}`, from a std::vector, push_back.
class ResourceList {
 public:
  static constexpr std::size_t kCapacity = 6;
  ResourceList() = default;
  ResourceList(std::initializer_list<ResourceId> ids) { for (ResourceId r : ids) push_back(r); }
  ResourceList(const std::vector<ResourceId>& ids) { for (ResourceId r : ids) push_back(r); }  // NOLINT: implicit, as a vector
  void push_back(ResourceId r) {
    if (n_ == kCapacity) throw std::length_error("ResourceList: a task uses more than 6 resources");
    ids_[n_++] = r;
  }
  const ResourceId* begin() const { return ids_.data(); }
  const ResourceId* end() const { return ids_.data() + n_; }
  std::size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  ResourceId operator[](std::size_t i) const { return ids_[i]; }
  void clear() { n_ = 0; }
  friend bool operator==(const ResourceList& a, const ResourceList& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  std::array<ResourceId, kCapacity> ids_{};
  std::uint8_t n_ = 0;
};

// How TaskGraph::name labels a task (trace and SVG labels, deadlock report):
// formatted on demand from the task's fields, so that a task carries no string.
enum class Label : std::uint8_t {
  text,          // the graph's text number TaskSpec::text (TaskGraph::text; 0 is "")
  named,         // the explicit name given to TaskGraph::add(spec, name) or set_name
  forward,       // "F mb<microbatch> chunk<chunk>" (schedules::label of an F op)
  backward,      // "B mb<microbatch> chunk<chunk>"
  weight_grad,   // "W mb<microbatch> chunk<chunk>"
  backward_mb,   // "B mb<microbatch>" (the backward half of an F&B op)
  send_forward,  // "send F mb<microbatch>" (a stage-to-stage send of activations)
  send_backward, // "send B mb<microbatch>" (... of gradients)
};

// What a compute task's time is made of, for its slowdown beside communication (the graph's
// contention classes): attention and memory-bound shares of its duration in 1/255 (attention +
// memory <= 255), the rest GEMMs (and launch gaps); memory_coef: c of its memory-bound part
// (hardware::memory_hbm_coefficient), in 1/255. All 0: the task is slowed like a GEMM. host_only:
// host work on the compute stream (a GC pause, data loading on the training thread): the GPU is
// idle, nothing slows it.
struct ComputeMix {
  std::uint8_t attention = 0, memory = 0, memory_coef = 0, host_only = 0;
};

// The time multiplier of work made of GEMM, attention and memory-bound shares (a + m <= 1; the rest
// GEMMs) beside communication whose kinds' factors are `gemm` and `attention` and whose HBM fraction
// is `hbm` (memory-bound work: 1 + c hbm, c = memory_coef); `uniform` > 1: a class of one factor
// for every kind, memory-bound work included. The engine's rule and the coarse lowering's.
inline double mix_slowdown(double a, double m, double c, double gemm, double attention, double hbm, double uniform = 1.0) {
  const double mem = std::max(uniform, 1.0 + c * hbm);
  return (1.0 - a - m) * gemm + a * attention + m * mem;
}

// One task. Plain data (trivially copyable, 88 bytes): the graph stores these
// in one vector and the lowering copies recorded blocks of them.
struct TaskSpec {
  std::int64_t duration_ns = 0;     // at full rate, alone on its resources
  std::int64_t memory_delta = 0;    // bytes allocated at start (+) or freed at end (-) on the stream's rank
  std::int64_t memory_release = 0;  // bytes (>= 0) freed at end, in addition (tasks that allocate and free)
  StreamId stream = 0;
  std::int32_t microbatch = -1;     // for labels, pictures and memory tracking
  std::int32_t chunk = -1;
  ResourceList resources;
  Category category = Category::other;
  char kind = 0;                    // 'F','B','W','R','S' (send), 'C' (collective), 'O' (optimizer)...
  std::uint8_t interferes = 0;      // contention class (0 = none): slows the rank's compute stream while running
  ComputeMix mix;                   // compute tasks: how they slow beside an interfering task (above)
  Label label = Label::text;        // the name ("F mb3 chunk1"; may be empty for inner tasks): see Label
  std::uint16_t text = 0;           // Label::text: the graph's text number
  // Host (CPU) time to issue the task's kernels. The host issues a stream's tasks in queue
  // order from time 0, running ahead of the GPU: the stream's host clock advances by host_ns
  // at each task, independent of the GPU, and a task with host_ns > 0 cannot end before the
  // clock has passed it (the GPU waits for the host only when the host has fallen behind).
  std::int64_t host_ns = 0;
};

static_assert(std::is_trivially_copyable_v<TaskSpec>);

struct StreamSpec { int rank = 0; std::string name; bool compute = false; };
struct ResourceSpec { std::string name; double capacity = 1.0; };

// The work of one simulated step: tasks with dependency edges, each task
// queued on one stream in insertion order. Invariants: every task's stream and
// resources exist; capacities > 0; contention >= 0.
//
// Storage is flat while the graph is built: the tasks are one vector of plain
// TaskSpec structs (TaskId == index; no strings: names are formatted on demand
// from label codes, texts and a side table of explicit names; resources are an
// inline ResourceList: adding a task allocates nothing), and each `depend`
// appends one (before, after) pair to one edge vector. The graph itself is a
// Boost.Graph compressed_sparse_row_graph (bidirectional: out-edges are the
// successors, in-edges the predecessors),
// built from the edge list in two counting-sort passes the first time graph()
// is called and cached until the next add/depend. The executor builds its own
// successor lists from edges() in one counting sort (cheaper than the Boost
// graph on the hot path; same order: successors keep the order in which the
// dependencies were added, which fixes the tie order of simultaneous starts),
// notes the critical path while it runs, and reads graph()'s in-edges only for
// the deadlock report.
class TaskGraph {
 public:
  using Graph = boost::compressed_sparse_row_graph<boost::bidirectionalS, boost::no_property, boost::no_property,
                                                   boost::no_property, std::uint32_t, std::uint32_t>;

  TaskGraph();
  TaskGraph(const TaskGraph&);
  TaskGraph& operator=(const TaskGraph&);
  // A moved-from TaskGraph may only be assigned to or destroyed.
  TaskGraph(TaskGraph&&) noexcept = default;
  TaskGraph& operator=(TaskGraph&&) noexcept = default;
  ~TaskGraph();

  StreamId add_stream(int rank, std::string name, bool compute);
  ResourceId add_resource(std::string name, double capacity = 1.0);
  TaskId add(TaskSpec);                         // appended to its stream's queue
  TaskId add(TaskSpec, std::string name);       // ... with an explicit name (none when empty)
  // Names. name(t): the task's label (see Label), "" when it has none.
  // text(s): the number of text s (interned; 0 is ""), for Label::text.
  // set_name: give task t an explicit name (Label::named; an empty one: no name).
  std::string name(TaskId) const;
  std::uint16_t text(std::string_view);
  void set_name(TaskId, std::string name);
  // Also allocate `bytes` (> 0) at the task's start, kept after its end (what it freed at its end, a
  // negative memory_delta, moves to memory_release).
  void add_allocation(TaskId, std::int64_t bytes);
  void depend(TaskId before, TaskId after);     // `after` waits for `before` to finish
  // Bulk forms (the lowering replays recorded blocks): add() of a copy of each
  // of specs[0..n) in order (returns the first id), and depend() of each pair in order.
  TaskId add_copies(const TaskSpec* specs, std::size_t n);
  void depend_all(const std::pair<TaskId, TaskId>* edges, std::size_t n);
  // Checked blocks (the lowering replays the same recorded blocks thousands of
  // times): check_block validates specs[0..n) once as add() would (the same
  // errors; streams, resources and texts are never removed, so a valid block
  // stays valid) and groups the block's ids by stream. add_block(specs, block)
  // then does add_copies(specs, n) without per-task checks: the specs may differ
  // from the checked ones only in microbatch, chunk and a label code other than
  // Label::text (asserted in debug builds). note() (resource sharing, any_*
  // flags) is paid at the block's first add_block: it is idempotent.
  struct Block {
    std::size_t size = 0;
    std::vector<std::pair<StreamId, std::vector<TaskId>>> queues;   // per stream used: relative ids, in order
    const TaskGraph* graph = nullptr;   // the graph it was checked for
    bool noted = false;                 // note() done for it on `graph`
  };
  Block check_block(const TaskSpec* specs, std::size_t n) const;
  TaskId add_block(const TaskSpec* specs, Block& block);
  void set_contention(double factor);           // class 1's compute slowdown while interfering comm runs (e.g. 0.1 = 10%)
  // The class whose factor is `factor` for every kind of compute (added when none has it; at most
  // kContentionClasses - 1 classes).
  std::uint8_t contention_class(double factor);
  // A class of one factor for every kind of compute whose own tasks also slow while the rank computes
  // (a full-grid memory-bound kernel on a side stream: hardware::side_elementwise_slowdown); both are
  // time multipliers minus 1, as in the overloads above and below.
  std::uint8_t uniform_contention_class(double factor, double self);
  // The class with a factor per kind of compute: `gemm` and `attention` (time multiplier - 1) and
  // the side's HBM fraction f, memory-bound work slowing by 1 + c f (c: the task's ComputeMix);
  // `self`: the class's own tasks' time multiplier - 1 while a compute task runs on their rank.
  std::uint8_t contention_class(double gemm, double attention, double hbm, double self = 0.0);
  // Every class of `other` (a graph built from its tasks).
  void copy_contention(const TaskGraph& other);
  static constexpr int kContentionClasses = 16;
  void reserve(std::size_t tasks);
  std::size_t size() const { return tasks_.size(); }
  std::size_t dependencies() const { return edges_.size(); }
  int ranks() const;                            // 1 + highest stream rank (0 when no stream)

  // The dependencies as added: (before, after) pairs in `depend` order.
  const std::vector<std::pair<std::uint32_t, std::uint32_t>>& edges() const { return edges_; }
  // True when tasks of more than one stream use resource r: only then can two
  // tasks hold it at once (a stream runs one task at a time).
  bool resource_shared(ResourceId r) const { return resource_stream_[static_cast<std::size_t>(r)] == kSharedByStreams; }
  bool any_resources() const { return any_resources_; }     // some task uses a resource
  bool any_interferes() const { return any_interferes_; }   // some task is flagged `interferes`
  bool any_memory() const { return any_memory_; }           // some task has memory_delta or memory_release
  const TaskSpec& task(TaskId t) const { return tasks_[static_cast<std::size_t>(t)]; }
  const std::vector<TaskSpec>& tasks() const { return tasks_; }
  const std::vector<StreamSpec>& streams() const;
  const std::vector<ResourceSpec>& resources() const;
  const std::vector<TaskId>& stream_tasks(StreamId) const;   // queue order
  double contention() const { return contention_[1]; }                 // class 1
  double contention(int cls) const { return contention_[static_cast<std::size_t>(cls)]; }
  double contention_attention(int cls) const { return attention_[static_cast<std::size_t>(cls)]; }
  double contention_hbm(int cls) const { return hbm_[static_cast<std::size_t>(cls)]; }
  // True for a class of contention_class(factor): memory-bound work slows by the factor too.
  bool contention_uniform(int cls) const { return uniform_[static_cast<std::size_t>(cls)] != 0; }
  double contention_self(int cls) const { return self_[static_cast<std::size_t>(cls)]; }
  double max_contention() const;                                          // the largest factor of any class
  // The dependency graph (vertex == TaskId), built on first use; thread-safe.
  const Graph& graph() const;

 private:
  struct Lazy {
    std::mutex mutex;
    std::unique_ptr<const Graph> graph;
  };
  void invalidate() { if (lazy_->graph) lazy_->graph.reset(); }
  void note(const TaskSpec&);   // resource sharing and any_* flags, for add() and add_copies()
  bool valid(const TaskSpec&) const;
  void check(const TaskSpec&, const std::string& name) const;   // throws add()'s error for an invalid spec
  std::string label_of(const TaskSpec&, const std::string* name) const;


  std::vector<TaskSpec> tasks_;
  std::vector<std::string> texts_;                      // Label::text; texts_[0] == ""
  std::vector<std::pair<TaskId, std::string>> names_;   // Label::named, by task id
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges_;   // (before, after), in insertion order
  std::vector<StreamSpec> streams_;
  std::vector<ResourceSpec> resources_;
  std::vector<std::vector<TaskId>> stream_tasks_;
  static constexpr StreamId kSharedByStreams = -2;
  std::vector<StreamId> resource_stream_;   // per resource: -1 unused, the one stream using it, or kSharedByStreams
  std::array<double, kContentionClasses> contention_{};   // per class (GEMMs); [0] = none (0)
  std::array<double, kContentionClasses> attention_{};    // per class: attention
  std::array<double, kContentionClasses> hbm_{};          // per class: the side's HBM fraction
  std::array<char, kContentionClasses> uniform_{};        // per class: one factor for every kind
  std::array<double, kContentionClasses> self_{};         // per class: its own tasks beside compute
  int classes_ = 1;                                          // classes in use (1 + the highest)
  int ranks_ = 0;
  bool any_resources_ = false, any_interferes_ = false, any_memory_ = false;
  mutable std::unique_ptr<Lazy> lazy_;
};

struct Interval { TaskId task; Time start, end; };

struct MemoryPoint { Time at; std::int64_t bytes; };

// What one run produced, read by the report writers.
struct Timeline {
  std::vector<Interval> intervals;              // one per task, in completion order
  std::vector<std::int32_t> interval_of;        // task id -> index into intervals
  std::vector<TaskId> started;                  // task ids in start order (start times non-decreasing)
  Time makespan;
  std::int64_t events = 0;                      // events processed (for benchmarks)
  std::vector<std::int64_t> peak_memory;        // per rank, bytes, from memory_delta
  std::vector<std::vector<MemoryPoint>> memory; // per rank, bytes after each change (empty when no task has memory)
  std::vector<std::int64_t> busy_ns;            // per stream, time with a task running
  std::vector<TaskId> critical_path;            // first to last: each task started when the previous ended
  // Per interval (same index), nanoseconds the task ran past the end of its work waiting for
  // the host's issue (TaskSpec::host_ns); empty while no task has waited (then all 0).
  std::vector<std::int64_t> host_wait_ns;

  const Interval& of(TaskId t) const { return intervals[static_cast<std::size_t>(interval_of[static_cast<std::size_t>(t)])]; }
};

// Thrown when nothing can run but work remains. The message names every
// stream's next task and the predecessors it still waits for.
struct Deadlock : std::runtime_error { using std::runtime_error::runtime_error; };

Timeline run(const TaskGraph&);

}  // namespace mfusim::sim
