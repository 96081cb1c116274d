// Properties of every schedule this branch generates, over a grid of (p, m, v)
// (STYLE.md "Tests"): see properties.h for the list.
#include <doctest/doctest.h>

#include <algorithm>

#include "properties.h"

using namespace mfusim;

TEST_CASE("properties: gpipe, 1f1b, interleaved-1f1b over a (p, m, v) grid") {
  for (int p : {1, 2, 3, 4, 6, 8})
    for (int m : {1, 2, 3, 5, 8, 12, 16, 24}) {
      CAPTURE(p);
      CAPTURE(m);
      testing::PropertyOptions gp;
      gp.activation_bound = [&](int) { return double(m); };          // GPipe stashes m (Narayanan §2.2.1)
      CHECK(testing::schedule_property_failures(schedules::gpipe({p, m, 1}), gp) == std::vector<std::string>{});
      testing::PropertyOptions ob;
      ob.activation_bound = [&](int r) { return double(p - r); };    // 1F1B stashes at most p - r
      CHECK(testing::schedule_property_failures(schedules::one_f_one_b({p, m, 1}), ob) == std::vector<std::string>{});
      for (int v : {2, 3, 4}) {
        if (m % p != 0) continue;
        CAPTURE(v);
        // Megatron's interleaved schedule holds at most warm-up + 1 chunk activations:
        // (pp - rank - 1) * 2 + (vpp - 1) * pp + 1, capped by m * vpp.
        testing::PropertyOptions il;
        il.activation_bound = [&](int r) { return double(std::min((p - r - 1) * 2 + (v - 1) * p + 1, m * v)); };
        CHECK(testing::schedule_property_failures(schedules::interleaved_1f1b({p, m, v}), il) == std::vector<std::string>{});
      }
    }
}

TEST_CASE("properties hold with communication and a split W cost too") {
  testing::PropertyOptions o;
  o.costs.comm = 0.5e-3;
  o.costs.w = 1e-3;
  for (int p : {2, 4})
    for (int m : {p, 2 * p, 3 * p}) {
      CHECK(testing::schedule_property_failures(schedules::one_f_one_b({p, m, 1}), o) == std::vector<std::string>{});
      CHECK(testing::schedule_property_failures(schedules::interleaved_1f1b({p, m, 2}), o) == std::vector<std::string>{});
    }
}

TEST_CASE("bubble fraction is non-increasing in m") {
  config::ScheduleCosts c{.f = 1e-3, .b = 2e-3, .w = std::nullopt, .comm = 0.25e-3, .fb = std::nullopt};
  for (const char* name : {"gpipe", "1f1b", "interleaved-1f1b"})
    for (int p : {2, 4, 8}) {
      const int v = 2;
      double prev = 1.0;
      for (int m = p; m <= 6 * p; m += p) {
        CAPTURE(name);
        CAPTURE(p);
        CAPTURE(m);
        const double b = testing::bubble_fraction_of(name, {p, m, v}, c);
        CHECK(b <= prev + 1e-12);
        prev = b;
      }
    }
}

TEST_CASE("property checker catches a broken schedule") {
  auto s = schedules::one_f_one_b({3, 4, 1});
  s.order[2].push_back(s.order[2].back());
  CHECK_FALSE(testing::schedule_property_failures(s).empty());
}

TEST_CASE("generate: dispatches every SPEC name; bad shapes throw with the values") {
  for (const auto& name : schedules::schedule_names()) {
    if (name == "gpipe" || name == "1f1b" || name == "interleaved-1f1b") {
      CHECK(schedules::generate(name, {4, 8, 2}).order.size() == 4);
    }
  }
  CHECK_THROWS_WITH_AS(schedules::generate("interleaved-1f1b", {4, 6, 2}), doctest::Contains("pp=4"), std::invalid_argument);
  CHECK_THROWS_AS(schedules::generate("nope", {4, 6, 2}), std::invalid_argument);
}

TEST_CASE("label: kind, micro-batch and chunk") {
  using schedules::Op;
  using schedules::OpKind;
  CHECK(schedules::label(Op{.kind = OpKind::F, .stage = 5, .microbatch = 3, .chunk = 1}) == "F mb3 chunk1");
  CHECK(schedules::label(Op{.kind = OpKind::W, .stage = 0, .microbatch = 2, .chunk = 0}) == "W mb2 chunk0");
  CHECK(schedules::label(Op{.kind = OpKind::FB, .stage = 0, .microbatch = 3, .chunk = 0, .microbatch_b = 1, .stage_b = 7,
                            .chunk_b = 1}) == "F mb3 chunk0 + B mb1 chunk1");
}

TEST_CASE("interleaved 1F1B follows Megatron's warm-up count (pp - rank - 1) * 2 + (vpp - 1) * pp") {
  const int p = 4, m = 8, v = 2;
  const auto s = schedules::interleaved_1f1b({p, m, v});
  for (int r = 0; r < p; ++r) {
    int warm = 0;
    for (const auto& op : s.order[static_cast<std::size_t>(r)]) {
      if (op.kind != schedules::OpKind::F) break;
      ++warm;
    }
    CHECK(warm == (p - r - 1) * 2 + (v - 1) * p + 1);   // + the steady state's first forward
    CHECK(s.order[static_cast<std::size_t>(r)].front().stage == r);          // chunk 0 holds stage r
    CHECK(s.order[static_cast<std::size_t>(r)][static_cast<std::size_t>(p)].stage == p + r);   // then chunk 1: p + r
  }
}
