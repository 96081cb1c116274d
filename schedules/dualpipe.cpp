// DualPipe: DeepSeek-AI, DeepSeek-V3 Technical Report (arXiv:2412.19437) §3.2.1; phases follow
// deepseek-ai/DualPipe dualpipe.py (DualPipe.step, Steps 1-8).
// Bidirectional: the first m/2 micro-batches enter at rank 0 and run stage s on rank s (chunk 0);
// the second m/2 enter at rank p-1 and run stage s on rank p-1-s (chunk 1). So rank r holds two
// parameter copies: stage r (chunk 0) and stage p-1-r (chunk 1). Virtual stage = layer slice in forward order.
// "phase" below is dualpipe.py's: on the first half of the ranks phase 0 is the forward direction
// (chunk 0), on the second half phase 0 is the reverse direction (chunk 1).
// B ops without zero bubble are full backwards (split_w = false); with zero bubble (enable_zb) they are
// input-gradient only and their W is queued FIFO (WeightGradStore). FB = one overlapped F and full B.
#include <algorithm>
#include <deque>
#include <stdexcept>
#include <string>
#include <utility>

#include "schedules/schedule.h"

namespace mfusim::schedules {

PipelineSchedule dualpipe(const PipelineShape& shape) {
  const int p = shape.ranks, m = shape.microbatches;
  if (p < 2 || p % 2 != 0 || m % 2 != 0 || m < 2 * p)
    throw std::invalid_argument("dualpipe: needs an even pp >= 2 and an even number of micro-batches >= 2*pp (pp=" +
                                std::to_string(p) + ", m=" + std::to_string(m) + ")");
  const int num_half_ranks = p / 2, half_num_chunks = m / 2;
  PipelineSchedule s;
  s.name = "dualpipe";
  s.stages = p;
  s.chunks_per_rank = 2;
  s.param_copies = 2;
  s.split_w = true;
  s.order.resize(p);
  for (int r = 0; r < p; ++r) {
    auto& ops = s.order[r];
    const int half_rank = std::min(r, p - 1 - r);
    const bool second_half = r >= num_half_ranks;
    const bool middle = r == num_half_ranks - 1 || r == num_half_ranks;
    const int stage_of[2] = {r, p - 1 - r};          // by chunk (= direction)
    const int first_mb[2] = {0, half_num_chunks};    // micro-batch ids by direction
    int next_f[2] = {0, 0}, next_b[2] = {0, 0};
    std::deque<std::pair<int, int>> pending_w;       // (chunk, micro-batch), oldest first
    auto chunk_of = [&](int phase) { return phase ^ static_cast<int>(second_half); };
    auto fwd = [&](int phase) {
      const int c = chunk_of(phase);
      return Op{.kind = OpKind::F, .stage = stage_of[c], .microbatch = first_mb[c] + next_f[c]++, .chunk = c};
    };
    auto bwd = [&](int phase, bool zb) {
      const int c = chunk_of(phase);
      const int mb = first_mb[c] + next_b[c]++;
      if (zb) pending_w.emplace_back(c, mb);
      return Op{.kind = OpKind::B, .stage = stage_of[c], .microbatch = mb, .chunk = c, .split_w = zb};
    };
    auto F = [&](int phase) { ops.push_back(fwd(phase)); };
    auto B = [&](int phase, bool zb = false) { ops.push_back(bwd(phase, zb)); };
    auto FB = [&](int phase0, int phase1) {
      Op f = fwd(phase0);
      const Op b = bwd(phase1, false);
      f.kind = OpKind::FB;
      f.microbatch_b = b.microbatch;
      f.stage_b = b.stage;
      f.chunk_b = b.chunk;
      ops.push_back(f);
    };
    auto W = [&] {
      if (pending_w.empty()) throw std::logic_error("dualpipe: rank " + std::to_string(r) + " pops an empty W queue");
      const auto [c, mb] = pending_w.front();
      pending_w.pop_front();
      ops.push_back({.kind = OpKind::W, .stage = stage_of[c], .microbatch = mb, .chunk = c, .split_w = true});
    };

    // Step 1: nF0
    const int step_1 = (num_half_ranks - half_rank - 1) * 2;
    for (int i = 0; i < step_1; ++i) F(0);
    // Step 2: nF0F1
    const int step_2 = half_rank + 1;
    for (int i = 0; i < step_2; ++i) { F(0); F(1); }
    // Step 3: nB1W1F1 (zero bubble)
    const int step_3 = num_half_ranks - half_rank - 1;
    for (int i = 0; i < step_3; ++i) { B(1, true); W(); F(1); }
    // Step 4 (main): nF0B1F1B0; on the middle ranks the first F0 and B1 are not overlapped
    const int step_4 = half_num_chunks - p + half_rank + 1;
    for (int i = 0; i < step_4; ++i) {
      if (i == 0 && middle) { F(0); B(1); } else { FB(0, 1); }
      FB(1, 0);
    }
    // Step 5: nB1F1B0
    const int step_5 = num_half_ranks - half_rank - 1;
    for (int i = 0; i < step_5; ++i) { B(1); FB(1, 0); }
    // Step 6: nB1B0 (the second half of these use zero bubble)
    const int step_6 = half_rank + 1;
    bool zb = false;
    for (int i = 0; i < step_6; ++i) {
      if (i == step_6 / 2 && half_rank % 2 == 1) zb = true;
      B(1, zb);
      if (i == step_6 / 2 && half_rank % 2 == 0) zb = true;
      B(0, zb);
    }
    // Step 7: nWB0 (zero bubble)
    const int step_7 = num_half_ranks - half_rank - 1;
    for (int i = 0; i < step_7; ++i) { W(); B(0, true); }
    // Step 8: nW
    const int step_8 = half_rank + 1;
    for (int i = 0; i < step_8; ++i) W();

    if (!pending_w.empty() || next_f[0] != half_num_chunks || next_f[1] != half_num_chunks ||
        next_b[0] != half_num_chunks || next_b[1] != half_num_chunks)
      throw std::logic_error("dualpipe: rank " + std::to_string(r) + " scheduled F " + std::to_string(next_f[0]) + "+" +
                             std::to_string(next_f[1]) + ", B " + std::to_string(next_b[0]) + "+" +
                             std::to_string(next_b[1]) + ", " + std::to_string(pending_w.size()) +
                             " W left, of m/2=" + std::to_string(half_num_chunks) + " per direction");
  }
  return s;
}

}  // namespace mfusim::schedules
