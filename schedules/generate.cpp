// Dispatch from the SPEC schedule names to the generators.
#include <stdexcept>
#include <string>

#include "schedules/schedule.h"

namespace mfusim::schedules {

void check_shape(const std::string& name, const PipelineShape& shape) {
  const auto errors = shape_errors(name, shape);
  if (errors.empty()) return;
  std::string msg = name + ": bad pipeline shape (ranks=" + std::to_string(shape.ranks) +
                    ", microbatches=" + std::to_string(shape.microbatches) + ", chunks=" + std::to_string(shape.chunks) + ")";
  for (const auto& e : errors) msg += "; " + e;
  throw std::invalid_argument(msg);
}

PipelineSchedule generate(const std::string& name, const PipelineShape& shape) {
  return generate(name, shape, StageCosts{});
}

PipelineSchedule generate(const std::string& name, const PipelineShape& shape, const StageCosts& costs) {
  check_shape(name, shape);
  if (name == "gpipe") return gpipe(shape);
  if (name == "1f1b") return one_f_one_b(shape);
  if (name == "interleaved-1f1b") return interleaved_1f1b(shape);
  if (name == "zb-h1") return zb_h1(shape);
  if (name == "zb-h2") return zb_h2(shape);
  if (name == "zb-v") return zb_v(shape);
  if (name == "dualpipe") return dualpipe(shape);
  if (name == "dualpipev") return dualpipev(shape);
  if (name == "zb-auto") return zb_auto(shape, costs);
  if (name == "v-half") return v_half(shape);
  if (name == "v-min") return v_min(shape);
  throw std::invalid_argument("unknown schedule '" + name + "'");
}

}  // namespace mfusim::schedules
