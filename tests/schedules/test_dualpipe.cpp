// DualPipe and DualPipeV (deepseek-ai/DualPipe dualpipe.py, dualpipev.py) against the README table:
//   "DualPipe  | (PP/2-1)(F&B+B-3W) | 2x | PP+1 | PP"
//   "DualPipeV | (PP/2-1)(F&B+B-3W) | 2x | PP+1 | PP/2"
// F = forward chunk, B = *full* backward chunk, W = weight-gradient chunk, F&B = two overlapped chunks.
// PP counts pipeline stages: DualPipe runs PP stages on PP ranks; DualPipeV runs PP = 2*pp stages on pp ranks.
// Played on the tests' list scheduler (test_zb_listsim.h), which honours per-op split_w (DualPipe mixes
// full backwards with split B/W).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "schedules/schedule.h"
#include "tests/schedules/test_zb_listsim.h"

using namespace mfusim::schedules;
using mfusim::schedules::testing::IntCosts;

namespace {
// README bubble with integer costs; b_in = input-gradient part, so full B = b_in + w.
std::int64_t readme_bubble(int PP, const IntCosts& c) {
  const std::int64_t fb = c.fb >= 0 ? c.fb : c.f + c.b + c.w;
  return (PP / 2 - 1) * (fb + (c.b + c.w) - 3 * c.w);
}
}  // namespace

TEST_CASE("DualPipe: op set, structure, param_copies = 2") {
  for (int p : {2, 4, 6, 8})
    for (int m : {2 * p, 2 * p + 2, 4 * p}) {
      CAPTURE(p); CAPTURE(m);
      auto s = dualpipe({.ranks = p, .microbatches = m});
      CHECK(s.stages == p);
      CHECK(s.param_copies == 2);
      CHECK(s.chunks_per_rank == 2);
      CHECK(testing::check_op_set(s, m).empty());
      // second-half micro-batches run stage s on rank p-1-s
      for (int r = 0; r < p; ++r)
        for (const Op& op : s.order[static_cast<std::size_t>(r)]) {
          if (op.kind == OpKind::FB) continue;
          CHECK(op.stage == (op.microbatch < m / 2 ? r : p - 1 - r));
          CHECK(op.chunk == (op.microbatch < m / 2 ? 0 : 1));
        }
    }
}

TEST_CASE("DualPipe/DualPipeV bubble = README (PP/2-1)(F&B+B-3W) exactly at F = B_in = W with F&B = F+B (no overlap gain)") {
  // Balanced costs u: F = u, B (full) = 2u, W = u, F&B = 3u -> (PP/2-1)*2u. Holds for every m >= 2*ranks,
  // both as max span and as makespan.
  for (std::int64_t u : {1, 2, 5}) {
    const IntCosts c{.f = u, .b = u, .w = u, .fb = 3 * u};
    for (int p : {2, 4, 6, 8})
      for (int m : {2 * p, 2 * p + 2, 3 * p, 4 * p}) {
        if (m % 2) continue;
        CAPTURE(u); CAPTURE(p); CAPTURE(m);
        auto d = testing::play(dualpipe({.ranks = p, .microbatches = m}), c);
        CHECK(d.max_span() - d.max_work() == readme_bubble(p, c));
        CHECK(d.makespan - d.max_work() == readme_bubble(p, c));
      }
    for (int p : {1, 2, 3, 4, 6})
      for (int m : {2 * p, 2 * p + 1, 3 * p, 4 * p}) {
        CAPTURE(u); CAPTURE(p); CAPTURE(m);
        auto v = testing::play(dualpipev({.ranks = p, .microbatches = m}), c);
        CHECK(v.max_span() - v.max_work() == readme_bubble(2 * p, c));   // README's PP = 2 * ranks
        CHECK(v.makespan - v.max_work() == readme_bubble(2 * p, c));
      }
  }
}

TEST_CASE("DualPipe/DualPipeV bubble away from balance: the README form is approximate, in both directions") {
  // Not a source oracle: our measurements, pinned so changes are deliberate. Away from F = B_in = W the
  // README expression is neither exact nor a bound (DualPipe p=8 below it, DualPipeV p=2 above it).
  auto d = testing::play(dualpipe({.ranks = 8, .microbatches = 32}), {.f = 2, .b = 2, .w = 1, .fb = 4});
  CHECK(d.max_span() - d.max_work() == 10);
  CHECK(readme_bubble(8, {.f = 2, .b = 2, .w = 1, .fb = 4}) == 12);
  auto d2 = testing::play(dualpipe({.ranks = 8, .microbatches = 32}), {.f = 3, .b = 4, .w = 2, .fb = 7});
  CHECK(d2.max_span() - d2.max_work() == 14);
  CHECK(readme_bubble(8, {.f = 3, .b = 4, .w = 2, .fb = 7}) == 21);
  auto v = testing::play(dualpipev({.ranks = 2, .microbatches = 8}), {.f = 2, .b = 1, .w = 1, .fb = 4});
  CHECK(v.max_span() - v.max_work() == 4);
  CHECK(readme_bubble(4, {.f = 2, .b = 1, .w = 1, .fb = 4}) == 3);
}

TEST_CASE("DualPipe/DualPipeV memory: README 'Parameter 2x, Activation PP+1'") {
  for (int p : {2, 4, 6, 8}) {
    CAPTURE(p);
    auto d = dualpipe({.ranks = p, .microbatches = 4 * p});
    auto pk = testing::peak_chunk_activations(d);
    CHECK(*std::max_element(pk.begin(), pk.end()) == p + 1);      // PP + 1 stage activations, PP = p
    CHECK(d.param_copies == 2);                                   // each rank holds stages r and p-1-r
    auto v = dualpipev({.ranks = p, .microbatches = 4 * p});
    auto pv = testing::peak_chunk_activations(v);
    CHECK(*std::max_element(pv.begin(), pv.end()) == 2 * p + 1);  // PP + 1 with PP = 2p stages
    // README's "2x parameters" for DualPipeV is per PP stage: a rank holds 2 of the 2p stages (two
    // distinct chunks, no duplicate copy), i.e. the same layers per rank as 1F1B on p ranks.
    CHECK(v.param_copies == 1);
    CHECK(v.chunks_per_rank == 2);
    CHECK(v.stages == 2 * p);
    CHECK(testing::check_op_set(v, 4 * p).empty());
  }
}

TEST_CASE("DualPipe on the engine lab" * doctest::skip(true)) {
  // BLOCKED on schedules/lab.cpp: its lowering reads PipelineSchedule::split_w for every B, but DualPipe
  // mixes full backwards (Op::split_w = false: cost b + w, no W op) with split ones. Enable when the
  // lowering honours Op::split_w per op; the oracle is the balanced-cost case above.
}
