#pragma once
// The pipeline timeline as an SVG picture, drawn like the figures of the Zero Bubble (Qi et al. 2024) and
// DualPipe (DeepSeek-V3) papers: one row per pipeline rank, each compute op a box coloured by kind
// (F blue, B green, W orange, an overlapped F&B split blue/green; chunk 1 in a darker shade) and labelled with
// its micro-batch; idle time stays white; pipeline transfers are thin grey bars under their rank's row; a
// legend (of what is drawn) and a time axis. A full scenario's per-layer pieces of one op are joined into
// one box; its recompute (R) pieces join the micro-batch's B box, their share drawn as a purple band along
// the bottom. Boxes narrower than 10 px have no white outline (it would hide their colour).
// Pure function of the task graph and timeline: no I/O.
#include <string>

#include "sim/engine.h"

namespace mfusim::report {

struct SvgOptions {
  std::string title;                 // drawn above the rows; empty: none
  double width_px = 1400;            // total picture width
  double row_height_px = 34;         // one rank's compute row
  bool show_comm = true;             // thin bars for send/recv tasks
  std::string time_unit = "ms";      // "ms" or "us" for the axis labels
};

std::string render_svg(const sim::TaskGraph&, const sim::Timeline&, const SvgOptions& = {});

}  // namespace mfusim::report
