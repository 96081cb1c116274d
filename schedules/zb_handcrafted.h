#pragma once
// The phase structure shared by the two handcrafted Zero Bubble schedules (Qi et
// al. 2024 §3.1): on rank r, `k*(p-r-1)` warm-up forwards, then F+B pairs while
// `k*r` W passes are held back, then F+B+W, a B+W cool-down, and the held-back W
// passes last. ZB-H1 is k = 1 (1F1B's warm-up and memory), ZB-H2 is k = 2.
#include <stdexcept>
#include <string>

#include "schedules/schedule.h"

namespace mfusim::schedules::detail {

inline PipelineSchedule zb_handcrafted(const PipelineShape& shape, const char* name, int k) {
  const int p = shape.ranks, m = shape.microbatches;
  PipelineSchedule s;
  s.name = name;
  s.stages = p;
  s.split_w = true;
  s.order.resize(p);
  for (int r = 0; r < p; ++r) {
    auto& ops = s.order[r];
    int next_f = 0, next_b = 0, next_w = 0;
    auto F = [&] { ops.push_back({.kind = OpKind::F, .stage = r, .microbatch = next_f++, .split_w = true}); };
    auto B = [&] { ops.push_back({.kind = OpKind::B, .stage = r, .microbatch = next_b++, .split_w = true}); };
    auto W = [&] { ops.push_back({.kind = OpKind::W, .stage = r, .microbatch = next_w++, .split_w = true}); };
    const int deferred = k * r;  // W passes held back on rank r

    // Step 1: nF (warm-up: k(p-r-1) forwards)
    const int step_1 = k * (p - r - 1);
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
    // Step 5: nW (the deferred W passes fill the tail)
    const int step_5 = deferred;
    for (int i = 0; i < step_5; ++i) W();

    if (next_f != m || next_b != m || next_w != m)
      throw std::logic_error(std::string(name) + ": rank " + std::to_string(r) + " scheduled F/B/W " +
                             std::to_string(next_f) + "/" + std::to_string(next_b) + "/" + std::to_string(next_w) +
                             " of m=" + std::to_string(m));
  }
  return s;
}

}  // namespace mfusim::schedules::detail
