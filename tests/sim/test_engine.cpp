// Engine contract tests (sim/engine.h): FIFO ties, in-order streams,
// dependencies, fair-share resources, compute contention, memory, deadlock
// report, and independent concurrent simulations.
#include <doctest/doctest.h>

#include <string>
#include <thread>
#include <vector>

#include "sim/engine.h"
#include "tests/sim/task_fixture.h"
#include "sim/event_queue.h"

using namespace mfusim::sim;

using mfusim::sim::testing::task;

TEST_CASE("event queue: equal times come out FIFO by insertion (ns-3 (time, uid) keys)") {
  EventQueue<int> q;
  for (int i = 0; i < 100; ++i) q.insert(i % 3 == 0 ? 5 : 7, i);
  q.insert(1, -1);
  CHECK(q.remove_next().payload == -1);
  int last = -1;
  while (!q.empty()) {
    auto e = q.remove_next();
    if (e.time == 5) { CHECK(e.payload % 3 == 0); }
    if (e.time == 7 && last % 3 == 0) { CHECK(e.payload % 3 != 0); }
    if (e.time == 5 || (e.time == 7 && last % 3 != 0)) { CHECK(e.payload > last); }
    last = e.payload;
  }
}

TEST_CASE("engine: ties complete in FIFO order of their events") {
  TaskGraph g;
  std::vector<StreamId> s;
  for (int r = 0; r < 5; ++r) s.push_back(g.add_stream(r, std::to_string(r), true));
  for (int r = 0; r < 5; ++r) g.add(task(s[static_cast<std::size_t>(r)], 10));
  auto tl = run(g);
  REQUIRE(tl.intervals.size() == 5);
  for (int r = 0; r < 5; ++r) CHECK(tl.intervals[static_cast<std::size_t>(r)].task == r);
  CHECK(tl.makespan == Time{10});
}

TEST_CASE("engine: a stream runs its tasks in order, one at a time; streams run concurrently") {
  TaskGraph g;
  auto c = g.add_stream(0, "compute", true);
  auto m = g.add_stream(0, "comm", false);
  auto a = g.add(task(c, 10)), b = g.add(task(c, 5)), x = g.add(task(m, 12));
  auto tl = run(g);
  CHECK(tl.of(a).start == Time{0});
  CHECK(tl.of(b).start == Time{10});
  CHECK(tl.of(b).end == Time{15});
  CHECK(tl.of(x).start == Time{0});
  CHECK(tl.makespan == Time{15});
  CHECK(tl.busy_ns[static_cast<std::size_t>(c)] == 15);
}

TEST_CASE("engine: dependencies delay a task until every predecessor ends; critical path follows them") {
  TaskGraph g;
  auto s0 = g.add_stream(0, "r0", true), s1 = g.add_stream(1, "r1", true), s2 = g.add_stream(1, "r1 comm", false);
  auto a = g.add(task(s0, 10), "a");
  auto send = g.add(task(s2, 3), "send");
  auto b = g.add(task(s1, 4), "b");
  auto early = g.add(task(s1, 1), "early");   // behind b on the stream, no deps
  g.depend(a, send);
  g.depend(send, b);
  auto tl = run(g);
  CHECK(tl.of(send).start == Time{10});
  CHECK(tl.of(b).start == Time{13});
  CHECK(tl.of(early).start == Time{17});
  CHECK(tl.makespan == Time{18});
  CHECK(tl.critical_path == std::vector<TaskId>{a, send, b, early});
}

TEST_CASE("engine: two equal transfers on one resource each go at half rate (fair share) and take 2x") {
  TaskGraph g;
  auto nic = g.add_resource("nic", 1.0);
  auto s0 = g.add_stream(0, "send0", false), s1 = g.add_stream(0, "send1", false);
  TaskSpec t0 = task(s0, 1000), t1 = task(s1, 1000);
  t0.resources = {nic};
  t1.resources = {nic};
  auto a = g.add(t0), b = g.add(t1);
  auto tl = run(g);
  CHECK(tl.of(a).end == Time{2000});
  CHECK(tl.of(b).end == Time{2000});

  SUBCASE("a late arrival shares only the overlap") {
    // a alone for 500 ns (half done), then both at half rate: a needs 1000 more, ends at 1500;
    // c has done 500 by then, alone again at full rate: ends at 2000.
    TaskGraph h;
    auto r = h.add_resource("nic");
    auto x0 = h.add_stream(0, "x0", false), x1 = h.add_stream(0, "x1", false);
    TaskSpec p = task(x0, 1000), q = task(x1, 1000), d = task(x1, 500);
    p.resources = {r};
    q.resources = {r};
    auto pa = h.add(p);
    h.add(d);
    auto qc = h.add(q);
    auto tl2 = run(h);
    CHECK(tl2.of(pa).end == Time{1500});
    CHECK(tl2.of(qc).end == Time{2000});
  }
  SUBCASE("capacity 2 carries two at full rate") {
    TaskGraph h;
    auto r = h.add_resource("nvlink", 2.0);
    auto x0 = h.add_stream(0, "x0", false), x1 = h.add_stream(0, "x1", false);
    TaskSpec p = task(x0, 1000), q = task(x1, 1000);
    p.resources = {r};
    q.resources = {r};
    h.add(p);
    h.add(q);
    CHECK(run(h).makespan == Time{1000});
  }
}

TEST_CASE("engine: compute runs slower by `contention` while an interfering task runs on the rank") {
  // duration x (1 + contention) while overlapped: 1000 ns compute, 400 ns overlapped at rate 1/1.25
  // covers 320 ns of work, leaving 680 ns at full rate: ends at 1080.
  TaskGraph g;
  g.set_contention(0.25);
  auto c = g.add_stream(0, "compute", true), m = g.add_stream(0, "comm", false), o = g.add_stream(1, "other rank", false);
  auto k = g.add(task(c, 1000));
  TaskSpec ar = task(m, 400);
  ar.interferes = true;
  g.add(ar);
  TaskSpec far = task(o, 5000);   // another rank: no effect
  far.interferes = true;
  g.add(far);
  auto tl = run(g);
  CHECK(tl.of(k).end == Time{1080});
}

TEST_CASE("engine: contention classes: compute runs at the slowest running class's rate") {
  // Class a (factor 0.25) runs 0-400 ns, class b (factor 1.0) 200-300 ns on a second comm stream.
  // Compute of 1000 ns: 0-200 at 1/1.25 (160 done), 200-300 at 1/2 (50), 300-400 at 1/1.25 (80):
  // 290 done at 400, 710 left at full rate: ends at 1110.
  TaskGraph g;
  const std::uint8_t a = g.contention_class(0.25), b = g.contention_class(1.0);
  CHECK(a != b);
  CHECK(g.contention_class(0.25) == a);   // the same factor, the same class
  CHECK(g.max_contention() == 1.0);
  auto c = g.add_stream(0, "compute", true), m = g.add_stream(0, "comm", false), n = g.add_stream(0, "comm2", false);
  auto k = g.add(task(c, 1000));
  TaskSpec x = task(m, 400);
  x.interferes = a;
  g.add(x);
  auto w = g.add(task(n, 200));   // a wait on the second comm stream
  TaskSpec y = task(n, 100);
  y.interferes = b;
  auto yi = g.add(y);
  g.depend(w, yi);
  auto tl = run(g);
  CHECK(tl.of(k).end == Time{1110});
  TaskSpec bad = task(m, 1);
  bad.interferes = TaskGraph::kContentionClasses;
  CHECK_THROWS_AS(g.add(bad), std::logic_error);
}

TEST_CASE("engine: a class with a factor per kind of compute slows each task by its mix") {
  // Class: GEMMs x1.5, attention x1.1, HBM fraction 0.5. Four compute tasks of 1000 ns, each alone
  // beside the class's 10,000 ns transfer on its own rank: a GEMM task (no mix) ends at 1500, an
  // attention task at 1100, a memory-bound task with c = 0.6 at 1000 x (1 + 0.6 x 0.5) = 1300, and a
  // task half attention, half GEMMs at 1000 x (0.5 x 1.5 + 0.5 x 1.1) = 1300.
  TaskGraph g;
  const std::uint8_t cls = g.contention_class(0.5, 0.1, 0.5);
  CHECK(g.contention_class(0.5, 0.1, 0.5) == cls);
  CHECK(g.contention_class(0.5) != cls);   // a uniform class of the same GEMM factor is another class
  CHECK_FALSE(g.contention_uniform(cls));
  CHECK_THROWS_AS(g.contention_class(0.5, -0.1, 0.5), std::logic_error);
  std::vector<TaskId> ks;
  const ComputeMix mixes[4] = {{0, 0, 0}, {255, 0, 0}, {0, 255, 153}, {128, 0, 0}};
  for (int r = 0; r < 4; ++r) {
    auto c = g.add_stream(r, "compute", true), m = g.add_stream(r, "comm", false);
    TaskSpec t = task(c, 1000);
    t.mix = mixes[r];
    ks.push_back(g.add(t));
    TaskSpec x = task(m, 10000);
    x.interferes = cls;
    g.add(x);
  }
  auto tl = run(g);
  CHECK(tl.of(ks[0]).end == Time{1500});
  CHECK(tl.of(ks[1]).end == Time{1100});
  CHECK(tl.of(ks[2]).end == Time{1300});
  CHECK(std::abs(static_cast<double>(tl.of(ks[3]).end.ns) - 1000 * (128 / 255.0 * 1.1 + 127 / 255.0 * 1.5)) <= 1.0);
  // A uniform class (contention_class(factor)) slows every kind alike.
  TaskGraph h;
  const std::uint8_t u = h.contention_class(0.5);
  auto c = h.add_stream(0, "compute", true), m = h.add_stream(0, "comm", false);
  TaskSpec t = task(c, 1000);
  t.mix = {100, 155, 255};
  auto k = h.add(t);
  TaskSpec x = task(m, 10000);
  x.interferes = u;
  h.add(x);
  CHECK(run(h).of(k).end == Time{1500});
  // Host work on the compute stream (a GC pause, data loading): the GPU is idle, nothing slows it.
  TaskGraph gh;
  const std::uint8_t hc = gh.contention_class(0.5, 0.1, 0.5);
  auto c2 = gh.add_stream(0, "compute", true), m2 = gh.add_stream(0, "comm", false);
  TaskSpec hw = task(c2, 1000);
  hw.mix.host_only = 1;
  auto hk = gh.add(hw);
  TaskSpec hx = task(m2, 10000);
  hx.interferes = hc;
  gh.add(hx);
  CHECK(run(gh).of(hk).end == Time{1000});
  // Shares above the whole are refused.
  TaskSpec bad = task(c2, 10);
  bad.mix.attention = 200;
  bad.mix.memory = 100;
  CHECK_THROWS_AS(gh.add(bad), std::logic_error);
}

TEST_CASE("engine: a class that slows beside compute runs its own tasks slower while the rank computes") {
  // Class: GEMMs x1.2, its own tasks x1.5 beside compute. A 300 ns transfer from 0 beside 100 ns of
  // compute on its rank: the compute ends at 120; the transfer does 120 / 1.5 = 80 by then and the
  // 220 left alone at full rate: ends at 340.
  auto one = [](std::vector<std::int64_t> compute, bool host_only, int compute_rank) {
    TaskGraph g;
    const std::uint8_t cls = g.contention_class(0.2, 0.0, 0.0, 0.5);
    CHECK(g.contention_self(cls) == 0.5);
    CHECK(g.contention_class(0.2, 0.0, 0.0) != cls);   // the same footprint without `self` is another class
    auto m = g.add_stream(0, "comm", false);
    g.add_stream(1, "comm", false);
    auto c = g.add_stream(compute_rank, "compute", true);
    TaskSpec x = task(m, 300);
    x.interferes = cls;
    const TaskId xi = g.add(x);
    for (std::int64_t d : compute) {
      TaskSpec t = task(c, d);
      t.mix.host_only = host_only ? 1 : 0;
      g.add(t);
    }
    return run(g).of(xi).end.ns;
  };
  CHECK(one({100}, false, 0) == 340);
  // Compute back to back in two tasks (one ends as the next starts): the same as one task of their
  // work. 50 ns at 1/1.2 end at 60, the second at 120: the transfer still ends at 340.
  CHECK(one({50, 50}, false, 0) == 340);
  // Host work on the compute stream (the GPU idle) and compute on another rank do not slow it.
  CHECK(one({100}, true, 0) == 300);
  CHECK(one({100}, false, 1) == 300);
  // Compute past the transfer's end: all of it beside compute, 300 x 1.5 = 450; the compute runs at
  // 1/1.2 until 450 (375 done) and ends at 1000 - 375 + 450 = 1075.
  CHECK(one({1000}, false, 0) == 450);
  CHECK_THROWS_AS(TaskGraph{}.contention_class(0.2, 0.0, 0.0, -0.1), std::logic_error);
}

TEST_CASE("engine: a uniform class that slows beside compute: every kind of compute alike, its own tasks stretched") {
  // Factor 0.5 for every kind, its own tasks x2 beside compute. A 1000 ns side task beside 10,000 ns of
  // compute (GEMM, attention-heavy or memory-bound: the same): the side runs 2000 ns; the compute does
  // 2000 / 1.5 there and ends at 10,000 + 2000 x (1 - 1 / 1.5) = 10,667.
  const ComputeMix mixes[3] = {{0, 0, 0}, {255, 0, 0}, {0, 255, 200}};
  for (const ComputeMix& mix : mixes) {
    TaskGraph g;
    const std::uint8_t u = g.uniform_contention_class(0.5, 1.0);
    CHECK(g.uniform_contention_class(0.5, 1.0) == u);
    CHECK(g.contention_class(0.5) != u);   // the same factor without `self` is another class
    CHECK(g.contention_uniform(u));
    CHECK(g.contention_self(u) == 1.0);
    auto c = g.add_stream(0, "compute", true), m = g.add_stream(0, "comm", false);
    TaskSpec t = task(c, 10000);
    t.mix = mix;
    const TaskId k = g.add(t);
    TaskSpec x = task(m, 1000);
    x.interferes = u;
    const TaskId xi = g.add(x);
    const auto tl = run(g);
    CHECK(tl.of(xi).end == Time{2000});
    CHECK(std::abs(static_cast<double>(tl.of(k).end.ns) - (10000 + 2000 * (1 - 1 / 1.5))) <= 1.0);
  }
  CHECK_THROWS_AS(TaskGraph{}.uniform_contention_class(0.5, -1.0), std::logic_error);
}

TEST_CASE("engine: memory allocates at start, frees at end; peak per rank") {
  TaskGraph g;
  auto c = g.add_stream(0, "compute", true), c1 = g.add_stream(1, "compute", true);
  TaskSpec f1 = task(c, 10), f2 = task(c, 10), b1 = task(c, 10), b2 = task(c, 10);
  f1.memory_delta = 100;
  f2.memory_delta = 50;
  b1.memory_delta = -100;
  b2.memory_delta = -50;
  g.add(f1); g.add(f2); g.add(b1); g.add(b2);
  TaskSpec fb = task(c1, 10);   // allocates 30 at start, frees 30 at end
  fb.memory_delta = 30;
  fb.memory_release = 30;
  g.add(fb);
  auto tl = run(g);
  CHECK(tl.peak_memory == std::vector<std::int64_t>{150, 30});
  REQUIRE(tl.memory.size() == 2);
  CHECK(tl.memory[0].back().bytes == 0);
  CHECK(tl.memory[1].back().bytes == 0);
}

TEST_CASE("engine: when nothing can run, Deadlock names each stream's next task and what it waits for") {
  // Zero Bubble scheduler style: rank 0 waits for B on rank 1 before its F; rank 1's B waits on that F.
  TaskGraph g;
  auto r0 = g.add_stream(0, "rank0/compute", true), r1 = g.add_stream(1, "rank1/compute", true);
  auto b0 = g.add(task(r0, 1), "B mb0 chunk0");
  auto f0 = g.add(task(r0, 1), "F mb0 chunk0");
  auto f1 = g.add(task(r1, 1), "F mb0 chunk0");
  auto b1 = g.add(task(r1, 1), "B mb0 chunk0");
  g.depend(f0, f1);
  g.depend(f1, b1);
  g.depend(b1, b0);
  std::string msg;
  try {
    run(g);
  } catch (const Deadlock& e) {
    msg = e.what();
  }
  INFO(msg);
  CHECK(msg.find("rank0/compute: task 0 'B mb0 chunk0'") != std::string::npos);
  CHECK(msg.find("waits for task 3 'B mb0 chunk0' on rank1/compute") != std::string::npos);
  CHECK(msg.find("rank1/compute: task 2 'F mb0 chunk0'") != std::string::npos);
  CHECK(msg.find("waits for task 1 'F mb0 chunk0' on rank0/compute (queued behind task 0") != std::string::npos);
}

namespace {
TaskGraph chain_graph(int ranks, int tasks_per_rank, bool shared) {
  TaskGraph g;
  auto nic = g.add_resource("nic");
  g.set_contention(0.1);
  std::vector<StreamId> c, m;
  for (int r = 0; r < ranks; ++r) {
    c.push_back(g.add_stream(r, "compute", true));
    m.push_back(g.add_stream(r, "comm", false));
  }
  std::vector<TaskId> prev(static_cast<std::size_t>(ranks), -1);
  for (int k = 0; k < tasks_per_rank; ++k)
    for (int r = 0; r < ranks; ++r) {
      auto t = g.add(task(c[static_cast<std::size_t>(r)], 100 + 7 * ((k + r) % 5)));
      TaskSpec x = task(m[static_cast<std::size_t>(r)], 50 + (k % 3) * 10);
      x.interferes = true;
      if (shared) x.resources = {nic};
      x.memory_delta = k % 2 ? -1 : 1;
      auto s = g.add(x);
      g.depend(t, s);
      if (r > 0) g.depend(prev[static_cast<std::size_t>(r - 1)], t);
      prev[static_cast<std::size_t>(r)] = s;
    }
  return g;
}
}  // namespace

TEST_CASE("engine: simulations in several threads at once give identical results (no global state)") {
  const auto g = chain_graph(4, 200, true);
  const auto ref = run(g);
  std::vector<Timeline> out(4);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < out.size(); ++i)
    threads.emplace_back([&, i] {
      auto local = chain_graph(4, 200, true);
      out[i] = run(i % 2 ? g : local);
    });
  for (auto& t : threads) t.join();
  for (const auto& tl : out) {
    CHECK(tl.makespan == ref.makespan);
    CHECK(tl.events == ref.events);
    CHECK(tl.peak_memory == ref.peak_memory);
    REQUIRE(tl.intervals.size() == ref.intervals.size());
    bool same = true;
    for (std::size_t k = 0; k < tl.intervals.size(); ++k)
      same = same && tl.intervals[k].task == ref.intervals[k].task && tl.intervals[k].start == ref.intervals[k].start &&
             tl.intervals[k].end == ref.intervals[k].end;
    CHECK(same);
  }
}

TEST_CASE("engine: the fast path and the dynamic path agree when nothing is shared") {
  auto g = chain_graph(3, 50, false);
  auto fast = run(g);                 // contention 0.1 with interferes: dynamic
  TaskGraph h = chain_graph(3, 50, false);
  h.set_contention(0.0);              // nothing shared, no contention: fast path
  auto plain = run(h);
  CHECK(fast.makespan >= plain.makespan);
  CHECK(plain.events == static_cast<std::int64_t>(h.size()));
}

TEST_CASE("task graph: the Boost CSR graph keeps successors in dependency order and predecessors by source") {
  // The executor releases successors in out-edge order, which fixes the FIFO
  // order of simultaneous starts; the CSR graph must keep the order of `depend`
  // calls per source (Boost's histogram sort is stable).
  TaskGraph g;
  const StreamId s = g.add_stream(0, "s", true);
  for (int i = 0; i < 5; ++i) g.add(task(s, 10));
  g.depend(0, 4);
  g.depend(0, 2);
  g.depend(3, 1);
  g.depend(0, 3);
  const auto& csr = g.graph();
  std::vector<std::uint32_t> succ0;
  for (auto [v, end] = boost::adjacent_vertices(0u, csr); v != end; ++v) succ0.push_back(*v);
  CHECK(succ0 == std::vector<std::uint32_t>{4, 2, 3});
  CHECK(boost::in_degree(1u, csr) == 1);
  CHECK(boost::num_edges(csr) == 4);
  // The cache is rebuilt after a change.
  g.depend(2, 1);
  std::vector<std::uint32_t> pred1;
  for (auto [e, end] = boost::in_edges(1u, g.graph()); e != end; ++e) pred1.push_back(boost::source(*e, g.graph()));
  CHECK(pred1 == std::vector<std::uint32_t>{2, 3});
  // A copy has its own graph.
  const TaskGraph h = g;
  CHECK(boost::num_edges(h.graph()) == 5);
}

TEST_CASE("task graph: a task's resources are stored inline, up to ResourceList::kCapacity") {
  ResourceList r = {1, 2};
  CHECK(r.size() == 2);
  CHECK(r == ResourceList(std::vector<ResourceId>{1, 2}));
  CHECK_FALSE(r == ResourceList{2, 1});
  for (std::size_t i = r.size(); i < ResourceList::kCapacity; ++i) r.push_back(0);
  CHECK_THROWS_AS(r.push_back(0), std::length_error);
}
