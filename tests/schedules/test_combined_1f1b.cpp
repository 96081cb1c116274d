// Megatron's combined 1F1B (overlap_moe_expert_parallel_comm, megatron/core/pipeline_parallel/
// combined_1f1b.py and schedules.py): one more warm-up forward, then each steady-state forward and
// backward of different micro-batches as one FB op; pp = 1: the first forward alone, then pairs.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <utility>

#include "schedules/lab.h"
#include "schedules/schedule.h"

using namespace mfusim;
using schedules::OpKind;
using schedules::PipelineShape;

namespace {
config::ScheduleCosts costs(double f_ms, double b_ms, double fb_ms) {
  config::ScheduleCosts c;
  c.f = f_ms * 1e-3;
  c.b = b_ms * 1e-3;
  c.fb = fb_ms * 1e-3;
  return c;
}
}  // namespace

TEST_CASE("combined 1F1B (interleaved): every forward and backward once, the pairs independent, one more warm-up") {
  for (int p = 2; p <= 8; p *= 2)
    for (int v = 2; v <= 4; ++v)
      for (int m = p; m <= 3 * p; m += p) {
        CAPTURE(p);
        CAPTURE(v);
        CAPTURE(m);
        const auto plain = schedules::interleaved_1f1b(PipelineShape{p, m, v});
        const auto comb = schedules::interleaved_1f1b(PipelineShape{p, m, v, true});
        REQUIRE(comb.stages == plain.stages);
        for (int r = 0; r < p; ++r) {
          const auto& ops = comb.order[static_cast<std::size_t>(r)];
          std::set<std::pair<int, int>> fwd, bwd;
          int fb = 0, leading_f = 0;
          bool seen_other = false;
          for (const auto& op : ops) {
            if (op.kind == OpKind::F || op.kind == OpKind::FB) CHECK(fwd.insert({op.microbatch, op.stage}).second);
            if (op.kind == OpKind::B) CHECK(bwd.insert({op.microbatch, op.stage}).second);
            if (op.kind == OpKind::FB) {
              ++fb;
              CHECK(bwd.insert({op.microbatch_b, op.stage_b}).second);
              // Independent halves: the backward half is never the forward half's own micro-batch.
              CHECK(op.microbatch != op.microbatch_b);
              CHECK(op.stage_b % p == r);
            }
            if (op.kind == OpKind::F && !seen_other) ++leading_f;
            if (op.kind != OpKind::F) seen_other = true;
          }
          CHECK(fwd.size() == static_cast<std::size_t>(m * v));
          CHECK(bwd.size() == static_cast<std::size_t>(m * v));
          const int warmup = std::min((p - r - 1) * 2 + (v - 1) * p + 1, m * v);
          CHECK(leading_f == warmup);
          CHECK(fb == m * v - warmup);
        }
        // Played with fixed op times: the pairs at no gain (fb = f + b) cost at least the plain
        // schedule (one more forward before the steady state); a pair that overlaps (fb < f + b) wins.
        const auto none = schedules::run_lab(comb, costs(1, 2, 3));
        const auto gain = schedules::run_lab(comb, costs(1, 2, 2));
        const auto ref = schedules::run_lab(plain, costs(1, 2, 3));
        CHECK(none.timeline.makespan.ns >= ref.timeline.makespan.ns);
        CHECK(gain.timeline.makespan.ns < ref.timeline.makespan.ns);
      }
}

TEST_CASE("combined 1F1B without a pipeline: F0, then F(i+1) with B(i), then the last B") {
  const int m = 5;
  const auto s = schedules::generate("1f1b", PipelineShape{1, m, 1, true});
  const auto& ops = s.order[0];
  REQUIRE(ops.size() == static_cast<std::size_t>(m + 1));
  CHECK(ops.front().kind == OpKind::F);
  CHECK(ops.front().microbatch == 0);
  for (int i = 1; i < m; ++i) {
    CAPTURE(i);
    CHECK(ops[static_cast<std::size_t>(i)].kind == OpKind::FB);
    CHECK(ops[static_cast<std::size_t>(i)].microbatch == i);
    CHECK(ops[static_cast<std::size_t>(i)].microbatch_b == i - 1);
  }
  CHECK(ops.back().kind == OpKind::B);
  CHECK(ops.back().microbatch == m - 1);
  // With a pipeline, only the interleaved schedule has it (Megatron asserts a virtual pipeline).
  CHECK(schedules::combined_1f1b_applies("interleaved-1f1b", 8));
  CHECK(schedules::combined_1f1b_applies("1f1b", 1));
  CHECK_FALSE(schedules::combined_1f1b_applies("1f1b", 2));
  CHECK_FALSE(schedules::combined_1f1b_applies("dualpipe", 2));
  CHECK_THROWS_AS(schedules::generate("1f1b", PipelineShape{2, 4, 1, true}), std::invalid_argument);
  CHECK_THROWS_AS(schedules::generate("dualpipe", PipelineShape{2, 4, 1, true}), std::invalid_argument);
}
