#pragma once
// Chrome trace event JSON (loadable in Perfetto and chrome://tracing) from a
// played TaskGraph: one process per rank (pid = rank, "rank N"), one thread per
// stream (tid = stream id, named after the stream), one complete event "X" per
// task named by TaskSpec::name, category to_string(Category), ts/dur in µs.
// Output is a deterministic function of its inputs.
#include <ostream>
#include <string>

#include "sim/engine.h"

namespace mfusim::report {

void write_chrome_trace(std::ostream&, const sim::TaskGraph&, const sim::Timeline&);
std::string chrome_trace(const sim::TaskGraph&, const sim::Timeline&);

}  // namespace mfusim::report
