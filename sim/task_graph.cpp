// GCC 12 reports a false maybe-uninitialized inside Boost's edge iterator when
// the directed adjacency_list is copied.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <algorithm>
#include <cassert>
#include <string>

#include "sim/engine.h"

namespace mfusim::sim {

const char* to_string(Category c) {
  switch (c) {
    case Category::forward: return "forward";
    case Category::backward: return "backward";
    case Category::weight_grad: return "weight_grad";
    case Category::recompute: return "recompute";
    case Category::optimizer: return "optimizer";
    case Category::tp_comm: return "tp_comm";
    case Category::pp_comm: return "pp_comm";
    case Category::dp_comm: return "dp_comm";
    case Category::ep_comm: return "ep_comm";
    case Category::cp_comm: return "cp_comm";
    case Category::dataloader: return "dataloader";
    case Category::gc: return "gc";
    case Category::launch: return "launch";
    case Category::other: return "other";
    case Category::count_: break;
  }
  return "?";
}

TaskGraph::TaskGraph() : graph_(std::make_unique<Graph>()) {}
TaskGraph::TaskGraph(const TaskGraph& o)
    : graph_(std::make_unique<Graph>(*o.graph_)), streams_(o.streams_), resources_(o.resources_),
      stream_tasks_(o.stream_tasks_), contention_(o.contention_), ranks_(o.ranks_), edges_(o.edges_) {}
TaskGraph& TaskGraph::operator=(const TaskGraph& o) {
  if (this != &o) *this = TaskGraph(o);
  return *this;
}
TaskGraph::~TaskGraph() = default;

StreamId TaskGraph::add_stream(int rank, std::string name, bool compute) {
  if (rank < 0) throw std::logic_error("add_stream: negative rank " + std::to_string(rank));
  streams_.push_back(StreamSpec{rank, std::move(name), compute});
  stream_tasks_.emplace_back();
  ranks_ = std::max(ranks_, rank + 1);
  return static_cast<StreamId>(streams_.size() - 1);
}

ResourceId TaskGraph::add_resource(std::string name, double capacity) {
  if (!(capacity > 0)) throw std::logic_error("add_resource: capacity must be > 0 (" + name + ")");
  resources_.push_back(ResourceSpec{std::move(name), capacity});
  return static_cast<ResourceId>(resources_.size() - 1);
}

TaskId TaskGraph::add(TaskSpec spec) {
  if (spec.stream < 0 || static_cast<std::size_t>(spec.stream) >= streams_.size())
    throw std::logic_error("add: task '" + spec.name + "' on unknown stream " + std::to_string(spec.stream));
  if (spec.duration_ns < 0) throw std::logic_error("add: negative duration for task '" + spec.name + "'");
  if (spec.memory_release < 0) throw std::logic_error("add: negative memory_release for task '" + spec.name + "'");
  for (ResourceId r : spec.resources)
    if (r < 0 || static_cast<std::size_t>(r) >= resources_.size())
      throw std::logic_error("add: task '" + spec.name + "' uses unknown resource " + std::to_string(r));
  const StreamId s = spec.stream;
  const auto v = boost::add_vertex(std::move(spec), *graph_);
  const auto id = static_cast<TaskId>(v);
  stream_tasks_[static_cast<std::size_t>(s)].push_back(id);
  return id;
}

void TaskGraph::depend(TaskId before, TaskId after) {
  const auto n = static_cast<TaskId>(size());
  if (before < 0 || before >= n || after < 0 || after >= n)
    throw std::logic_error("depend: unknown task (" + std::to_string(before) + " -> " + std::to_string(after) + ")");
  boost::add_edge(static_cast<std::size_t>(before), static_cast<std::size_t>(after), *graph_);
  ++edges_;
}

void TaskGraph::set_contention(double factor) {
  if (!(factor >= 0)) throw std::logic_error("set_contention: factor must be >= 0");
  contention_ = factor;
}

void TaskGraph::reserve(std::size_t tasks) {
  graph_->m_vertices.reserve(tasks);
  for (auto& q : stream_tasks_) q.reserve(tasks / std::max<std::size_t>(1, stream_tasks_.size()));
}
std::size_t TaskGraph::size() const { return boost::num_vertices(*graph_); }
std::size_t TaskGraph::dependencies() const { return edges_; }
int TaskGraph::ranks() const { return ranks_; }
const TaskSpec& TaskGraph::task(TaskId t) const { return (*graph_)[static_cast<std::size_t>(t)]; }
const std::vector<StreamSpec>& TaskGraph::streams() const { return streams_; }
const std::vector<ResourceSpec>& TaskGraph::resources() const { return resources_; }
const std::vector<TaskId>& TaskGraph::stream_tasks(StreamId s) const { return stream_tasks_[static_cast<std::size_t>(s)]; }

}  // namespace mfusim::sim
