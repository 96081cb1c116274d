#pragma once
// Chrome trace event JSON (loadable in Perfetto and chrome://tracing) from a
// played TaskGraph: one process per rank (pid = rank, "rank N"), one thread per
// stream (tid = stream id, named after the stream), one complete event "X" per
// task of nonzero duration (tasks of zero duration, joins and empty pieces,
// are left out), named by TaskSpec::name (per-layer pieces after their op,
// "F mb3 chunk1"), category "cat" = to_string(Category), ts/dur in µs with ns
// precision and no trailing zeros. Its args: "mb" (micro-batch), "chunk"
// (only where some op runs on a second chunk), and from the lowering's
// per-task info when given: "layer" (the transformer layer of a per-layer
// piece or its collective), "kernel" (the piece's longest-running kernel),
// "flops" (hardware FLOPs per GPU) and "bytes" (minimum HBM bytes its kernels
// read and write per GPU), both to 4 significant digits, and "launch_us" (the
// kernel-launch part of the duration).
// Output is a deterministic function of its inputs.
#include <ostream>
#include <string>
#include <vector>

#include "step/lower.h"
#include "sim/engine.h"

namespace mfusim::report {

void write_chrome_trace(std::ostream&, const sim::TaskGraph&, const sim::Timeline&,
                        const std::vector<step::TaskInfo>* info = nullptr);
std::string chrome_trace(const sim::TaskGraph&, const sim::Timeline&, const std::vector<step::TaskInfo>* info = nullptr);

}  // namespace mfusim::report
