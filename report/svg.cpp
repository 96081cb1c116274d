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

// An axis label with as many decimals as the step needs: 5000, 0.5, 0.02.
std::string tick_label(double v, double step) {
  const int decimals = std::clamp(static_cast<int>(std::ceil(-std::log10(step) - 1e-9)), 0, 6);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// The task's name; the per-layer pieces of an op carry none: named after their op.
std::string label_of(const sim::TaskGraph& g, sim::TaskId id) {
  std::string name = g.name(id);
  const auto& t = g.task(id);
  if (name.empty() && t.kind != 0 && t.microbatch >= 0)
    name = std::string(1, t.kind) + " mb" + std::to_string(t.microbatch) + " chunk" + std::to_string(std::max(0, t.chunk));
  return name;
}

// Boxes narrower than this (px) are drawn without the white outline that
// separates neighbours: on them it would cover the colour.
constexpr double kOutlineMinPx = 10;

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

  std::ostringstream s;   // the picture's body; the header (its height depends on the legend) goes in front at the end
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
  // with no visible gap) are drawn as one box, the alternating forward and
  // backward pieces of a DualPipe F&B op as one F&B box, and the per-layer
  // recompute (R) and backward (B) pieces of one micro-batch as one B box with
  // its recompute share drawn as a band. Gaps wider than half a pixel (waiting
  // for a collective) stay visible. Communication tasks of one stream with the
  // same name and no visible gap are joined the same way.
  struct Box {
    int rank = 0;
    std::int64_t start = 0, end = 0;
    char kind = 0;
    int mb = -1, chunk = 0;
    bool fb = false;
    int mb_b = -1, chunk_b = 0;
    std::int64_t r_ns = 0, b_ns = 0;   // recompute and backward time inside a B box
    std::string name;
  };
  const double join_ns = 0.5 / scale;
  std::vector<const sim::Interval*> compute, comm;
  for (const auto& iv : t.intervals) {
    if (iv.end.ns <= iv.start.ns) continue;
    const auto& task = g.task(iv.task);
    const auto& stream = g.streams()[static_cast<std::size_t>(task.stream)];
    if (stream.compute) compute.push_back(&iv);
    else if (o.show_comm) comm.push_back(&iv);
  }
  auto by_stream_then_start = [&](const sim::Interval* a, const sim::Interval* b) {
    const auto sa = g.task(a->task).stream, sb = g.task(b->task).stream;
    return sa != sb ? sa < sb : a->start.ns < b->start.ns;
  };
  std::stable_sort(comm.begin(), comm.end(), by_stream_then_start);
  struct Bar { int rank = 0; std::int64_t start = 0, end = 0; int count = 0; std::string name; };
  std::vector<Bar> bars;
  bool only_sends = true;
  sim::StreamId last_stream = -1;
  for (const auto* iv : comm) {
    const auto& task = g.task(iv->task);
    only_sends = only_sends && task.kind == 'S';
    std::string name = label_of(g, iv->task);
    if (!bars.empty() && task.stream == last_stream && static_cast<double>(iv->start.ns - bars.back().end) <= join_ns &&
        name == bars.back().name) {
      bars.back().end = std::max(bars.back().end, iv->end.ns);
      ++bars.back().count;
      continue;
    }
    bars.push_back({g.streams()[static_cast<std::size_t>(task.stream)].rank, iv->start.ns, iv->end.ns, 1, std::move(name)});
    last_stream = task.stream;
  }
  for (const Bar& bar : bars) {
    const double x = left + static_cast<double>(bar.start) * scale;
    const double w = std::max(0.5, static_cast<double>(bar.end - bar.start) * scale);
    const double y = top + bar.rank * lane;
    s << "<rect x=\"" << num(x) << "\" y=\"" << num(y + row + 1) << "\" width=\"" << num(w) << "\" height=\"" << num(comm_h - 1)
      << "\" fill=\"" << colour('S', 0).fill << "\"><title>" << escape(bar.name);
    if (bar.count > 1)
      s << " x" << bar.count << " [" << num(static_cast<double>(bar.start) / unit_ns) << ", "
        << num(static_cast<double>(bar.end) / unit_ns) << "] " << escape(o.time_unit);
    s << "</title></rect>\n";
  }
  std::stable_sort(compute.begin(), compute.end(), by_stream_then_start);
  std::vector<Box> boxes;
  last_stream = -1;
  auto is_br = [](char k) { return k == 'B' || k == 'R'; };
  for (const auto* iv : compute) {
    const auto& task = g.task(iv->task);
    const int rank = g.streams()[static_cast<std::size_t>(task.stream)].rank;
    std::string name = label_of(g, iv->task);
    const std::int64_t len = iv->end.ns - iv->start.ns;
    const bool starts_fb = task.kind == 'X' || name.find(" + B mb") != std::string::npos;
    if (!boxes.empty() && task.stream == last_stream && static_cast<double>(iv->start.ns - boxes.back().end) <= join_ns &&
        !starts_fb) {
      Box& bx = boxes.back();
      const bool same_op = task.microbatch == bx.mb && task.chunk == bx.chunk;
      const bool same = task.kind == bx.kind && same_op;
      const bool recompute_backward = !bx.fb && is_br(task.kind) && is_br(bx.kind) && same_op;
      const bool other_half = bx.fb && (task.microbatch == bx.mb_b || bx.mb_b < 0) && task.kind != 'F';
      const bool own_half = bx.fb && task.kind == 'F' && task.microbatch == bx.mb;
      if (same || recompute_backward || other_half || own_half) {
        if (other_half && bx.mb_b < 0) {
          bx.mb_b = task.microbatch;
          bx.chunk_b = task.chunk;
        }
        if (recompute_backward) bx.kind = 'B';
        (task.kind == 'R' ? bx.r_ns : bx.b_ns) += len;
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
    (task.kind == 'R' ? bx.r_ns : bx.b_ns) += len;
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
  // What the legend lists: only what is drawn.
  bool has_kind[2][3] = {}, has_fb = false, has_r = false, has_other = false;
  for (const Box& bx : boxes) {
    const int c = bx.chunk == 1 ? 1 : 0;
    if (bx.fb) has_fb = true;
    else if (bx.kind == 'F') has_kind[c][0] = true;
    else if (bx.kind == 'B') has_kind[c][1] = true;
    else if (bx.kind == 'W') has_kind[c][2] = true;
    else if (bx.kind != 'R') has_other = true;
    if (bx.r_ns > 0) has_r = true;
  }
  for (const Box& bx : boxes) {
    const double x = left + static_cast<double>(bx.start) * scale;
    const double w = std::max(0.5, static_cast<double>(bx.end - bx.start) * scale);
    const double y = top + bx.rank * lane;
    std::string label = bx.name;
    if (bx.kind == 'B' && bx.r_ns > 0) {
      label = std::string("B mb") + std::to_string(bx.mb) + " chunk" + std::to_string(std::max(0, bx.chunk)) +
              " with recompute (R " + num(100.0 * static_cast<double>(bx.r_ns) / static_cast<double>(bx.r_ns + bx.b_ns)) +
              "% of the busy time)";
    }
    const std::string tip = "<title>" + escape(label) + " [" + num(static_cast<double>(bx.start) / unit_ns) + ", " +
                            num(static_cast<double>(bx.end) / unit_ns) + "] " + o.time_unit + "</title>";
    if (bx.fb) {
      const auto pf = colour('F', bx.chunk), pb = colour('B', bx.chunk_b);
      s << "<g>" << tip << "<rect x=\"" << num(x) << "\" y=\"" << num(y) << "\" width=\"" << num(w / 2) << "\" height=\"" << num(row)
        << "\" fill=\"" << pf.fill << "\"/>"
        << "<rect x=\"" << num(x + w / 2) << "\" y=\"" << num(y) << "\" width=\"" << num(w / 2) << "\" height=\"" << num(row)
        << "\" fill=\"" << pb.fill << "\"/>"
        << "<rect x=\"" << num(x) << "\" y=\"" << num(y) << "\" width=\"" << num(w) << "\" height=\"" << num(row)
        << "\" fill=\"none\" stroke=\"#000000\" stroke-width=\"" << (w >= 6.4 ? std::string("1.6") : num(w / 4)) << "\"/>";
      if (w >= 2 * font)
        s << "<text x=\"" << num(x + w / 4) << "\" y=\"" << num(y + row / 2 + font / 3) << "\" font-size=\"" << num(font)
          << "\" text-anchor=\"middle\" fill=\"" << pf.text << "\">" << bx.mb << "</text>"
          << "<text x=\"" << num(x + 3 * w / 4) << "\" y=\"" << num(y + row / 2 + font / 3) << "\" font-size=\"" << num(font)
          << "\" text-anchor=\"middle\" fill=\"" << pb.text << "\">" << bx.mb_b << "</text>";
      s << "</g>\n";
      continue;
    }
    const auto pal = colour(bx.kind, bx.chunk);
    // A white outline separates neighbouring boxes; on a box narrower than
    // kOutlineMinPx it would cover the fill, so such boxes have none.
    s << "<g>" << tip << "<rect x=\"" << num(x) << "\" y=\"" << num(y) << "\" width=\"" << num(w) << "\" height=\"" << num(row)
      << "\" fill=\"" << pal.fill << '"';
    if (w >= kOutlineMinPx) s << " stroke=\"#ffffff\" stroke-width=\"0.8\"";
    s << "/>";
    if (bx.kind == 'B' && bx.r_ns > 0) {
      // The recompute share of the op, as a band along its bottom.
      const double share = static_cast<double>(bx.r_ns) / static_cast<double>(bx.r_ns + bx.b_ns);
      s << "<rect x=\"" << num(x) << "\" y=\"" << num(y + row * (1 - share)) << "\" width=\"" << num(w) << "\" height=\""
        << num(row * share) << "\" fill=\"" << colour('R', 0).fill << "\"/>";
    }
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
      << tick_label(v, step) << "</text>\n";
  }
  s << "<text x=\"" << num(left + plot_w) << "\" y=\"" << num(axis_y + 32) << "\" font-size=\"11\" text-anchor=\"end\">time ("
    << escape(o.time_unit) << ")</text>\n";

  // Legend: what the picture draws, on as many lines as it needs.
  struct Item { std::string label; char kind; int chunk; };
  std::vector<Item> items;
  const char* names[3] = {"F (forward)", "B (backward / input grad)", "W (weight grad)"};
  const char kinds[3] = {'F', 'B', 'W'};
  for (int k = 0; k < 3; ++k) {
    if (has_kind[0][k]) items.push_back({names[k], kinds[k], 0});
    if (has_kind[1][k]) items.push_back({std::string(1, kinds[k]) + " chunk 1", kinds[k], 1});
  }
  if (has_r) items.push_back({"R (recompute, band in B)", 'R', 0});
  if (has_other) items.push_back({"load, optimizer, GC", 0, 0});
  if (has_fb) items.push_back({"F&B overlapped", 'X', 0});
  if (!bars.empty()) items.push_back({only_sends ? "send" : "communication", 'S', 0});
  double lx = left, ly = legend_y;
  for (const auto& it : items) {
    const double advance = 30 + 7.0 * static_cast<double>(it.label.size());
    if (lx > left && lx + advance - 10 > o.width_px - right) {
      lx = left;
      ly += 20;
    }
    if (it.kind == 'X') {
      s << "<rect x=\"" << num(lx) << "\" y=\"" << num(ly - 11) << "\" width=\"7\" height=\"14\" fill=\"" << colour('F', 0).fill
        << "\"/><rect x=\"" << num(lx + 7) << "\" y=\"" << num(ly - 11) << "\" width=\"7\" height=\"14\" fill=\"" << colour('B', 1).fill
        << "\"/><rect x=\"" << num(lx) << "\" y=\"" << num(ly - 11)
        << "\" width=\"14\" height=\"14\" fill=\"none\" stroke=\"#000\" stroke-width=\"1.4\"/>";
    } else if (it.kind == 'S') {
      s << "<rect x=\"" << num(lx) << "\" y=\"" << num(ly - 6) << "\" width=\"14\" height=\"5\" fill=\"" << colour('S', 0).fill << "\"/>";
    } else {
      s << "<rect x=\"" << num(lx) << "\" y=\"" << num(ly - 11) << "\" width=\"14\" height=\"14\" fill=\"" << colour(it.kind, it.chunk).fill
        << "\"/>";
    }
    s << "<text x=\"" << num(lx + 19) << "\" y=\"" << num(ly) << "\" font-size=\"12\">" << escape(it.label) << "</text>\n";
    lx += advance;
  }
  s << "</svg>\n";
  const double height = ly + 30;
  std::ostringstream h;
  h << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(o.width_px) << "\" height=\"" << num(height)
    << "\" viewBox=\"0 0 " << num(o.width_px) << ' ' << num(height) << "\" font-family=\"Helvetica, Arial, sans-serif\">\n";
  h << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  return h.str() + s.str();
}

}  // namespace mfusim::report
