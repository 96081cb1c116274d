// ZB-H2: Qi, Wan, Huang, Lin, "Zero Bubble Pipeline Parallelism", ICLR 2024 (arXiv:2401.10241), §3.1, Fig. 3 (bottom).
// Warm-up with more forwards than 1F1B (rank r holds up to 2(p-r)-1 activations waiting for B) and
// defer 2r W passes to the tail, turning the schedule into a parallelogram.
// Table 2: bubble (p-1)(T_F+T_B-2T_W) (zero when T_F+T_B <= 2T_W), peak (2p-1)*M_B.
#include <stdexcept>
#include <string>

#include "schedules/schedule.h"

namespace mfusim::schedules {

PipelineSchedule zb_h2(const PipelineShape& shape) {
  const int p = shape.ranks, m = shape.microbatches;
  if (p < 1 || m < 2 * p - 1)
    throw std::invalid_argument("zb_h2: needs micro-batches >= 2*pp-1 to fill the warm-up (pp=" +
                                std::to_string(p) + ", m=" + std::to_string(m) + ")");
  PipelineSchedule s;
  s.name = "zb-h2";
  s.stages = p;
  s.split_w = true;
  s.order.resize(p);
  for (int r = 0; r < p; ++r) {
    auto& ops = s.order[r];
    int next_f = 0, next_b = 0, next_w = 0;
    auto F = [&] { ops.push_back({.kind = OpKind::F, .stage = r, .microbatch = next_f++, .split_w = true}); };
    auto B = [&] { ops.push_back({.kind = OpKind::B, .stage = r, .microbatch = next_b++, .split_w = true}); };
    auto W = [&] { ops.push_back({.kind = OpKind::W, .stage = r, .microbatch = next_w++, .split_w = true}); };
    const int deferred = 2 * r;  // W passes held back on rank r

    // Step 1: nF (extended warm-up: 2(p-r-1) forwards)
    const int step_1 = 2 * (p - r - 1);
    for (int i = 0; i < step_1; ++i) F();
    // Step 2: nFB (steady state while W passes are deferred)
    const int step_2 = deferred;
    for (int i = 0; i < step_2; ++i) { F(); B(); }
    // Step 3: nFBW (steady state)
    const int step_3 = m - step_1 - step_2;
    for (int i = 0; i < step_3; ++i) { F(); B(); W(); }
    // Step 4: nBW (cool-down)
    const int step_4 = step_1;
    for (int i = 0; i < step_4; ++i) { B(); W(); }
    // Step 5: nW (the deferred W passes fill the tail)
    const int step_5 = deferred;
    for (int i = 0; i < step_5; ++i) W();

    if (next_f != m || next_b != m || next_w != m)
      throw std::logic_error("zb_h2: rank " + std::to_string(r) + " scheduled F/B/W " + std::to_string(next_f) + "/" +
                             std::to_string(next_b) + "/" + std::to_string(next_w) + " of m=" + std::to_string(m));
  }
  return s;
}

}  // namespace mfusim::schedules
