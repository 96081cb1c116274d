// Interleaved 1F1B: Narayanan et al. 2021, arXiv:2104.04473, §2.2.2, Fig. 4
// (bottom), in the order of Megatron-LM's
// forward_backward_pipelining_with_interleaving (microbatch_group_size_per_vp_stage
// = pp): virtual micro-batches go in groups of pp per model chunk; rank r
// warms up with (pp - r - 1) * 2 + (vpp - 1) * pp forwards, then 1F1B, then
// cool-down. Chunk c on rank r holds virtual stage c * pp + r.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "schedules/schedule.h"

namespace mfusim::schedules {

PipelineSchedule interleaved_1f1b(const PipelineShape& shape) {
  check_shape("interleaved-1f1b", shape);
  const int p = shape.ranks, m = shape.microbatches, v = shape.chunks;
  if (m % p != 0 || v < 2)
    throw std::invalid_argument("interleaved-1f1b: needs m % p == 0 and v >= 2 (m=" + std::to_string(m) +
                                ", p=" + std::to_string(p) + ", v=" + std::to_string(v) + ")");
  PipelineSchedule s;
  s.name = "interleaved-1f1b";
  s.stages = p * v;
  s.chunks_per_rank = v;
  s.param_copies = v;
  s.order.resize(static_cast<std::size_t>(p));
  const int total = m * v;   // virtual micro-batches per rank
  // Megatron get_model_chunk_id / microbatch id for virtual micro-batch k.
  auto chunk_of = [&](int k, bool forward) {
    const int c = (k % (p * v)) / p;
    return forward ? c : v - 1 - c;
  };
  auto microbatch_of = [&](int k) { return (k / (p * v)) * p + k % p; };
  for (int r = 0; r < p; ++r) {
    auto& ops = s.order[static_cast<std::size_t>(r)];
    auto emit = [&](OpKind kind, int k) {
      const int c = chunk_of(k, kind == OpKind::F);
      ops.push_back(Op{.kind = kind, .stage = c * p + r, .microbatch = microbatch_of(k), .chunk = c});
    };
    // Combined 1F1B (Megatron's overlap_moe_expert_parallel_comm): one more warm-up forward "to ensure
    // the forward and backward computations are independent in all 1f1b steps" (schedules.py), then
    // each steady-state pair as one FB op (combined_1f1b_schedule_for_interleaved_pipelining).
    const int warmup = std::min((p - r - 1) * 2 + (v - 1) * p + (shape.combined_1f1b ? 1 : 0), total);
    const int steady = total - warmup;
    // Phase 1 (warm-up): forwards only.
    for (int k = 0; k < warmup; ++k) emit(OpKind::F, k);
    // Phase 2 (steady state): forward of virtual micro-batch warmup + i, backward of i.
    for (int i = 0; i < steady; ++i) {
      emit(OpKind::F, warmup + i);
      emit(OpKind::B, i);
      if (shape.combined_1f1b) {
        Op b = ops.back();
        ops.pop_back();
        Op& fb = ops.back();
        fb.kind = OpKind::FB;
        fb.microbatch_b = b.microbatch;
        fb.stage_b = b.stage;
        fb.chunk_b = b.chunk;
      }
    }
    // Phase 3 (cool-down): the remaining backwards.
    for (int k = steady; k < total; ++k) emit(OpKind::B, k);
  }
  return s;
}

}  // namespace mfusim::schedules
