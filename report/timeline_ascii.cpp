#include "report/timeline_ascii.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace mfusim::report {

std::string timeline_ascii(const sim::TaskGraph& g, const sim::Timeline& tl, int width) {
  width = std::max(width, 8);
  const std::int64_t span = std::max<std::int64_t>(tl.makespan.ns, 1);
  const int ranks = g.ranks();
  std::vector<std::string> rows(static_cast<std::size_t>(ranks), std::string(static_cast<std::size_t>(width), '.'));
  std::vector<sim::StreamId> compute_of(static_cast<std::size_t>(ranks), -1);
  for (std::size_t s = 0; s < g.streams().size(); ++s) {
    const auto& spec = g.streams()[s];
    auto& c = compute_of[static_cast<std::size_t>(spec.rank)];
    if (spec.compute && c < 0) c = static_cast<sim::StreamId>(s);
  }
  // The column of a time, in 128-bit arithmetic (ns * width passes int64 for
  // steps beyond 9.2e16 ns / width) and clamped to the row.
  __extension__ typedef __int128 wide;
  auto cell = [&](std::int64_t ns) {
    const wide c = (static_cast<wide>(std::clamp<std::int64_t>(ns, 0, span)) * width + span / 2) / span;
    return static_cast<int>(std::clamp<wide>(c, 0, width));
  };
  for (const auto& iv : tl.intervals) {
    const sim::TaskSpec& t = g.task(iv.task);
    const int rank = g.streams()[static_cast<std::size_t>(t.stream)].rank;
    if (t.stream != compute_of[static_cast<std::size_t>(rank)] || iv.end.ns == iv.start.ns) continue;
    int a = std::min(cell(iv.start.ns), width - 1);
    int b = std::clamp(cell(iv.end.ns), a + 1, width);
    const char letter = t.kind == 'X' ? 'X' : (t.kind ? t.kind : '#');
    std::string text(1, letter);
    if (t.microbatch >= 0 && static_cast<int>(1 + std::to_string(t.microbatch).size()) <= b - a)
      text += std::to_string(t.microbatch);
    auto& row = rows[static_cast<std::size_t>(rank)];
    for (int k = a; k < b; ++k) {
      auto i = static_cast<std::size_t>(k - a);
      row[static_cast<std::size_t>(k)] = i < text.size() ? text[i] : ' ';
    }
  }
  std::string out;
  const std::string label_pad = "rank" + std::to_string(ranks - 1);
  for (int r = 0; r < ranks; ++r) {
    std::string name = "rank" + std::to_string(r);
    name.resize(label_pad.size(), ' ');
    out += name + " |" + rows[static_cast<std::size_t>(r)] + "|\n";
  }
  char end_label[32];
  std::snprintf(end_label, sizeof end_label, "%.3f ms", static_cast<double>(tl.makespan.ns) * 1e-6);
  std::string axis(label_pad.size() + 2 + static_cast<std::size_t>(width), ' ');
  axis[label_pad.size() + 2] = '0';
  const std::string e = end_label;
  if (axis.size() >= e.size() + label_pad.size() + 4) axis.replace(axis.size() - e.size(), e.size(), e);
  out += axis + "\n";
  out += "F forward, B backward, W weight-grad, X forward+backward (F&B), digits micro-batch, . idle\n";
  return out;
}

}  // namespace mfusim::report
