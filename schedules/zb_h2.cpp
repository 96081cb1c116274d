// ZB-H2: Qi, Wan, Huang, Lin, "Zero Bubble Pipeline Parallelism", ICLR 2024 (arXiv:2401.10241), §3.1, Fig. 3 (bottom).
// Warm-up with more forwards than 1F1B (rank r holds up to 2(p-r)-1 activations waiting for B) and
// defer 2r W passes to the tail, turning the schedule into a parallelogram.
// Table 2: bubble (p-1)(T_F+T_B-2T_W) (zero when T_F+T_B <= 2T_W), peak (2p-1)*M_B.
#include <stdexcept>
#include <string>

#include "schedules/schedule.h"
#include "schedules/zb_handcrafted.h"

namespace mfusim::schedules {

PipelineSchedule zb_h2(const PipelineShape& shape) {
  const int p = shape.ranks, m = shape.microbatches;
  if (p < 1 || m < 2 * p - 1)
    throw std::invalid_argument("zb_h2: needs micro-batches >= 2*pp-1 to fill the warm-up (pp=" +
                                std::to_string(p) + ", m=" + std::to_string(m) + ")");
  return detail::zb_handcrafted(shape, "zb-h2", 2);
}

}  // namespace mfusim::schedules
