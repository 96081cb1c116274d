#pragma once
// A compact ASCII pipeline timeline for the terminal (small pipelines): one
// row per rank's compute stream, `width` cells spanning [0, makespan). A task
// box is filled with its kind letter (F, B, W; X for an overlapped F&B)
// followed by its micro-batch number when the box is wide enough, then
// blanks; idle cells are '.'. Example (1F1B, p=2, m=3, f=1 ms, b=2 ms, width 27):
//   rank0 |F0F1 ....B0   F2B1  ...B2  |
//   rank1 |..F0 B0  F1B1   F2B2   ....|
//          0                 12.000 ms
#include <string>

#include "sim/engine.h"

namespace mfusim::report {

std::string timeline_ascii(const sim::TaskGraph&, const sim::Timeline&, int width = 100);

}  // namespace mfusim::report
