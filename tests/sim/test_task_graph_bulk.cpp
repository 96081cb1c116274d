// TaskGraph's bulk forms (sim/engine.h): add_copies(specs, n) is add() of a
// copy of each spec in order, depend_all(edges, n) is depend() of each pair in
// order. The lowering replays recorded op blocks through them, so they must
// give the same graph (ids, stream queues, successor order) and the same
// errors as the one-at-a-time calls.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sim/engine.h"

using namespace mfusim::sim;

namespace {
TaskSpec task(StreamId s, std::int64_t ns, std::string name = {}, ResourceList res = {}) {
  TaskSpec t;
  t.stream = s;
  t.duration_ns = ns;
  t.name = std::move(name);
  t.resources = res;
  return t;
}

TaskGraph base() {
  TaskGraph g;
  g.add_stream(0, "compute", true);
  g.add_stream(0, "tp", false);
  g.add_resource("nvlink");
  g.add(task(0, 5, "first"));
  return g;
}
}  // namespace

TEST_CASE("add_copies and depend_all build the graph add and depend build, and run the same") {
  const std::vector<TaskSpec> block = {task(0, 10, "F mb0"), task(1, 4, "tp collective", {0}), task(0, 7)};
  const std::vector<std::pair<TaskId, TaskId>> edges = {{0, 1}, {1, 2}, {2, 3}, {0, 3}};

  TaskGraph one = base();
  for (const auto& t : block) one.add(t);
  for (const auto& [a, b] : edges) one.depend(a, b);

  TaskGraph bulk = base();
  CHECK(bulk.add_copies(block.data(), block.size()) == 1);   // the first new id
  bulk.depend_all(edges.data(), edges.size());

  REQUIRE(bulk.size() == one.size());
  CHECK(bulk.dependencies() == one.dependencies());
  for (StreamId s = 0; s < 2; ++s) CHECK(bulk.stream_tasks(s) == one.stream_tasks(s));
  for (TaskId t = 0; t < static_cast<TaskId>(one.size()); ++t) {
    CHECK(bulk.task(t).name == one.task(t).name);
    CHECK(bulk.task(t).stream == one.task(t).stream);
    CHECK(bulk.task(t).resources == one.task(t).resources);
  }
  const Timeline a = run(one), b = run(bulk);
  CHECK(a.makespan == b.makespan);
  // first (5) -> F (10) -> tp (4) -> last compute (7): 26 ns.
  CHECK(b.makespan.ns == 26);
  for (TaskId t = 0; t < static_cast<TaskId>(one.size()); ++t) {
    CHECK(a.of(t).start == b.of(t).start);
    CHECK(a.of(t).end == b.of(t).end);
  }
}

TEST_CASE("add_copies rejects what add rejects and adds nothing; depend_all rejects unknown tasks") {
  TaskGraph g = base();
  const std::vector<TaskSpec> bad_stream = {task(0, 1), task(7, 1, "x")};
  CHECK_THROWS_AS(g.add_copies(bad_stream.data(), bad_stream.size()), std::logic_error);
  CHECK(g.size() == 1);
  CHECK(g.stream_tasks(0).size() == 1);
  const std::vector<TaskSpec> bad_resource = {task(1, 1, "c", {3})};
  CHECK_THROWS_AS(g.add_copies(bad_resource.data(), bad_resource.size()), std::logic_error);
  const std::vector<TaskSpec> negative = {task(0, -1)};
  CHECK_THROWS_AS(g.add_copies(negative.data(), negative.size()), std::logic_error);
  CHECK(g.size() == 1);
  const std::vector<std::pair<TaskId, TaskId>> edges = {{0, 5}};
  CHECK_THROWS_AS(g.depend_all(edges.data(), edges.size()), std::logic_error);
  CHECK(g.dependencies() == 0);
}

TEST_CASE("add_copies records resource sharing and the any_* flags as add does (the executor's fast paths read them)") {
  // Two streams share one NVLink resource through tasks added in bulk: the
  // resource is shared, and the two 8 ns transfers that run together each go
  // at half rate (fair share), ending at 16 ns, exactly as when added one by one.
  TaskSpec a = task(1, 8, "tp a", {0});
  TaskSpec b = task(2, 8, "tp b", {0});
  b.interferes = true;
  b.memory_delta = 64;
  const std::vector<TaskSpec> block = {a, b};
  auto make = [] {
    TaskGraph g;
    g.add_stream(0, "compute", true);
    g.add_stream(0, "tp", false);
    g.add_stream(0, "dp", false);
    g.add_resource("nvlink");
    return g;
  };
  TaskGraph one = make(), bulk = make();
  for (const auto& t : block) one.add(t);
  bulk.add_copies(block.data(), block.size());
  CHECK(one.resource_shared(0));
  CHECK(bulk.resource_shared(0));
  CHECK(bulk.any_resources() == one.any_resources());
  CHECK(bulk.any_interferes());
  CHECK(bulk.any_memory());
  const Timeline x = run(one), y = run(bulk);
  CHECK(x.makespan.ns == 16);
  CHECK(y.makespan.ns == 16);
  CHECK(y.of(0).end.ns == 16);
  CHECK(y.of(1).end.ns == 16);
}
