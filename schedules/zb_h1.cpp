// ZB-H1: Qi, Wan, Huang, Lin, "Zero Bubble Pipeline Parallelism", ICLR 2024 (arXiv:2401.10241), §3.1, Fig. 3 (top).
// 1F1B with the backward split into B (input gradient) and W (weight gradient); rank r keeps 1F1B's
// warm-up (p-r-1 forwards, so at most p-r activations waiting for B) and defers its W passes by r
// micro-batches, which fill the cool-down gaps. Table 2: bubble (p-1)(T_F+T_B-T_W), peak p*M_B.
#include <stdexcept>
#include <string>

#include "schedules/schedule.h"

namespace mfusim::schedules {

PipelineSchedule zb_h1(const PipelineShape& shape) {
  const int p = shape.ranks, m = shape.microbatches;
  if (p < 1 || m < p)
    throw std::invalid_argument("zb_h1: needs pp >= 1 and micro-batches >= pp (pp=" + std::to_string(p) +
                                ", m=" + std::to_string(m) + ")");
  PipelineSchedule s;
  s.name = "zb-h1";
  s.stages = p;
  s.split_w = true;
  s.order.resize(p);
  for (int r = 0; r < p; ++r) {
    auto& ops = s.order[r];
    int next_f = 0, next_b = 0, next_w = 0;
    auto F = [&] { ops.push_back({.kind = OpKind::F, .stage = r, .microbatch = next_f++, .split_w = true}); };
    auto B = [&] { ops.push_back({.kind = OpKind::B, .stage = r, .microbatch = next_b++, .split_w = true}); };
    auto W = [&] { ops.push_back({.kind = OpKind::W, .stage = r, .microbatch = next_w++, .split_w = true}); };
    const int deferred = r;  // W passes held back on rank r

    // Step 1: nF (1F1B warm-up)
    const int step_1 = p - r - 1;
    for (int i = 0; i < step_1; ++i) F();
    // Step 2: nFB (steady state while the first W passes are deferred)
    const int step_2 = deferred;
    for (int i = 0; i < step_2; ++i) { F(); B(); }
    // Step 3: nFBW (steady state)
    const int step_3 = m - step_1 - step_2;
    for (int i = 0; i < step_3; ++i) { F(); B(); W(); }
    // Step 4: nBW (cool-down: each W fills the wait for the next B)
    const int step_4 = step_1;
    for (int i = 0; i < step_4; ++i) { B(); W(); }
    // Step 5: nW (the deferred W passes)
    const int step_5 = deferred;
    for (int i = 0; i < step_5; ++i) W();

    if (next_f != m || next_b != m || next_w != m)
      throw std::logic_error("zb_h1: rank " + std::to_string(r) + " scheduled F/B/W " + std::to_string(next_f) + "/" +
                             std::to_string(next_b) + "/" + std::to_string(next_w) + " of m=" + std::to_string(m));
  }
  return s;
}

}  // namespace mfusim::schedules
