#include <algorithm>
#include <cassert>
#include <charconv>
#include <cmath>
#include <string>

#include "sim/engine.h"

#include <cmath>
#include "sim/process_memory.h"
#include "sim/time.h"

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

TaskGraph::TaskGraph() : texts_{std::string()}, lazy_(std::make_unique<Lazy>()) {}
TaskGraph::TaskGraph(const TaskGraph& o)
    : tasks_(o.tasks_), texts_(o.texts_), names_(o.names_), edges_(o.edges_), streams_(o.streams_), resources_(o.resources_),
      stream_tasks_(o.stream_tasks_), resource_stream_(o.resource_stream_), contention_(o.contention_), attention_(o.attention_), hbm_(o.hbm_), uniform_(o.uniform_), self_(o.self_), classes_(o.classes_), ranks_(o.ranks_),
      any_resources_(o.any_resources_), any_interferes_(o.any_interferes_), any_memory_(o.any_memory_),
      lazy_(std::make_unique<Lazy>()) {}
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
  resource_stream_.push_back(-1);
  return static_cast<ResourceId>(resources_.size() - 1);
}

TaskId TaskGraph::add(TaskSpec spec) { return add(spec, std::string()); }

TaskId TaskGraph::add(TaskSpec spec, std::string name) {
  if (!name.empty()) spec.label = Label::named;
  check(spec, name);
  note(spec);
  const auto id = static_cast<TaskId>(tasks_.size());
  stream_tasks_[static_cast<std::size_t>(spec.stream)].push_back(id);
  tasks_.push_back(spec);
  if (!name.empty()) names_.emplace_back(id, std::move(name));   // ids only grow: names_ stays sorted
  invalidate();
  return id;
}

// add()'s checks (a negative id converts to a huge unsigned one).
bool TaskGraph::valid(const TaskSpec& spec) const {
  bool bad = static_cast<std::size_t>(static_cast<std::uint32_t>(spec.stream)) >= streams_.size() ||
             (spec.duration_ns | spec.memory_release | spec.host_ns) < 0 || spec.duration_ns > kMaxStepNs ||
             spec.host_ns > kMaxStepNs || (spec.label == Label::text && spec.text >= texts_.size()) ||
             spec.interferes >= kContentionClasses;
  for (ResourceId r : spec.resources) bad |= static_cast<std::size_t>(static_cast<std::uint32_t>(r)) >= resources_.size();
  return !bad;
}

// The error add() gives for an invalid spec (its explicit name: `name`).
void TaskGraph::check(const TaskSpec& spec, const std::string& name) const {
  if (spec.label == Label::text && spec.text >= texts_.size()) [[unlikely]]
    throw std::logic_error("add: task with unknown text " + std::to_string(spec.text));
  auto label = [&] { return label_of(spec, &name); };   // only for an error message
  if (spec.stream < 0 || static_cast<std::size_t>(spec.stream) >= streams_.size()) [[unlikely]]
    throw std::logic_error("add: task '" + label() + "' on unknown stream " + std::to_string(spec.stream));
  if (spec.duration_ns < 0) [[unlikely]]
    throw std::logic_error("add: negative duration for task '" + label() + "'");
  if (spec.host_ns < 0) [[unlikely]]
    throw std::logic_error("add: negative host time for task '" + label() + "'");
  if (spec.duration_ns > kMaxStepNs || spec.host_ns > kMaxStepNs) [[unlikely]]
  {
    const std::string l = label();
    throw TimeLimitError("error: " + (l.empty() ? std::string("a task") : "task '" + l + "'") + " lasts more than " +
                         time_limit_text() + ", the limit of one step (check the hardware, model and training inputs)");
  }
  if (spec.memory_release < 0) [[unlikely]]
    throw std::logic_error("add: negative memory_release for task '" + label() + "'");
  if (spec.interferes >= kContentionClasses) [[unlikely]]
    throw std::logic_error("add: task '" + label() + "' has unknown contention class " + std::to_string(spec.interferes));
  if (spec.mix.attention + spec.mix.memory > 255) [[unlikely]]
    throw std::logic_error("add: task '" + label() + "' has attention and memory-bound shares above the whole");
  for (ResourceId r : spec.resources)
    if (r < 0 || static_cast<std::size_t>(r) >= resources_.size()) [[unlikely]]
      throw std::logic_error("add: task '" + label() + "' uses unknown resource " + std::to_string(r));
}

std::uint16_t TaskGraph::text(std::string_view s) {
  for (std::size_t i = 0; i < texts_.size(); ++i)
    if (texts_[i] == s) return static_cast<std::uint16_t>(i);
  if (texts_.size() > 0xffff) throw std::length_error("TaskGraph::text: more than 65536 texts");
  texts_.emplace_back(s);
  return static_cast<std::uint16_t>(texts_.size() - 1);
}

void TaskGraph::add_allocation(TaskId t, std::int64_t bytes) {
  if (t < 0 || static_cast<std::size_t>(t) >= tasks_.size() || bytes <= 0) [[unlikely]]
    throw std::logic_error("add_allocation: unknown task " + std::to_string(t) + " or bytes " + std::to_string(bytes));
  TaskSpec& spec = tasks_[static_cast<std::size_t>(t)];
  if (spec.memory_delta < 0) {
    spec.memory_release += -spec.memory_delta;
    spec.memory_delta = 0;
  }
  spec.memory_delta += bytes;
  any_memory_ = true;
}

void TaskGraph::set_name(TaskId t, std::string name) {
  if (t < 0 || static_cast<std::size_t>(t) >= tasks_.size()) [[unlikely]]
    throw std::logic_error("set_name: unknown task " + std::to_string(t));
  TaskSpec& spec = tasks_[static_cast<std::size_t>(t)];
  auto it = std::lower_bound(names_.begin(), names_.end(), t, [](const auto& e, TaskId x) { return e.first < x; });
  if (name.empty()) {
    if (it != names_.end() && it->first == t) names_.erase(it);
    if (spec.label == Label::named) {
      spec.label = Label::text;
      spec.text = 0;
    }
    return;
  }
  spec.label = Label::named;
  if (it != names_.end() && it->first == t) it->second = std::move(name);
  else names_.emplace(it, t, std::move(name));
}

namespace {
void number(std::string& out, int x) {
  char buf[16];
  out.append(buf, std::to_chars(buf, buf + sizeof buf, x).ptr);
}
}  // namespace

// The label of a task (`name`: its explicit name, for Label::named).
std::string TaskGraph::label_of(const TaskSpec& s, const std::string* name) const {
  std::string out;
  char letter = 'B';
  switch (s.label) {
    case Label::text: return s.text < texts_.size() ? texts_[s.text] : std::string();
    case Label::named: return name ? *name : std::string();
    case Label::backward_mb:
      out = "B mb";
      number(out, s.microbatch);
      return out;
    case Label::send_forward:
    case Label::send_backward:
      out = s.label == Label::send_forward ? "send F mb" : "send B mb";
      number(out, s.microbatch);
      return out;
    case Label::forward: letter = 'F'; break;
    case Label::backward: letter = 'B'; break;
    case Label::weight_grad: letter = 'W'; break;
  }
  out += letter;   // as schedules::label
  out += " mb";
  number(out, s.microbatch);
  out += " chunk";
  number(out, s.chunk);
  return out;
}

std::string TaskGraph::name(TaskId t) const {
  const TaskSpec& s = task(t);
  const std::string* explicit_name = nullptr;
  if (s.label == Label::named) {
    auto it = std::lower_bound(names_.begin(), names_.end(), t, [](const auto& e, TaskId x) { return e.first < x; });
    if (it != names_.end() && it->first == t) explicit_name = &it->second;
  }
  return label_of(s, explicit_name);
}

// The facts the executor's fast paths rest on: which resources more than one
// stream uses, and whether any task has resources, interferes or moves memory.
void TaskGraph::note(const TaskSpec& spec) {
  if (!spec.resources.empty()) {
    for (std::size_t i = 0; i < spec.resources.size(); ++i) {
      const ResourceId r = spec.resources[i];
      StreamId& user = resource_stream_[static_cast<std::size_t>(r)];
      user = user == -1 || user == spec.stream ? spec.stream : kSharedByStreams;
      // A task listing a resource twice holds two shares of it: treat it as shared.
      for (std::size_t j = 0; j < i; ++j)
        if (spec.resources[j] == r) user = kSharedByStreams;
    }
    any_resources_ = true;
  }
  if (spec.interferes) any_interferes_ = true;
  if ((spec.memory_delta | spec.memory_release) != 0) any_memory_ = true;
}

void TaskGraph::depend(TaskId before, TaskId after) {
  const auto n = static_cast<TaskId>(size());
  if (before < 0 || before >= n || after < 0 || after >= n) [[unlikely]]
    throw std::logic_error("depend: unknown task (" + std::to_string(before) + " -> " + std::to_string(after) + ")");
  edges_.emplace_back(static_cast<std::uint32_t>(before), static_cast<std::uint32_t>(after));
  invalidate();
}

TaskId TaskGraph::add_copies(const TaskSpec* specs, std::size_t n) {
  // A checked block added once: check_block throws add()'s error before
  // anything is added.
  Block block = check_block(specs, n);
  return add_block(specs, block);
}

TaskGraph::Block TaskGraph::check_block(const TaskSpec* specs, std::size_t n) const {
  Block b;
  b.size = n;
  b.graph = this;
  for (std::size_t i = 0; i < n; ++i) {
    check(specs[i], std::string());
    auto q = std::find_if(b.queues.begin(), b.queues.end(), [&](const auto& e) { return e.first == specs[i].stream; });
    if (q == b.queues.end()) q = b.queues.insert(q, {specs[i].stream, {}});
    q->second.push_back(static_cast<TaskId>(i));
  }
  return b;
}

TaskId TaskGraph::add_block(const TaskSpec* specs, Block& block) {
  assert(block.graph == this);
  const std::size_t n = block.size;
#ifndef NDEBUG
  for (const auto& [s, ids] : block.queues)
    for (TaskId i : ids) assert(specs[i].stream == s && valid(specs[i]));
#endif
  const auto first = static_cast<TaskId>(tasks_.size());
  for (const auto& [s, ids] : block.queues) {
    auto& q = stream_tasks_[static_cast<std::size_t>(s)];
    const std::size_t old = q.size();
    q.resize(old + ids.size());
    TaskId* out = q.data() + old;
    for (std::size_t j = 0; j < ids.size(); ++j) out[j] = first + ids[j];
  }
  if (!block.noted) {
    for (std::size_t i = 0; i < n; ++i) note(specs[i]);
    block.noted = true;
  }
  tasks_.insert(tasks_.end(), specs, specs + n);
  invalidate();
  return first;
}

void TaskGraph::depend_all(const std::pair<TaskId, TaskId>* edges, std::size_t n) {
  // One pass: copy, and keep the highest id (a negative id converts to a huge
  // unsigned one); on a bad one take the copies back and let depend() throw.
  const std::size_t old = edges_.size();
  edges_.resize(old + n);
  auto* out = edges_.data() + old;
  std::uint32_t top = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto a = static_cast<std::uint32_t>(edges[i].first), b = static_cast<std::uint32_t>(edges[i].second);
    out[i] = {a, b};
    top = std::max(top, std::max(a, b));
  }
  if (n > 0 && top >= static_cast<std::uint32_t>(tasks_.size())) [[unlikely]] {
    edges_.resize(old);
    for (std::size_t i = 0; i < n; ++i) depend(edges[i].first, edges[i].second);   // throws at the first bad pair
  }
  invalidate();
}

void TaskGraph::set_contention(double factor) {
  if (!(factor >= 0)) throw std::logic_error("set_contention: factor must be >= 0");
  contention_[1] = attention_[1] = factor;
  hbm_[1] = 0;
  uniform_[1] = 1;
  self_[1] = 0;
  classes_ = std::max(classes_, 2);
}

std::uint8_t TaskGraph::contention_class(double factor) { return uniform_contention_class(factor, 0.0); }

std::uint8_t TaskGraph::uniform_contention_class(double factor, double self) {
  for (double x : {factor, self})
    if (!(x >= 0) || !std::isfinite(x)) throw std::logic_error("contention_class: factors must be finite and >= 0");
  for (int c = 1; c < classes_; ++c) {
    const auto i = static_cast<std::size_t>(c);
    if (uniform_[i] && contention_[i] == factor && self_[i] == self) return static_cast<std::uint8_t>(c);
  }
  if (classes_ >= kContentionClasses) throw std::logic_error("contention_class: more than 15 contention classes");
  const auto i = static_cast<std::size_t>(classes_);
  contention_[i] = attention_[i] = factor;
  hbm_[i] = 0;
  uniform_[i] = 1;
  self_[i] = self;
  return static_cast<std::uint8_t>(classes_++);
}

std::uint8_t TaskGraph::contention_class(double gemm, double attention, double hbm, double self) {
  for (double x : {gemm, attention, hbm, self})
    if (!(x >= 0) || !std::isfinite(x)) throw std::logic_error("contention_class: factors must be finite and >= 0");
  for (int c = 1; c < classes_; ++c) {
    const auto i = static_cast<std::size_t>(c);
    if (!uniform_[i] && contention_[i] == gemm && attention_[i] == attention && hbm_[i] == hbm && self_[i] == self)
      return static_cast<std::uint8_t>(c);
  }
  if (classes_ >= kContentionClasses) throw std::logic_error("contention_class: more than 15 contention classes");
  const auto i = static_cast<std::size_t>(classes_);
  contention_[i] = gemm;
  attention_[i] = attention;
  hbm_[i] = hbm;
  self_[i] = self;
  uniform_[i] = 0;
  return static_cast<std::uint8_t>(classes_++);
}

void TaskGraph::copy_contention(const TaskGraph& o) {
  contention_ = o.contention_;
  attention_ = o.attention_;
  hbm_ = o.hbm_;
  uniform_ = o.uniform_;
  self_ = o.self_;
  classes_ = std::max(classes_, o.classes_);
}

double TaskGraph::max_contention() const {
  double m = 0;
  for (int c = 1; c < classes_; ++c) {
    const auto i = static_cast<std::size_t>(c);
    m = std::max({m, contention_[i], attention_[i], hbm_[i], self_[i]});
  }
  return m;
}

void TaskGraph::reserve(std::size_t tasks) {
  tasks_.reserve(tasks);
  edges_.reserve(tasks + tasks / 2);
  advise_huge_storage(tasks_);   // before first touch: faulted in as 2 MiB pages
  advise_huge_storage(edges_);
  for (auto& q : stream_tasks_) q.reserve(tasks / std::max<std::size_t>(1, stream_tasks_.size()));
}

const TaskGraph::Graph& TaskGraph::graph() const {
  std::lock_guard lock(lazy_->mutex);
  if (!lazy_->graph)
    lazy_->graph = std::make_unique<const Graph>(boost::edges_are_unsorted_multi_pass, edges_.begin(), edges_.end(),
                                                 static_cast<std::uint32_t>(tasks_.size()));
  return *lazy_->graph;
}

int TaskGraph::ranks() const { return ranks_; }
const std::vector<StreamSpec>& TaskGraph::streams() const { return streams_; }
const std::vector<ResourceSpec>& TaskGraph::resources() const { return resources_; }
const std::vector<TaskId>& TaskGraph::stream_tasks(StreamId s) const { return stream_tasks_[static_cast<std::size_t>(s)]; }

}  // namespace mfusim::sim
