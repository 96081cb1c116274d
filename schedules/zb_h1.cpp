// ZB-H1: Qi, Wan, Huang, Lin, "Zero Bubble Pipeline Parallelism", ICLR 2024 (arXiv:2401.10241), §3.1, Fig. 3 (top).
// 1F1B with the backward split into B (input gradient) and W (weight gradient); rank r keeps 1F1B's
// warm-up (p-r-1 forwards, so at most p-r activations waiting for B) and defers its W passes by r
// micro-batches, which fill the cool-down gaps. Table 2: bubble (p-1)(T_F+T_B-T_W), peak p*M_B.
#include <stdexcept>
#include <string>

#include "schedules/schedule.h"
#include "schedules/zb_handcrafted.h"

namespace mfusim::schedules {

PipelineSchedule zb_h1(const PipelineShape& shape) {
  const int p = shape.ranks, m = shape.microbatches;
  if (p < 1 || m < p)
    throw std::invalid_argument("zb_h1: needs pp >= 1 and micro-batches >= pp (pp=" + std::to_string(p) +
                                ", m=" + std::to_string(m) + ")");
  return detail::zb_handcrafted(shape, "zb-h1", 1);
}

}  // namespace mfusim::schedules
