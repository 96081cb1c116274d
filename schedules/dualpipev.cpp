// DualPipeV: deepseek-ai/DualPipe dualpipev.py (DualPipeV.step, Steps 1-8), the "cut-in-half" V-shape
// of DualPipe (Sea AI Lab, https://hackmd.io/@ufotalent/r1lVXsa9Jg).
// pp ranks, 2*pp virtual stages: rank r holds chunk 0 = stage r and chunk 1 = stage 2*pp-1-r, so every
// micro-batch enters at rank 0, goes down the ranks in chunk 0 and comes back up in chunk 1.
// B ops without zero bubble are full backwards (split_w = false); with zero bubble they are input-gradient
// only and their W is queued FIFO (WeightGradStore). FB = one overlapped F and full B.
#include <deque>
#include <stdexcept>
#include <string>
#include <utility>

#include "schedules/schedule.h"

namespace mfusim::schedules {

PipelineSchedule dualpipev(const PipelineShape& shape) {
  const int p = shape.ranks, m = shape.microbatches;
  if (p < 1 || m < 2 * p)
    throw std::invalid_argument("dualpipev: needs micro-batches >= 2*pp (pp=" + std::to_string(p) +
                                ", m=" + std::to_string(m) + ")");
  PipelineSchedule s;
  s.name = "dualpipev";
  s.stages = 2 * p;
  s.chunks_per_rank = 2;
  s.split_w = true;
  s.order.resize(p);
  for (int r = 0; r < p; ++r) {
    auto& ops = s.order[r];
    const bool last_rank = r == p - 1;
    const int stage_of[2] = {r, 2 * p - 1 - r};
    int next_f[2] = {0, 0}, next_b[2] = {0, 0};
    std::deque<std::pair<int, int>> pending_w;  // (chunk, micro-batch), oldest first
    auto fwd = [&](int c) { return Op{.kind = OpKind::F, .stage = stage_of[c], .microbatch = next_f[c]++, .chunk = c}; };
    auto bwd = [&](int c, bool zb) {
      const int mb = next_b[c]++;
      if (zb) pending_w.emplace_back(c, mb);
      return Op{.kind = OpKind::B, .stage = stage_of[c], .microbatch = mb, .chunk = c, .split_w = zb};
    };
    auto F = [&](int c) { ops.push_back(fwd(c)); };
    auto B = [&](int c, bool zb = false) { ops.push_back(bwd(c, zb)); };
    auto FB = [&](int c0, int c1) {
      Op f = fwd(c0);
      const Op b = bwd(c1, false);
      f.kind = OpKind::FB;
      f.microbatch_b = b.microbatch;
      f.stage_b = b.stage;
      f.chunk_b = b.chunk;
      ops.push_back(f);
    };
    auto W = [&] {
      if (pending_w.empty()) throw std::logic_error("dualpipev: rank " + std::to_string(r) + " pops an empty W queue");
      const auto [c, mb] = pending_w.front();
      pending_w.pop_front();
      ops.push_back({.kind = OpKind::W, .stage = stage_of[c], .microbatch = mb, .chunk = c, .split_w = true});
    };

    // Step 1: nF0
    const int step_1 = (p - r - 1) * 2;
    for (int i = 0; i < step_1; ++i) F(0);
    // Step 2: nF0F1
    const int step_2 = r + 1;
    for (int i = 0; i < step_2; ++i) { F(0); F(1); }
    // Step 3: nB1W1F1 (zero bubble)
    const int step_3 = p - r - 1;
    for (int i = 0; i < step_3; ++i) { B(1, true); W(); F(1); }
    // Step 4 (main): nF0B1F1B0; on the last rank the first F0 and B1 are not overlapped
    const int step_4 = m - 2 * p + r + 1;
    for (int i = 0; i < step_4; ++i) {
      if (i == 0 && last_rank) { F(0); B(1); } else { FB(0, 1); }
      FB(1, 0);
    }
    // Step 5: nB1F1B0
    const int step_5 = p - r - 1;
    for (int i = 0; i < step_5; ++i) { B(1); FB(1, 0); }
    // Step 6: nB1B0 (the second half of these use zero bubble)
    const int step_6 = r + 1;
    bool zb = false;
    for (int i = 0; i < step_6; ++i) {
      if (i == step_6 / 2 && r % 2 == 1) zb = true;
      B(1, zb);
      if (i == step_6 / 2 && r % 2 == 0) zb = true;
      B(0, zb);
    }
    // Step 7: nWB0 (zero bubble)
    const int step_7 = p - r - 1;
    for (int i = 0; i < step_7; ++i) { W(); B(0, true); }
    // Step 8: nW
    const int step_8 = r + 1;
    for (int i = 0; i < step_8; ++i) W();

    if (!pending_w.empty() || next_f[0] != m || next_f[1] != m || next_b[0] != m || next_b[1] != m)
      throw std::logic_error("dualpipev: rank " + std::to_string(r) + " scheduled F " + std::to_string(next_f[0]) +
                             "+" + std::to_string(next_f[1]) + ", B " + std::to_string(next_b[0]) + "+" +
                             std::to_string(next_b[1]) + ", " + std::to_string(pending_w.size()) +
                             " W left, of m=" + std::to_string(m) + " per chunk");
  }
  return s;
}

}  // namespace mfusim::schedules
