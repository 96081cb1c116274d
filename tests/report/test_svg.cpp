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
