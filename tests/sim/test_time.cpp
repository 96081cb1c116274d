// sim/time.h: durations enter the engine checked, and the engine's sums of
// times stop at the documented limit (1e6 s) with an error instead of wrapping.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "report/timeline_ascii.h"
#include "sim/engine.h"
#include "sim/time.h"
#include "tests/sim/task_fixture.h"

using namespace mfusim::sim;
using mfusim::sim::testing::task;

TEST_CASE("checked_ns: seconds to ns, and a clear error naming the quantity out of range") {
  CHECK(checked_ns(0.0, "x") == 0);
  CHECK(checked_ns(1.5e-9, "x") == 2);
  CHECK(checked_ns(2.25, "x") == 2'250'000'000);
  CHECK(checked_ns(kMaxStepSeconds, "x") == kMaxStepNs);
  for (double bad : {-1e-9, kMaxStepSeconds * 1.000001, 1e300, std::numeric_limits<double>::infinity(),
                     -std::numeric_limits<double>::infinity(), std::nan("")}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(checked_ns(bad, "the DP gradient reduction"),
                         doctest::Contains("error: the DP gradient reduction is "), TimeLimitError);
  }
  CHECK(checked_add_ns(kMaxStepNs - 1, 1, "x") == kMaxStepNs);
  CHECK_THROWS_AS(checked_add_ns(kMaxStepNs, 1, "x"), TimeLimitError);
  CHECK_THROWS_AS(checked_add_ns(std::numeric_limits<std::int64_t>::max(), 1, "x"), TimeLimitError);
}

TEST_CASE("engine: a task beyond the limit is refused when added, not run with a wrapped time") {
  TaskGraph g;
  auto c = g.add_stream(0, "compute", true);
  CHECK_THROWS_WITH_AS(g.add(task(c, kMaxStepNs + 1), "huge"), doctest::Contains("task 'huge' lasts more than 1e6 s"),
                       TimeLimitError);
  CHECK_NOTHROW(g.add(task(c, kMaxStepNs), "at the limit"));
}

TEST_CASE("engine: a step whose tasks add up past the limit is an error, not a wrapped makespan") {
  TaskGraph g;
  auto c = g.add_stream(0, "compute", true);
  // Each task is within the limit; their chain is not (3 x 0.4e6 s).
  for (int i = 0; i < 3; ++i) g.add(task(c, kMaxStepNs / 10 * 4));
  CHECK_THROWS_WITH_AS(run(g), doctest::Contains("passes 1e6 s"), TimeLimitError);
  // Two of them fit.
  TaskGraph h;
  auto d = h.add_stream(0, "compute", true);
  for (int i = 0; i < 2; ++i) h.add(task(d, kMaxStepNs / 10 * 4));
  CHECK(run(h).makespan == Time{kMaxStepNs / 10 * 8});
}

TEST_CASE("engine: a task slowed by sharing past the limit is an error, not an overflowed cast") {
  TaskGraph g;
  auto r = g.add_resource("link", 1e-9);   // a billion times slower than nominal
  auto c = g.add_stream(0, "comm", false);
  g.add(task(c, 1'000'000'000'000, {r}));   // 1000 s of work at full rate
  CHECK_THROWS_AS(run(g), TimeLimitError);
}

TEST_CASE("ASCII timeline: any int64 makespan stays inside its row (no overflow in ns x width)") {
  // The engine stops at 1e6 s; the picture must not rely on it: a timeline of
  // 9e18 ns (the old ns * width product overflowed int64 and indexed out of the row).
  TaskGraph g;
  auto c0 = g.add_stream(0, "compute", true);
  auto c1 = g.add_stream(1, "compute", true);
  TaskSpec a = task(c0, 1);
  a.kind = 'F';
  a.microbatch = 0;
  TaskSpec b = task(c1, 1);
  b.kind = 'B';
  b.microbatch = 0;
  const TaskId ta = g.add(a), tb = g.add(b);
  Timeline tl = run(g);
  const std::int64_t half = 4'500'000'000'000'000'000;
  tl.intervals = {Interval{ta, Time{0}, Time{half}}, Interval{tb, Time{half}, Time{2 * half}}};
  tl.makespan = Time{2 * half};
  const std::string art = mfusim::report::timeline_ascii(g, tl, 100);
  // rank0 busy the first half, rank1 the second half: 50 cells each.
  const auto row0 = art.substr(art.find("rank0 |") + 7, 100);
  const auto row1 = art.substr(art.find("rank1 |") + 7, 100);
  CHECK(row0.substr(0, 2) == "F0");
  CHECK(row0.substr(50) == std::string(50, '.'));
  CHECK(row1.substr(0, 50) == std::string(50, '.'));
  CHECK(row1.substr(50, 2) == "B0");
}
