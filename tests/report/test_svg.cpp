// report/svg: structure checks, and the pictures under docs/pictures/ (written when MFUSIM_WRITE_PICTURES=1:
//   MFUSIM_WRITE_PICTURES=1 build/tests/mfusim_tests -tc="svg: pictures*").
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "config/scenario.h"
#include "report/svg.h"
#include "schedules/lab.h"
#include "schedules/schedule.h"
#include "tests/schedules/test_zb_listsim.h"

using namespace mfusim;

namespace {

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

config::ScheduleCosts lab_costs(double f, double b, double w, double comm, double fb = -1) {
  config::ScheduleCosts c;
  c.f = f * 1e-3; c.b = b * 1e-3; c.w = w * 1e-3; c.comm = comm * 1e-3;
  if (fb >= 0) c.fb = fb * 1e-3;
  return c;
}

// DualPipe mixes full and split backwards, which the lab lowering does not route yet (see
// tests/schedules/test_dualpipe.cpp): draw it from the tests' list scheduler instead, as a graph of
// compute tasks with the played times.
std::pair<sim::TaskGraph, sim::Timeline> from_list_scheduler(const schedules::PipelineSchedule& s,
                                                             const schedules::testing::IntCosts& c) {
  auto played = schedules::testing::play(s, c);
  sim::TaskGraph g;
  sim::Timeline t;
  for (std::size_t r = 0; r < played.ranks.size(); ++r) {
    auto stream = g.add_stream(static_cast<int>(r), "rank" + std::to_string(r) + "/compute", true);
    for (const auto& po : played.ranks[r]) {
      sim::TaskSpec spec;
      spec.stream = stream;
      spec.duration_ns = (po.end - po.start) * 1'000'000;
      spec.microbatch = po.op.microbatch;
      spec.chunk = po.op.chunk;
      spec.kind = po.op.kind == schedules::OpKind::F ? 'F' : po.op.kind == schedules::OpKind::B ? 'B'
                : po.op.kind == schedules::OpKind::W ? 'W' : 'X';
      auto id = g.add(spec, schedules::label(po.op));
      t.interval_of.push_back(static_cast<std::int32_t>(t.intervals.size()));
      t.intervals.push_back({id, {po.start * 1'000'000}, {po.end * 1'000'000}});
    }
  }
  t.makespan = {played.makespan * 1'000'000};
  return {std::move(g), std::move(t)};
}

void write(const std::string& name, const std::string& svg) {
  std::ofstream(std::string(MFUSIM_SOURCE_DIR) + "/docs/pictures/" + name + ".svg") << svg;
}

}  // namespace

TEST_CASE("svg: one labelled box per compute op, empty bubbles, legend and axis") {
  auto s = schedules::zb_h1({.ranks = 4, .microbatches = 8});
  auto lab = schedules::run_lab(s, lab_costs(2, 2, 1, 0));
  auto svg = report::render_svg(lab.graph, lab.timeline, {.title = "ZB-H1"});
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
  CHECK(count(svg, "<title>F mb") == 4 * 8);
  CHECK(count(svg, "<title>B mb") == 4 * 8);
  CHECK(count(svg, "<title>W mb") == 4 * 8);
  CHECK(svg.find("rank 3") != std::string::npos);
  CHECK(svg.find("W (weight grad)") != std::string::npos);
  CHECK(svg.find("time (ms)") != std::string::npos);
  CHECK(svg.find("ZB-H1") != std::string::npos);
}

TEST_CASE("svg: overlapped F&B drawn two-tone with both micro-batches; names escaped") {
  auto s = schedules::dualpipe({.ranks = 4, .microbatches = 8});
  auto [g, t] = from_list_scheduler(s, {.f = 1, .b = 1, .w = 1, .fb = 3});
  auto svg = report::render_svg(g, t, {.title = "DualPipe <p=4>"});
  CHECK(svg.find("DualPipe &lt;p=4&gt;") != std::string::npos);
  CHECK(count(svg, "stroke-width=\"1.6\"") > 0);   // F&B frames
  CHECK(count(svg, " + B mb") > 0);
}

TEST_CASE("svg: pictures for docs/pictures (set MFUSIM_WRITE_PICTURES=1)") {
  if (std::getenv("MFUSIM_WRITE_PICTURES") == nullptr) return;
  struct Lab { const char* file; const char* title; schedules::PipelineSchedule sched; config::ScheduleCosts costs; };
  const Lab labs[] = {
      {"gpipe", "GPipe, p=4, m=8 (lab: F=1, B=2)", schedules::gpipe({.ranks = 4, .microbatches = 8}), lab_costs(1, 2, 0, 0)},
      {"1f1b", "1F1B, p=4, m=8 (lab: F=1, B=2)", schedules::one_f_one_b({.ranks = 4, .microbatches = 8}), lab_costs(1, 2, 0, 0)},
      {"zb-h1", "ZB-H1, p=4, m=8 (lab: F=B=W=1)", schedules::zb_h1({.ranks = 4, .microbatches = 8}), lab_costs(1, 1, 1, 0)},
      {"zb-h2", "ZB-H2, p=4, m=8 (lab: F=B=W=1)", schedules::zb_h2({.ranks = 4, .microbatches = 8}), lab_costs(1, 1, 1, 0)},
      {"zb-v", "ZB-V, p=4, m=8, 2 chunks/rank (lab: F=B=W=1)", schedules::zb_v({.ranks = 4, .microbatches = 8}), lab_costs(1, 1, 1, 0)},
      {"zb-auto", "zb-auto, p=4, m=8, max_inflight=8 (ZB-2p; lab: F=B=W=1)",
       schedules::zb_auto({.ranks = 4, .microbatches = 8}, schedules::uniform_costs(4, 1, 1, 1, 0, 8)), lab_costs(1, 1, 1, 0)},
      {"v-half", "V-Half, p=4, m=8, 2 chunks/rank (lab: F=B=W=1)", schedules::v_half({.ranks = 4, .microbatches = 8}), lab_costs(1, 1, 1, 0)},
      {"v-min", "V-Min, p=4, m=8, 2 chunks/rank (lab: F=B=W=1)", schedules::v_min({.ranks = 4, .microbatches = 8}), lab_costs(1, 1, 1, 0)},
  };
  for (const auto& l : labs) {
    auto lab = schedules::run_lab(l.sched, l.costs);
    write(l.file, report::render_svg(lab.graph, lab.timeline, {.title = l.title, .row_height_px = 30}));
  }
  {
    auto [g, t] = from_list_scheduler(schedules::dualpipe({.ranks = 8, .microbatches = 20}), {.f = 1, .b = 1, .w = 1, .fb = 2});
    write("dualpipe", report::render_svg(g, t, {.title = "DualPipe, p=8, m=20 (list scheduler: F=B=W=1, F&B=2)", .row_height_px = 26}));
  }
  {
    auto [g, t] = from_list_scheduler(schedules::dualpipev({.ranks = 4, .microbatches = 10}), {.f = 1, .b = 1, .w = 1, .fb = 2});
    write("dualpipev", report::render_svg(g, t, {.title = "DualPipeV, p=4 (8 stages), m=10 (list scheduler: F=B=W=1, F&B=2)", .row_height_px = 30}));
  }
}

TEST_CASE("svg: narrow per-layer boxes keep their colour; recompute banded in B and in the legend") {
  // One rank, 100 micro-batches of 10 per-layer F pieces, then 10 layers of R (150 us) and
  // B (200 us) pieces, as a full-scenario lowering with recompute emits them; a TP collective
  // after every piece on a comm stream. The step is 450 ms on 910 px: a B op is 7 px wide.
  sim::TaskGraph g;
  sim::Timeline t;
  auto cs = g.add_stream(0, "compute", true);
  auto tp = g.add_stream(0, "tp", false);
  std::int64_t now = 0;
  auto piece = [&](char kind, int mb, std::int64_t ns, bool named) {
    sim::TaskSpec spec;
    spec.stream = cs;
    spec.duration_ns = ns;
    spec.microbatch = mb;
    spec.chunk = 0;
    spec.kind = kind;
    auto id = named ? g.add(spec, std::string(1, kind) + " mb" + std::to_string(mb) + " chunk0") : g.add(spec);
    t.interval_of.push_back(static_cast<std::int32_t>(t.intervals.size()));
    t.intervals.push_back({id, {now}, {now + ns}});
    sim::TaskSpec c;
    c.stream = tp;
    c.duration_ns = ns / 2;
    c.kind = 'C';
    auto cid = g.add(c, "tp collective");
    t.interval_of.push_back(static_cast<std::int32_t>(t.intervals.size()));
    t.intervals.push_back({cid, {now}, {now + ns / 2}});
    now += ns;
  };
  for (int mb = 0; mb < 100; ++mb) {
    for (int l = 0; l < 10; ++l) piece('F', mb, 100'000, l == 0);
    for (int l = 0; l < 10; ++l) {
      piece('R', mb, 150'000, l == 0);
      piece('B', mb, 200'000, l == 0);
    }
  }
  t.makespan = {now};
  const auto svg = report::render_svg(g, t, {.title = "per-layer", .width_px = 1000});
  CHECK(count(svg, "<title>F mb") == 100);   // one box per op
  CHECK(count(svg, "<title>B mb") == 100);   // R and B pieces of one micro-batch: one B box
  CHECK(count(svg, "<title>R mb") == 0);
  CHECK(count(svg, "with recompute (R 42.86% of the busy time)") == 100);   // 150 / (150 + 200)
  CHECK(count(svg, "fill=\"#c9b3e6\"") == 100 + 1);   // a band per B box, and the legend's swatch
  CHECK(svg.find("R (recompute") != std::string::npos);
  CHECK(svg.find(">communication<") != std::string::npos);
  CHECK(svg.find("W (weight grad)") == std::string::npos);   // nothing drawn, nothing listed
  CHECK(count(svg, "<title>tp collective") < 10);            // adjacent collectives joined
  // No box narrower than the outline threshold carries the white outline.
  int outlined = 0;
  for (auto at = svg.find("<rect x="); at != std::string::npos; at = svg.find("<rect x=", at + 1)) {
    const auto end = svg.find("/>", at);
    const auto rect = svg.substr(at, end - at);
    if (rect.find("stroke=\"#ffffff\"") == std::string::npos) continue;
    const auto w = rect.find("width=\"");
    CHECK(std::stod(rect.substr(w + 7)) >= 10.0);
    ++outlined;
  }
  CHECK(outlined == 0);   // every op here is narrower than 10 px
}
