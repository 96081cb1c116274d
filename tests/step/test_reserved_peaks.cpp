// step::reserved_peaks (step/analysis.h): a step's timeline allocations through the caching-allocator model.
#include <doctest/doctest.h>

#include "config/loader.h"
#include "report/json.h"
#include "report/text.h"
#include "sim/engine.h"
#include "step/analysis.h"
#include "step/simulate.h"
#include "tests/sim/task_fixture.h"

using mfusim::sim::testing::task;

namespace {
constexpr std::int64_t MiB = 1 << 20;
}

TEST_CASE("reserved peaks: each stream caches its own segments; one stream reuses them") {
  using namespace mfusim;
  auto play = [](bool two_streams) {
    sim::TaskGraph g;
    const sim::StreamId a = g.add_stream(0, "compute", true);
    const sim::StreamId b = two_streams ? g.add_stream(0, "gather", false) : a;
    auto t1 = task(a, 10);
    t1.memory_delta = 100 * MiB;
    t1.microbatch = 0;
    auto t2 = task(a, 10);
    t2.memory_delta = -100 * MiB;
    t2.microbatch = 0;
    auto t3 = task(b, 10);
    t3.memory_delta = 100 * MiB;
    t3.microbatch = 1;
    auto t4 = task(b, 10);
    t4.memory_delta = -100 * MiB;
    t4.microbatch = 1;
    const auto i1 = g.add(t1), i2 = g.add(t2), i3 = g.add(t3), i4 = g.add(t4);
    g.depend(i1, i2);
    g.depend(i2, i3);
    g.depend(i3, i4);
    const auto tl = sim::run(g);
    CHECK(tl.peak_memory[0] == 100 * MiB);   // never two blocks at once
    return step::reserved_peaks(g, tl, 1, nullptr)[0];
  };
  CHECK(play(false) == 100 * MiB);   // the freed block serves the second request
  CHECK(play(true) == 200 * MiB);    // another stream's cached segment does not
}

TEST_CASE("reserved peaks: a freed block of another size leaves a hole a larger request cannot use") {
  using namespace mfusim;
  sim::TaskGraph g;
  const sim::StreamId a = g.add_stream(0, "compute", true);
  // 60 MiB and 40 MiB live, the 60 freed, then 70 requested: a new segment (the 60 MiB one is too small).
  auto mk = [&](std::int64_t delta, int mb) {
    auto t = task(a, 10);
    t.memory_delta = delta;
    t.microbatch = mb;
    return g.add(t);
  };
  const auto x = mk(60 * MiB, 0), y = mk(40 * MiB, 1), fx = mk(-60 * MiB, 0), z = mk(70 * MiB, 2), fy = mk(-40 * MiB, 1),
             fz = mk(-70 * MiB, 2);
  g.depend(x, y);
  g.depend(y, fx);
  g.depend(fx, z);
  g.depend(z, fy);
  g.depend(fy, fz);
  const auto tl = sim::run(g);
  CHECK(tl.peak_memory[0] == 110 * MiB);
  CHECK(step::reserved_peaks(g, tl, 1, nullptr)[0] == 170 * MiB);   // segments of 60, 40 and 70 MiB
}

TEST_CASE("reserved peaks: the simulated step reports a reserved peak at least its allocated peak") {
  using namespace mfusim;
  for (const char* f : {"/../scenarios/8xh100_llama3_8b.toml", "/../validation/fsdp/run25/fsdp2-4x8192x1.toml"}) {
    CAPTURE(f);
    const auto s = config::load_scenario(std::string(MFUSIM_TEST_DIR) + f).base;
    const auto r = step::simulate(s);
    CHECK(r.memory.peak_reserved_gib >= r.memory.peak_gib - 1e-9);
    CHECK(r.memory.peak_reserved_gib <= r.memory.peak_gib * 1.3);
  }
}

TEST_CASE("reserved peaks: a step simulated without them reports none (no 0 GiB in JSON or text)") {
  using namespace mfusim;
  const auto s = config::load_scenario(std::string(MFUSIM_TEST_DIR) + "/../scenarios/8xh100_llama3_8b.toml").base;
  step::SimulateOptions off;
  off.reserved_memory = false;   // as plan and diagnose simulate their candidates
  const auto without = step::simulate(s, off);
  const auto with = step::simulate(s);
  CHECK(without.memory.peak_reserved_gib == 0.0);
  CHECK(report::to_json(without).find("peak_reserved_gib") == std::string::npos);
  CHECK(report::text_report(without, {}).find("reserved by the caching allocator") == std::string::npos);
  CHECK(report::to_json(with).find("peak_reserved_gib") != std::string::npos);
  CHECK(report::text_report(with, {}).find("reserved by the caching allocator") != std::string::npos);
}
