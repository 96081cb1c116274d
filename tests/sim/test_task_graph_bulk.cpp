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
#include "tests/sim/task_fixture.h"

using namespace mfusim::sim;
using mfusim::sim::testing::task;

namespace {
TaskGraph base() {
  TaskGraph g;
  g.add_stream(0, "compute", true);
  g.add_stream(0, "tp", false);
  g.add_resource("nvlink");
  g.add(task(0, 5), "first");
  return g;
}
}  // namespace

TEST_CASE("add_copies and depend_all build the graph add and depend build, and run the same") {
  std::vector<TaskSpec> block = {task(0, 10), task(1, 4, {0}), task(0, 7)};
  block[0].label = Label::forward;   // "F mb0 chunk0"
  block[0].microbatch = 0;
  block[0].chunk = 0;
  block[1].label = Label::text;
  const std::vector<std::pair<TaskId, TaskId>> edges = {{0, 1}, {1, 2}, {2, 3}, {0, 3}};

  TaskGraph one = base();
  block[1].text = one.text("tp collective");
  for (const auto& t : block) one.add(t);
  for (const auto& [a, b] : edges) one.depend(a, b);

  TaskGraph bulk = base();
  CHECK(bulk.text("tp collective") == block[1].text);   // texts are numbered in order of first use
  CHECK(bulk.add_copies(block.data(), block.size()) == 1);   // the first new id
  bulk.depend_all(edges.data(), edges.size());

  REQUIRE(bulk.size() == one.size());
  CHECK(bulk.dependencies() == one.dependencies());
  CHECK(bulk.name(0) == "first");
  CHECK(bulk.name(1) == "F mb0 chunk0");
  CHECK(bulk.name(2) == "tp collective");
  CHECK(bulk.name(3).empty());
  for (StreamId s = 0; s < 2; ++s) CHECK(bulk.stream_tasks(s) == one.stream_tasks(s));
  for (TaskId t = 0; t < static_cast<TaskId>(one.size()); ++t) {
    CHECK(bulk.name(t) == one.name(t));
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
  const std::vector<TaskSpec> bad_stream = {task(0, 1), task(7, 1)};
  CHECK_THROWS_AS(g.add_copies(bad_stream.data(), bad_stream.size()), std::logic_error);
  CHECK(g.size() == 1);
  CHECK(g.stream_tasks(0).size() == 1);
  const std::vector<TaskSpec> bad_resource = {task(1, 1, {3})};
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
  TaskSpec a = task(1, 8, {0});
  TaskSpec b = task(2, 8, {0});
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

TEST_CASE("TaskGraph::name: label codes format as schedules::label does; explicit names from a side table") {
  TaskGraph g = base();   // task 0 is named "first"
  TaskSpec f = task(0, 1);
  f.microbatch = 12;
  f.chunk = 1;
  f.kind = 'R';   // a recompute piece of a backward op is still labelled by its op
  f.label = Label::backward;
  const TaskId b = g.add(f);
  f.label = Label::weight_grad;
  const TaskId w = g.add(f);
  f.label = Label::backward_mb;
  const TaskId bm = g.add(f);
  f.label = Label::text;
  f.text = 7;   // no such text
  CHECK_THROWS_AS(g.add(f), std::logic_error);
  f.text = g.text("all-to-all");
  CHECK(f.text == 1);
  CHECK(g.text("") == 0);
  const TaskId a2a = g.add(f);
  CHECK(g.name(0) == "first");
  CHECK(g.name(b) == "B mb12 chunk1");
  CHECK(g.name(w) == "W mb12 chunk1");
  CHECK(g.name(bm) == "B mb12");
  CHECK(g.name(a2a) == "all-to-all");
  g.set_name(b, "F mb3 chunk0 + B mb1 chunk1");   // overrides the code
  CHECK(g.name(b) == "F mb3 chunk0 + B mb1 chunk1");
  CHECK(g.task(b).label == Label::named);
  g.set_name(0, "");   // removes the name
  CHECK(g.name(0).empty());
  CHECK(g.name(b) == "F mb3 chunk0 + B mb1 chunk1");
  CHECK_THROWS_AS(g.set_name(99, "x"), std::logic_error);
}

TEST_CASE("check_block/add_block: a block checked once, added many times, builds the graph add_copies builds") {
  // The lowering's replay: the same recorded block with a new micro-batch per use.
  std::vector<TaskSpec> block = {task(0, 10), task(1, 4, {0}), task(0, 7), task(1, 2, {0})};
  block[0].label = Label::forward;
  TaskGraph copies = base(), blocks = base();
  TaskGraph::Block checked = blocks.check_block(block.data(), block.size());
  CHECK(checked.size == 4);
  REQUIRE(checked.queues.size() == 2);   // stream 0: tasks 0 and 2; stream 1: tasks 1 and 3
  CHECK(checked.queues[0].second == std::vector<TaskId>{0, 2});
  CHECK(checked.queues[1].second == std::vector<TaskId>{1, 3});
  for (int mb = 0; mb < 3; ++mb) {
    for (auto& t : block) t.microbatch = mb;
    CHECK(copies.add_copies(block.data(), block.size()) == blocks.add_block(block.data(), checked));
  }
  REQUIRE(blocks.size() == copies.size());
  CHECK(blocks.size() == 13);
  for (StreamId s = 0; s < 2; ++s) CHECK(blocks.stream_tasks(s) == copies.stream_tasks(s));
  CHECK(blocks.stream_tasks(1) == std::vector<TaskId>{2, 4, 6, 8, 10, 12});
  for (TaskId t = 0; t < static_cast<TaskId>(copies.size()); ++t) {
    CHECK(blocks.name(t) == copies.name(t));
    CHECK(blocks.task(t).microbatch == copies.task(t).microbatch);
  }
  CHECK(blocks.name(9) == "F mb2 chunk-1");
  // note(): one stream uses the NVLink resource, so it is not shared.
  CHECK_FALSE(blocks.resource_shared(0));
  CHECK(blocks.any_resources());
  CHECK_FALSE(blocks.any_memory());
}

TEST_CASE("check_block gives add's errors and changes nothing; add_block notes resource sharing at its first use") {
  TaskGraph g = base();
  const std::vector<TaskSpec> bad_stream = {task(0, 1), task(7, 1)};
  CHECK_THROWS_WITH_AS(g.check_block(bad_stream.data(), bad_stream.size()), "add: task '' on unknown stream 7",
                       std::logic_error);
  const std::vector<TaskSpec> bad_resource = {task(1, 1, {3})};
  CHECK_THROWS_WITH_AS(g.check_block(bad_resource.data(), bad_resource.size()), "add: task '' uses unknown resource 3",
                       std::logic_error);
  std::vector<TaskSpec> negative = {task(0, -1)};
  negative[0].label = Label::backward;
  negative[0].microbatch = 2;
  negative[0].chunk = 0;
  CHECK_THROWS_WITH_AS(g.check_block(negative.data(), negative.size()),
                       "add: negative duration for task 'B mb2 chunk0'", std::logic_error);
  CHECK(g.size() == 1);
  // A block whose tasks on two streams use one resource: shared once added, not before.
  g.add_stream(0, "dp", false);
  const std::vector<TaskSpec> two = {task(1, 8, {0}), task(2, 8, {0})};
  TaskGraph::Block b = g.check_block(two.data(), two.size());
  CHECK_FALSE(g.resource_shared(0));
  g.add_block(two.data(), b);
  CHECK(g.resource_shared(0));
  const Timeline t = run(g);   // first (5), then the two transfers at half rate each: 16 ns
  CHECK(t.makespan.ns == 16);
}

TEST_CASE("send labels: \"send F mb<microbatch>\" and \"send B mb<microbatch>\", as the lowering named its sends") {
  TaskGraph g = base();
  TaskSpec s = task(1, 3);
  s.microbatch = 17;
  s.label = Label::send_forward;
  const TaskId f = g.add(s);
  s.label = Label::send_backward;
  s.microbatch = 0;
  const TaskId b = g.add(s);
  CHECK(g.name(f) == "send F mb17");
  CHECK(g.name(b) == "send B mb0");
}
