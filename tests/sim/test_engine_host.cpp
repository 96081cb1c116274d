// The host issue model (sim/engine.h TaskSpec::host_ns): the host issues a stream's tasks in
// queue order from time 0, ahead of the GPU; a task cannot end before the host has issued it.
// Per-segment max(GPU, host) -- the model before -- is the special case of a host that never
// gets ahead; these cases are where the two differ.
#include <doctest/doctest.h>

#include "sim/engine.h"
#include "tests/sim/task_fixture.h"

using namespace mfusim::sim;
using mfusim::sim::testing::task;

namespace {
TaskSpec hosted(StreamId s, std::int64_t gpu_ns, std::int64_t host_ns, ResourceList res = {}) {
  TaskSpec t = task(s, gpu_ns, res);
  t.host_ns = host_ns;
  return t;
}
}  // namespace

TEST_CASE("host issue: a host-bound chain takes the host's time; the waits are recorded") {
  TaskGraph g;
  const StreamId s = g.add_stream(0, "compute", true);
  for (int i = 0; i < 4; ++i) g.add(hosted(s, 10, 100));   // 10 ns of GPU work, 100 ns to issue
  const Timeline tl = run(g);
  CHECK(tl.makespan.ns == 400);
  for (int i = 0; i < 4; ++i) CHECK(tl.of(i).end.ns == 100 * (i + 1));
  REQUIRE(tl.host_wait_ns.size() == 4);
  CHECK(tl.host_wait_ns[0] == 90);   // started at 0, work done at 10, issued at 100
  for (std::size_t i = 1; i < 4; ++i) CHECK(tl.host_wait_ns[i] == 90);
}

TEST_CASE("host issue: the host runs ahead while the GPU is busy, and that slack hides a later host-heavy task") {
  TaskGraph g;
  const StreamId s = g.add_stream(0, "compute", true);
  g.add(hosted(s, 1000, 10));   // GPU-bound: the host is done issuing it at 10
  g.add(hosted(s, 10, 500));    // host-heavy: issued by 510, long before the GPU reaches it
  const Timeline tl = run(g);
  // per-segment max would give 1000 + max(10, 500) = 1500
  CHECK(tl.makespan.ns == 1010);
  CHECK(tl.host_wait_ns.empty());   // nobody waited
}

TEST_CASE("host issue: each stream has its own host clock; tasks without host time are not held") {
  TaskGraph g;
  const StreamId a = g.add_stream(0, "compute", true);
  const StreamId b = g.add_stream(0, "comm", false);
  const TaskId x = g.add(hosted(a, 10, 300));
  const TaskId y = g.add(task(b, 50));
  const TaskId z = g.add(hosted(b, 10, 20));   // b's clock: 0 + 20 (y has no host time)
  g.depend(y, z);
  const Timeline tl = run(g);
  CHECK(tl.of(x).end.ns == 300);
  CHECK(tl.of(y).end.ns == 50);
  CHECK(tl.of(z).end.ns == 60);
}

TEST_CASE("host issue: a task on a shared resource (dynamic path) also waits for its issue") {
  TaskGraph g;
  const ResourceId link = g.add_resource("link", 1.0);
  const StreamId a = g.add_stream(0, "a", false);
  const StreamId b = g.add_stream(1, "b", false);
  g.add(hosted(a, 100, 1000, {link}));   // half rate while b runs: work done at 150
  g.add(task(b, 50, {link}));            // shares the link: done at 100
  const Timeline tl = run(g);
  CHECK(tl.of(1).end.ns == 100);
  CHECK(tl.of(0).end.ns == 1000);       // held by the host, not by the link
  REQUIRE(tl.host_wait_ns.size() == 2);
  CHECK(tl.host_wait_ns[static_cast<std::size_t>(tl.interval_of[0])] == 850);
}
