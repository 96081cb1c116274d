// ZB-V: Qi, Wan, Huang, Lin, "Pipeline Parallelism with Controllable Memory" (arXiv:2405.15362) and
// "Zero Bubble Pipeline Parallelism" (arXiv:2401.10241v2) §6: two chunks per rank in a V shape,
// chunk 0 = stage r, chunk 1 = stage 2p-1-r, so a micro-batch goes down the ranks and back up.
// Written here in DualPipeV's phase style (the same V placement); W passes are deferred FIFO.
// With T_F = T_B = T_W every rank runs without a gap from its first op to its last (zero bubble) and holds
// at most 2p chunk activations (= p*M_B, M_B being one rank's layers); checked in tests/schedules/test_zb_v.cpp.
#include <deque>
#include <stdexcept>
#include <string>
#include <utility>

#include "schedules/schedule.h"

namespace mfusim::schedules {

PipelineSchedule zb_v(const PipelineShape& shape) {
  const int p = shape.ranks, m = shape.microbatches;
  if (p < 1 || m < 2 * p - 1)
    throw std::invalid_argument("zb_v: needs micro-batches >= 2*pp-1 to fill the V warm-up (pp=" +
                                std::to_string(p) + ", m=" + std::to_string(m) + ")");
  PipelineSchedule s;
  s.name = "zb-v";
  s.stages = 2 * p;
  s.chunks_per_rank = 2;
  s.split_w = true;
  s.order.resize(p);
  for (int r = 0; r < p; ++r) {
    auto& ops = s.order[r];
    const int stage_of[2] = {r, 2 * p - 1 - r};
    int next_f[2] = {0, 0}, next_b[2] = {0, 0};
    std::deque<std::pair<int, int>> pending_w;  // (chunk, micro-batch), oldest first
    auto F = [&](int c) {
      ops.push_back({.kind = OpKind::F, .stage = stage_of[c], .microbatch = next_f[c]++, .chunk = c, .split_w = true});
    };
    auto B = [&](int c) {
      pending_w.emplace_back(c, next_b[c]);
      ops.push_back({.kind = OpKind::B, .stage = stage_of[c], .microbatch = next_b[c]++, .chunk = c, .split_w = true});
    };
    auto W = [&] {
      if (pending_w.empty()) throw std::logic_error("zb_v: rank " + std::to_string(r) + " has no pending W");
      const auto [c, mb] = pending_w.front();
      pending_w.pop_front();
      ops.push_back({.kind = OpKind::W, .stage = stage_of[c], .microbatch = mb, .chunk = c, .split_w = true});
    };

    // Step 1: nF0
    const int step_1 = 2 * (p - r - 1);
    for (int i = 0; i < step_1; ++i) F(0);
    // Step 2: nF0F1
    const int step_2 = r + 1;
    for (int i = 0; i < step_2; ++i) { F(0); F(1); }
    // Step 3: nB1WF1
    const int step_3 = p - r - 1;
    for (int i = 0; i < step_3; ++i) { B(1); W(); F(1); }
    // Step 4 (main): nB1WB0WF0F1
    const int step_4 = m - 2 * p + r + 1;
    for (int i = 0; i < step_4; ++i) { B(1); W(); B(0); W(); F(0); F(1); }
    // Step 5: nB1WB0WF1
    const int step_5 = p - r - 1;
    for (int i = 0; i < step_5; ++i) { B(1); W(); B(0); W(); F(1); }
    // Step 6: nB1B0
    const int step_6 = r + 1;
    for (int i = 0; i < step_6; ++i) { B(1); B(0); }
    // Step 7: nWB0
    const int step_7 = p - r - 1;
    for (int i = 0; i < step_7; ++i) { W(); B(0); }
    // Step 8: nW
    while (!pending_w.empty()) W();

    for (int c = 0; c < 2; ++c)
      if (next_f[c] != m || next_b[c] != m)
        throw std::logic_error("zb_v: rank " + std::to_string(r) + " chunk " + std::to_string(c) + " scheduled F/B " +
                               std::to_string(next_f[c]) + "/" + std::to_string(next_b[c]) + " of m=" +
                               std::to_string(m));
  }
  return s;
}

}  // namespace mfusim::schedules
