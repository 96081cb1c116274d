// TEMPORARY (engine branch): placeholders so generate.cpp links before the
// Zero-Bubble / DualPipe generators land. The engineer who writes
// schedules/zb_*.cpp and dualpipe*.cpp deletes this file when merging theirs.
#include <stdexcept>

#include "schedules/schedule.h"

namespace mfusim::schedules {

PipelineSchedule zb_h1(const PipelineShape&) { throw std::logic_error("zb-h1: not yet implemented"); }
PipelineSchedule zb_h2(const PipelineShape&) { throw std::logic_error("zb-h2: not yet implemented"); }
PipelineSchedule zb_v(const PipelineShape&) { throw std::logic_error("zb-v: not yet implemented"); }
PipelineSchedule dualpipe(const PipelineShape&) { throw std::logic_error("dualpipe: not yet implemented"); }
PipelineSchedule dualpipev(const PipelineShape&) { throw std::logic_error("dualpipev: not yet implemented"); }

}  // namespace mfusim::schedules
