#include "report/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace mfusim::report {
namespace {

struct Palette { const char* fill; const char* text; };

// Chunk 0 light, chunk 1 dark, as in the ZB-V and DualPipeV figures.
Palette colour(char kind, int chunk) {
  const bool dark = chunk == 1;
  switch (kind) {
    case 'F': return dark ? Palette{"#3b6fb6", "#ffffff"} : Palette{"#a9c8ee", "#10243f"};
    case 'B': return dark ? Palette{"#2f8a4a", "#ffffff"} : Palette{"#a6dcb1", "#0f2d17"};
    case 'W': return dark ? Palette{"#c8641c", "#ffffff"} : Palette{"#f7c08a", "#3d1f05"};
    case 'R': return Palette{"#c9b3e6", "#2a1845"};
    case 'S': return Palette{"#9aa0a6", "#000000"};
    default: return Palette{"#d0d0d0", "#000000"};
  }
}

std::string escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", x);
  return buf;
}

// "F mb3 chunk0 + B mb1 chunk1" -> (1, 1): the backward half of an overlapped F&B task.
std::pair<int, int> backward_half(const std::string& name) {
  const auto plus = name.find("+ B mb");
  if (plus == std::string::npos) return {-1, -1};
  int mb = -1, chunk = -1;
  std::sscanf(name.c_str() + plus, "+ B mb%d chunk%d", &mb, &chunk);
  return {mb, chunk};
}

// A "nice" axis step (1, 2, 5 x 10^k) giving about `target` ticks.
double tick_step(double span, int target) {
  if (span <= 0) return 1;
  const double raw = span / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double k : {1.0, 2.0, 5.0, 10.0})
    if (raw <= k * mag) return k * mag;
  return 10 * mag;
}

}  // namespace

std::string render_svg(const sim::TaskGraph& g, const sim::Timeline& t, const SvgOptions& o) {
  const int ranks = std::max(1, g.ranks());
  const double left = 70, right = 20, top = o.title.empty() ? 16 : 40;
  const double row = o.row_height_px, comm_h = o.show_comm ? 6 : 0, gap = 8;
  const double lane = row + comm_h + gap;
  const double plot_w = o.width_px - left - right;
  const double end_ns = std::max<double>(1.0, static_cast<double>(t.makespan.ns));
  const double scale = plot_w / end_ns;
  const double unit_ns = o.time_unit == "us" ? 1e3 : 1e6;
  const double axis_y = top + ranks * lane + 4;
  const double legend_y = axis_y + 40;
  const double height = legend_y + 30;

  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(o.width_px) << "\" height=\"" << num(height)
    << "\" viewBox=\"0 0 " << num(o.width_px) << ' ' << num(height) << "\" font-family=\"Helvetica, Arial, sans-serif\">\n";
  s << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  if (!o.title.empty())
    s << "<text x=\"" << num(left) << "\" y=\"24\" font-size=\"16\" font-weight=\"bold\">" << escape(o.title) << "</text>\n";

  // Rows: a light frame per rank so idle time reads as empty space inside the pipeline.
  for (int r = 0; r < ranks; ++r) {
    const double y = top + r * lane;
    s << "<text x=\"" << num(left - 8) << "\" y=\"" << num(y + row / 2 + 5) << "\" font-size=\"13\" text-anchor=\"end\">rank "
      << r << "</text>\n";
    s << "<rect x=\"" << num(left) << "\" y=\"" << num(y) << "\" width=\"" << num(plot_w) << "\" height=\"" << num(row)
      << "\" fill=\"#ffffff\" stroke=\"#c0c0c0\" stroke-width=\"0.6\"/>\n";
  }

  const double font = std::clamp(row * 0.42, 8.0, 14.0);
  // Boxes: one per op. A full-scenario lowering splits an op into per-layer
  // tasks; consecutive tasks of the same op (same kind, micro-batch and chunk,
  // with no visible gap) are drawn as one box, and the alternating forward and
  // backward pieces of a DualPipe F&B op as one F&B box. Gaps wider than half a
  // pixel (waiting for a collective) stay visible.
  struct Box {
    int rank = 0;
    std::int64_t start = 0, end = 0;
    char kind = 0;
    int mb = -1, chunk = 0;
    bool fb = false;
    int mb_b = -1, chunk_b = 0;
    std::string name;
  };
  std::vector<const sim::Interval*> compute;
  for (const auto& iv : t.intervals) {
    const auto& task = g.task(iv.task);
    const auto& stream = g.streams()[static_cast<std::size_t>(task.stream)];
    if (!stream.compute) {
      if (!o.show_comm || iv.end.ns == iv.start.ns) continue;
      const double x = left + static_cast<double>(iv.start.ns) * scale;
      const double w = std::max(0.5, static_cast<double>(iv.end.ns - iv.start.ns) * scale);
      const double y = top + stream.rank * lane;
      s << "<rect x=\"" << num(x) << "\" y=\"" << num(y + row + 1) << "\" width=\"" << num(w) << "\" height=\"" << num(comm_h - 1)
        << "\" fill=\"" << colour('S', 0).fill << "\"><title>" << escape(g.name(iv.task)) << "</title></rect>\n";
      continue;
    }
    if (iv.end.ns > iv.start.ns) compute.push_back(&iv);
  }
  std::stable_sort(compute.begin(), compute.end(), [&](const sim::Interval* a, const sim::Interval* b) {
    const auto sa = g.task(a->task).stream, sb = g.streams().size() ? g.task(b->task).stream : 0;
    return sa != sb ? sa < sb : a->start.ns < b->start.ns;
  });
  std::vector<Box> boxes;
  const double join_ns = 0.5 / scale;
  sim::StreamId last_stream = -1;
  for (const auto* iv : compute) {
    const auto& task = g.task(iv->task);
    const int rank = g.streams()[static_cast<std::size_t>(task.stream)].rank;
    std::string name = g.name(iv->task);
    const bool starts_fb = task.kind == 'X' || name.find(" + B mb") != std::string::npos;
    if (!boxes.empty() && task.stream == last_stream && static_cast<double>(iv->start.ns - boxes.back().end) <= join_ns &&
        !starts_fb) {
      Box& bx = boxes.back();
      const bool same = task.kind == bx.kind && task.microbatch == bx.mb && task.chunk == bx.chunk;
      const bool other_half = bx.fb && (task.microbatch == bx.mb_b || bx.mb_b < 0) && task.kind != 'F';
      const bool own_half = bx.fb && task.kind == 'F' && task.microbatch == bx.mb;
      if (same || other_half || own_half) {
        if (other_half && bx.mb_b < 0) {
          bx.mb_b = task.microbatch;
          bx.chunk_b = task.chunk;
        }
        bx.end = iv->end.ns;
        continue;
      }
    }
    Box bx;
    bx.rank = rank;
    bx.start = iv->start.ns;
    bx.end = iv->end.ns;
    bx.kind = task.kind;
    bx.mb = task.microbatch;
    bx.chunk = task.chunk;
    bx.name = std::move(name);
    if (starts_fb) {
      bx.fb = true;
      if (task.kind == 'X') {
        const auto [mb_b, chunk_b] = backward_half(bx.name);
        bx.mb_b = mb_b;
        bx.chunk_b = chunk_b;
      }
    }
    boxes.push_back(std::move(bx));
    last_stream = task.stream;
  }
  for (const Box& bx : boxes) {
    const double x = left + static_cast<double>(bx.start) * scale;
    const double w = std::max(0.5, static_cast<double>(bx.end - bx.start) * scale);
    const double y = top + bx.rank * lane;
    const std::string tip = "<title>" + escape(bx.name) + " [" + num(static_cast<double>(bx.start) / unit_ns) + ", " +
                            num(static_cast<double>(bx.end) / unit_ns) + "] " + o.time_unit + "</title>";
    if (bx.fb) {
      const auto pf = colour('F', bx.chunk), pb = colour('B', bx.chunk_b);
      s << "<g>" << tip << "<rect x=\"" << num(x) << "\" y=\"" << num(y) << "\" width=\"" << num(w / 2) << "\" height=\"" << num(row)
        << "\" fill=\"" << pf.fill << "\"/>"
        << "<rect x=\"" << num(x + w / 2) << "\" y=\"" << num(y) << "\" width=\"" << num(w / 2) << "\" height=\"" << num(row)
        << "\" fill=\"" << pb.fill << "\"/>"
        << "<rect x=\"" << num(x) << "\" y=\"" << num(y) << "\" width=\"" << num(w) << "\" height=\"" << num(row)
        << "\" fill=\"none\" stroke=\"#000000\" stroke-width=\"1.6\"/>";
      if (w >= 2 * font)
        s << "<text x=\"" << num(x + w / 4) << "\" y=\"" << num(y + row / 2 + font / 3) << "\" font-size=\"" << num(font)
          << "\" text-anchor=\"middle\" fill=\"" << pf.text << "\">" << bx.mb << "</text>"
          << "<text x=\"" << num(x + 3 * w / 4) << "\" y=\"" << num(y + row / 2 + font / 3) << "\" font-size=\"" << num(font)
          << "\" text-anchor=\"middle\" fill=\"" << pb.text << "\">" << bx.mb_b << "</text>";
      s << "</g>\n";
      continue;
    }
    const auto pal = colour(bx.kind, bx.chunk);
    s << "<g>" << tip << "<rect x=\"" << num(x) << "\" y=\"" << num(y) << "\" width=\"" << num(w) << "\" height=\"" << num(row)
      << "\" fill=\"" << pal.fill << "\" stroke=\"#ffffff\" stroke-width=\"0.8\"/>";
    if (bx.mb >= 0 && w >= font)
      s << "<text x=\"" << num(x + w / 2) << "\" y=\"" << num(y + row / 2 + font / 3) << "\" font-size=\"" << num(font)
        << "\" text-anchor=\"middle\" fill=\"" << pal.text << "\">" << bx.mb << "</text>";
    s << "</g>\n";
  }

  // Time axis.
  s << "<line x1=\"" << num(left) << "\" y1=\"" << num(axis_y) << "\" x2=\"" << num(left + plot_w) << "\" y2=\"" << num(axis_y)
    << "\" stroke=\"#000000\" stroke-width=\"1\"/>\n";
  const double step = tick_step(end_ns / unit_ns, 10);
  for (double v = 0; v <= end_ns / unit_ns + 1e-9; v += step) {
    const double x = left + v * unit_ns * scale;
    s << "<line x1=\"" << num(x) << "\" y1=\"" << num(axis_y) << "\" x2=\"" << num(x) << "\" y2=\"" << num(axis_y + 5)
      << "\" stroke=\"#000000\"/><text x=\"" << num(x) << "\" y=\"" << num(axis_y + 18) << "\" font-size=\"11\" text-anchor=\"middle\">"
      << num(v) << "</text>\n";
  }
  s << "<text x=\"" << num(left + plot_w) << "\" y=\"" << num(axis_y + 32) << "\" font-size=\"11\" text-anchor=\"end\">time ("
    << escape(o.time_unit) << ")</text>\n";

  // Legend.
  struct Item { const char* label; char kind; int chunk; };
  const Item items[] = {{"F (forward)", 'F', 0},  {"F chunk 1", 'F', 1}, {"B (backward / input grad)", 'B', 0},
                        {"B chunk 1", 'B', 1},    {"W (weight grad)", 'W', 0}, {"W chunk 1", 'W', 1}};
  double lx = left;
  for (const auto& it : items) {
    s << "<rect x=\"" << num(lx) << "\" y=\"" << num(legend_y - 11) << "\" width=\"14\" height=\"14\" fill=\"" << colour(it.kind, it.chunk).fill
      << "\"/><text x=\"" << num(lx + 19) << "\" y=\"" << num(legend_y) << "\" font-size=\"12\">" << it.label << "</text>\n";
    lx += 30 + 7.0 * static_cast<double>(std::string(it.label).size());
  }
  s << "<rect x=\"" << num(lx) << "\" y=\"" << num(legend_y - 11) << "\" width=\"7\" height=\"14\" fill=\"" << colour('F', 0).fill
    << "\"/><rect x=\"" << num(lx + 7) << "\" y=\"" << num(legend_y - 11) << "\" width=\"7\" height=\"14\" fill=\"" << colour('B', 1).fill
    << "\"/><rect x=\"" << num(lx) << "\" y=\"" << num(legend_y - 11)
    << "\" width=\"14\" height=\"14\" fill=\"none\" stroke=\"#000\" stroke-width=\"1.4\"/><text x=\"" << num(lx + 19) << "\" y=\""
    << num(legend_y) << "\" font-size=\"12\">F&amp;B overlapped</text>\n";
  lx += 30 + 7.0 * 16;
  if (o.show_comm)
    s << "<rect x=\"" << num(lx) << "\" y=\"" << num(legend_y - 6) << "\" width=\"14\" height=\"5\" fill=\"" << colour('S', 0).fill
      << "\"/><text x=\"" << num(lx + 19) << "\" y=\"" << num(legend_y) << "\" font-size=\"12\">send</text>\n";
  s << "</svg>\n";
  return s.str();
}

}  // namespace mfusim::report
