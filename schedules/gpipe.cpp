// GPipe: Huang et al. 2019, "GPipe: Efficient Training of Giant Neural
// Networks using Pipeline Parallelism", §2.3 / Fig. 2(c): every rank runs the
// forward of all micro-batches, then all backwards (micro-batch order as in
// torch.distributed.pipelining ScheduleGPipe). Stashes m activations per rank.
#include "schedules/schedule.h"

namespace mfusim::schedules {

PipelineSchedule gpipe(const PipelineShape& shape) {
  check_shape("gpipe", shape);
  const int p = shape.ranks, m = shape.microbatches;
  PipelineSchedule s;
  s.name = "gpipe";
  s.stages = p;
  s.order.resize(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) {
    auto& ops = s.order[static_cast<std::size_t>(r)];
    // Phase 1: all forwards.
    for (int mb = 0; mb < m; ++mb) ops.push_back(Op{.kind = OpKind::F, .stage = r, .microbatch = mb});
    // Phase 2: all backwards.
    for (int mb = 0; mb < m; ++mb) ops.push_back(Op{.kind = OpKind::B, .stage = r, .microbatch = mb});
  }
  return s;
}

}  // namespace mfusim::schedules
