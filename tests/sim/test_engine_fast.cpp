// Tests of the engine's fast paths (sim/executor.cpp, sim/event_queue.h,
// sim/task_graph.cpp): each shortcut must give what the general rule gives.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <tuple>
#include <vector>

#include "sim/engine.h"
#include "tests/sim/task_fixture.h"
#include "sim/event_queue.h"

using namespace mfusim::sim;

using mfusim::sim::testing::task;

TEST_CASE("event queue: take_next/done and remove_next give the (time, seq) order of a sort") {
  // The executor takes the next event, handles it (inserting new events: the
  // first replaces the taken root) and then calls done(). Reference: all
  // events sorted by (time, insertion number), as ns-3's scheduler orders them.
  std::mt19937 rng(7);
  EventQueue<int> q;
  std::vector<std::tuple<std::int64_t, int>> inserted;   // (time, id); id = insertion number
  std::vector<int> out;
  int id = 0;
  std::int64_t now = 0;
  auto insert = [&](std::int64_t t) {
    q.insert(t, id);
    inserted.emplace_back(t, id++);
  };
  for (int i = 0; i < 8; ++i) insert(static_cast<std::int64_t>(rng() % 50));
  while (!q.empty()) {
    const bool take = rng() % 2 == 0;
    const auto e = take ? q.take_next() : q.remove_next();
    CHECK(e.time >= now);
    now = e.time;
    out.push_back(e.payload);
    if (id < 400) {
      const auto k = rng() % 3;   // 0, 1 or 2 new events, some at the same time
      for (unsigned j = 0; j < k; ++j) insert(now + static_cast<std::int64_t>(rng() % 4 == 0 ? 0 : rng() % 30));
    }
    if (take) q.done();
  }
  std::stable_sort(inserted.begin(), inserted.end(),
                   [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
  std::vector<int> expected;
  for (const auto& [t, i] : inserted) expected.push_back(i);
  CHECK(out == expected);
}

TEST_CASE("task graph: a resource is shared only when tasks of several streams (or one task twice) use it") {
  TaskGraph g;
  const StreamId a = g.add_stream(0, "a", false), b = g.add_stream(0, "b", false);
  const ResourceId one = g.add_resource("one stream"), two = g.add_resource("two streams"),
                   twice = g.add_resource("listed twice"), unused = g.add_resource("unused");
  TaskSpec t = task(a, 10);
  t.resources = {one, two};
  g.add(t);
  g.add(t);
  TaskSpec u = task(b, 10);
  u.resources = {two};
  g.add(u);
  TaskSpec v = task(a, 10);
  v.resources = {twice, twice};
  g.add(v);
  CHECK_FALSE(g.resource_shared(one));
  CHECK(g.resource_shared(two));
  CHECK(g.resource_shared(twice));
  CHECK_FALSE(g.resource_shared(unused));
  CHECK(g.any_resources());
  CHECK_FALSE(g.any_interferes());
  CHECK_FALSE(g.any_memory());
}

TEST_CASE("engine: a resource of one stream runs its task at min(1, capacity); listed twice, at capacity / 2") {
  // rate = min over resources of capacity / active tasks (engine.h); one
  // stream runs one task at a time, so its own resource has one active task.
  TaskGraph g;
  const StreamId s = g.add_stream(0, "s", false);
  const ResourceId slow = g.add_resource("slow", 0.5), fast = g.add_resource("fast", 4.0);
  TaskSpec a = task(s, 1000), b = task(s, 1000), c = task(s, 1000);
  a.resources = {slow};         // 1000 / 0.5 = 2000 ns
  b.resources = {fast};         // min(1, 4) = 1: 1000 ns
  c.resources = {fast, fast};   // two shares of 4 each: min(1, 4 / 2) = 1: 1000 ns
  const TaskId ta = g.add(a), tb = g.add(b), tc = g.add(c);
  TaskSpec d = task(s, 1000);
  d.resources = {slow, slow};   // 0.5 / 2 = 0.25: 4000 ns
  const TaskId td = g.add(d);
  const auto tl = run(g);
  CHECK(tl.of(ta).end == Time{2000});
  CHECK(tl.of(tb).end == Time{3000});
  CHECK(tl.of(tc).end == Time{4000});
  CHECK(tl.of(td).end == Time{8000});
}

TEST_CASE("engine: a compute task on a resource of its own stream is slowed by an interferer, and sped up when it ends") {
  // rate = min(1, capacity) / (1 + contention) while an interfering task runs
  // on the rank (engine.h); end = ceil(remaining / rate - 1e-6) (executor.cpp).
  TaskGraph g;
  g.set_contention(0.5);
  const StreamId c = g.add_stream(0, "compute", true), m = g.add_stream(0, "comm", false);
  const ResourceId half = g.add_resource("half", 0.5);
  TaskSpec i = task(m, 600);
  i.interferes = true;
  const TaskId ti = g.add(i);
  TaskSpec x = task(c, 100), y = task(c, 200);
  x.resources = {half};
  y.resources = {half};
  const TaskId tx = g.add(x), ty = g.add(y);
  const auto tl = run(g);
  CHECK(tl.of(ti).end == Time{600});
  CHECK(tl.of(tx).end == Time{300});   // 100 / (0.5 / 1.5)
  // y: 300 ns at 1/3 (100 of work), then the other 100 at 0.5: 200 ns
  CHECK(tl.of(ty).start == Time{300});
  CHECK(tl.of(ty).end == Time{800});
}

TEST_CASE("engine: the start order lists every task once, in non-decreasing start time") {
  TaskGraph g;
  g.set_contention(0.5);
  const ResourceId nic = g.add_resource("nic");
  std::vector<StreamId> s;
  for (int r = 0; r < 3; ++r) {
    s.push_back(g.add_stream(r, "compute", true));
    s.push_back(g.add_stream(r, "comm", false));
  }
  std::mt19937 rng(3);
  for (int i = 0; i < 300; ++i) {
    TaskSpec t = task(s[rng() % s.size()], static_cast<std::int64_t>(rng() % 100));
    if (!g.streams()[static_cast<std::size_t>(t.stream)].compute && rng() % 2) {
      t.resources = {nic};
      t.interferes = true;
    }
    const TaskId id = g.add(t);
    if (id > 0 && rng() % 3 == 0) g.depend(static_cast<TaskId>(rng() % static_cast<unsigned>(id)), id);
  }
  const auto tl = run(g);
  REQUIRE(tl.started.size() == g.size());
  std::vector<TaskId> sorted = tl.started;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size(); ++i) CHECK(sorted[i] == static_cast<TaskId>(i));
  for (std::size_t i = 1; i < tl.started.size(); ++i) CHECK(tl.of(tl.started[i - 1]).start <= tl.of(tl.started[i]).start);
}

TEST_CASE("engine: the critical path steps to the predecessor that ended last; on a tie, the lowest id") {
  // Predecessors p0 (id 1) and p1 (id 2) both end at 10; t starts at 10. The
  // rule (engine.h: each task started when the previous ended) allows either;
  // the lowest id is taken, whatever the order of the depend calls.
  TaskGraph g;
  const StreamId s0 = g.add_stream(0, "a", true), s1 = g.add_stream(1, "b", true), s2 = g.add_stream(2, "c", true);
  const TaskId first = g.add(task(s0, 5));
  const TaskId p0 = g.add(task(s1, 10)), p1 = g.add(task(s2, 10));
  const TaskId t = g.add(task(s0, 1));
  g.depend(p1, t);
  g.depend(p0, t);
  const auto tl = run(g);
  CHECK(tl.of(t).start == Time{10});
  CHECK(tl.critical_path == std::vector<TaskId>{p0, t});
  // The stream predecessor wins only when it ended strictly later.
  TaskGraph h;
  const StreamId h0 = h.add_stream(0, "a", true), h1 = h.add_stream(1, "b", true);
  const TaskId q = h.add(task(h1, 10));
  const TaskId before = h.add(task(h0, 10));
  const TaskId u = h.add(task(h0, 1));
  h.depend(q, u);
  CHECK(run(h).critical_path == std::vector<TaskId>{q, u});
  (void)first;
  (void)before;
}
