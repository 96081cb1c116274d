// 1F1B (PipeDream-Flush): Narayanan et al. 2021, arXiv:2104.04473, §2.2.1,
// Fig. 4 (top): warm-up forwards, then one forward / one backward, then
// cool-down backwards. Rank r stashes at most p - r activations.
#include <algorithm>

#include "schedules/schedule.h"

namespace mfusim::schedules {

PipelineSchedule one_f_one_b(const PipelineShape& shape) {
  check_shape("1f1b", shape);
  const int p = shape.ranks, m = shape.microbatches;
  PipelineSchedule s;
  s.name = "1f1b";
  s.stages = p;
  s.order.resize(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) {
    auto& ops = s.order[static_cast<std::size_t>(r)];
    auto F = [&](int mb) { ops.push_back(Op{.kind = OpKind::F, .stage = r, .microbatch = mb}); };
    auto B = [&](int mb) { ops.push_back(Op{.kind = OpKind::B, .stage = r, .microbatch = mb}); };
    // Combined 1F1B (pp = 1 only, Megatron's combined_1f1b_schedule_for_no_pipelining): the first
    // forward alone, then each forward with the previous micro-batch's backward as one FB op.
    const bool combined = shape.combined_1f1b && p == 1;
    const int warmup = std::min(p - r - 1 + (combined ? 1 : 0), m);
    const int steady = m - warmup;
    int next_f = 0, next_b = 0;
    // Phase 1 (warm-up): p - r - 1 forwards.
    for (int i = 0; i < warmup; ++i) F(next_f++);
    // Phase 2 (steady state): one forward, one backward.
    for (int i = 0; i < steady; ++i) {
      if (combined) {
        ops.push_back(Op{.kind = OpKind::FB, .stage = r, .microbatch = next_f++, .microbatch_b = next_b++, .stage_b = r, .chunk_b = 0});
        continue;
      }
      F(next_f++);
      B(next_b++);
    }
    // Phase 3 (cool-down): the remaining backwards.
    while (next_b < m) B(next_b++);
  }
  return s;
}

}  // namespace mfusim::schedules
