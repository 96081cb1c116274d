// Properties (STYLE.md "Tests") of ZB-H1, ZB-H2, ZB-V on the engine in lab mode (tests/schedules/properties.h),
// and of DualPipe / DualPipeV on the tests' list scheduler (the lab lowering does not yet route DualPipe's
// mix of full and split backwards; see test_dualpipe.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "properties.h"
#include "tests/schedules/test_zb_listsim.h"

using namespace mfusim;

TEST_CASE("properties: zb-h1, zb-h2, zb-v over a (p, m) grid, with and without comm") {
  for (double comm : {0.0, 0.5e-3})
    for (int p : {1, 2, 3, 4, 6, 8})
      for (int m : {1, 2, 3, 5, 8, 12, 16, 24}) {
        CAPTURE(comm); CAPTURE(p); CAPTURE(m);
        testing::PropertyOptions o;
        o.costs = {.f = 1e-3, .b = 1e-3, .w = 0.5e-3, .comm = comm, .fb = std::nullopt};
        // Qi et al. 2024 Table 2: ZB-H1 p*M_B, ZB-H2 (2p-1)*M_B; ZB-V p*M_B = 2p chunk activations.
        if (m >= p) {
          o.activation_bound = [&](int) { return double(p); };
          CHECK(testing::schedule_property_failures(schedules::zb_h1({p, m, 1}), o) == std::vector<std::string>{});
        }
        if (m >= 2 * p - 1) {
          o.activation_bound = [&](int) { return double(2 * p - 1); };
          CHECK(testing::schedule_property_failures(schedules::zb_h2({p, m, 1}), o) == std::vector<std::string>{});
          o.activation_bound = [&](int) { return double(2 * p); };
          CHECK(testing::schedule_property_failures(schedules::zb_v({p, m, 2}), o) == std::vector<std::string>{});
        }
      }
}

TEST_CASE("ZB generators: shapes below the rules throw with the values") {
  CHECK_THROWS_WITH_AS(schedules::zb_h1({4, 3, 1}), doctest::Contains("pp=4"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(schedules::zb_h2({4, 6, 1}), doctest::Contains("m=6"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(schedules::zb_v({4, 6, 2}), doctest::Contains("m=6"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(schedules::dualpipe({3, 12, 1}), doctest::Contains("pp=3"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(schedules::dualpipe({4, 9, 1}), doctest::Contains("m=9"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(schedules::dualpipev({4, 7, 2}), doctest::Contains("m=7"), std::invalid_argument);
  // and the shape rules agree with the generators
  CHECK(schedules::shape_errors("zb-h2", {4, 6, 1}).size() == 1);
  CHECK(schedules::shape_errors("zb-h2", {4, 7, 1}).empty());
  CHECK(schedules::shape_errors("zb-v", {4, 6, 2}).size() == 1);
  CHECK(schedules::shape_errors("zb-v", {4, 7, 2}).empty());
}

TEST_CASE("bubble fraction is non-increasing in m: zb-h1, zb-h2, zb-v (engine lab)") {
  config::ScheduleCosts c{.f = 1e-3, .b = 1.2e-3, .w = 0.7e-3, .comm = 0.25e-3, .fb = std::nullopt};
  for (const char* name : {"zb-h1", "zb-h2", "zb-v"})
    for (int p : {2, 4, 8}) {
      double prev = 1.0;
      for (int m = 2 * p; m <= 8 * p; m += p) {
        CAPTURE(name); CAPTURE(p); CAPTURE(m);
        const double b = testing::bubble_fraction_of(name, {p, m, 2}, c);
        CHECK(b <= prev + 1e-12);
        prev = b;
      }
    }
}

TEST_CASE("properties: dualpipe, dualpipev on the list scheduler over a (p, m) grid") {
  using schedules::testing::IntCosts;
  for (IntCosts c : {IntCosts{.f = 2, .b = 2, .w = 1, .comm = 0, .fb = 4}, IntCosts{.f = 3, .b = 3, .w = 2, .comm = 1, .fb = -1}})
    for (int p : {1, 2, 3, 4, 6, 8}) {
      double prev_d = 1.0, prev_v = 1.0;
      for (int m = 2 * p; m <= 2 * p + 24; m += 2) {
        CAPTURE(p); CAPTURE(m); CAPTURE(c.comm);
        auto v = schedules::dualpipev({p, m, 2});
        CHECK(v.order == schedules::dualpipev({p, m, 2}).order);   // deterministic
        CHECK(schedules::testing::check_op_set(v, m).empty());
        auto pv = schedules::testing::play(v, c);     // throws on deadlock
        CHECK(pv.makespan >= pv.max_work());
        auto pk = schedules::testing::peak_chunk_activations(v);
        CHECK(*std::max_element(pk.begin(), pk.end()) <= 2 * p + 1);
        const double bv = double(pv.max_span() - pv.max_work()) / double(pv.max_span());
        if (c.comm == 0) CHECK(bv <= prev_v + 1e-12);   // with comm: see the next test case
        prev_v = bv;
        if (p % 2) continue;
        auto d = schedules::dualpipe({p, m, 1});
        CHECK(d.order == schedules::dualpipe({p, m, 1}).order);
        CHECK(schedules::testing::check_op_set(d, m).empty());
        auto pd = schedules::testing::play(d, c);
        CHECK(pd.makespan >= pd.max_work());
        auto pkd = schedules::testing::peak_chunk_activations(d);
        CHECK(*std::max_element(pkd.begin(), pkd.end()) <= p + 1);
        const double bd = double(pd.max_span() - pd.max_work()) / double(pd.max_span());
        if (c.comm == 0) CHECK(bd <= prev_d + 1e-12);
        prev_d = bd;
      }
    }
}

TEST_CASE("DualPipeV with comm > 0: the absolute bubble grows with m (finding, not a source oracle)") {
  // With a stage-to-stage transfer time on the dependency chain, the steady FB phase (Step 4) does not
  // hide it fully: on the list scheduler, F=B_in=3, W=2, comm=1, p=3 gives a bubble of 25 at m=6 and 65
  // at m=36, about 4 per 3 micro-batch pairs, so the bubble *fraction* converges to a non-zero limit and
  // is not monotone in m (0.1092 at m=26, 0.1093 at m=28). The property "bubble non-increasing in m"
  // is therefore asserted for comm = 0 only.
  using schedules::testing::IntCosts;
  const IntCosts c{.f = 3, .b = 3, .w = 2, .comm = 1, .fb = -1};
  auto a = schedules::testing::play(schedules::dualpipev({3, 6, 2}), c);
  auto b = schedules::testing::play(schedules::dualpipev({3, 36, 2}), c);
  CHECK(a.max_span() - a.max_work() == 25);
  CHECK(b.max_span() - b.max_work() == 65);
}
