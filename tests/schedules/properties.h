#pragma once
// Reusable schedule property checker (STYLE.md "Tests"): run it on any
// PipelineSchedule. Returns the failed properties as messages (empty: all hold):
//  1. every op exactly once: F and B for each (microbatch, stage), W exactly
//     when the schedule splits W (FB counts as its F and its B half);
//  2. the order plays without deadlock in schedule-lab mode;
//  3. dependencies respected on the timeline (the Op contract of schedule.h,
//     checked on op times, not on the lowering's edges): F(mb,s) after
//     F(mb,s-1); B(mb,s) after B(mb,s+1), or after F(mb,S-1) at the last
//     stage; W(mb,s) after B(mb,s); each stream runs one task at a time;
//  4. deterministic: two runs give the same Chrome trace;
//  5. makespan >= each rank's compute work;
//  6. the critical path runs without gaps from 0 to the makespan;
//  7. optional: peak activations per rank within a bound.
// Bubble monotonicity in m is a grid property: see bubble_fraction_of().
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "report/chrome_trace.h"
#include "schedules/lab.h"
#include "schedules/schedule.h"

namespace mfusim::testing {

struct PropertyOptions {
  config::ScheduleCosts costs{.f = 1e-3, .b = 2e-3, .w = std::nullopt, .comm = 0.0, .fb = std::nullopt};
  // Bound on peak activations (units of M_B) for rank r, if the schedule has one.
  std::function<double(int rank)> activation_bound;
};

inline std::vector<std::string> schedule_property_failures(const schedules::PipelineSchedule& s,
                                                           const PropertyOptions& o = {}) {
  using schedules::Op;
  using schedules::OpKind;
  std::vector<std::string> fail;
  const std::string id = s.name + " (ranks=" + std::to_string(s.order.size()) + ", stages=" + std::to_string(s.stages) + ")";
  const int S = s.stages;
  int m = 0;
  for (const auto& ops : s.order)
    for (const Op& op : ops) m = std::max({m, op.microbatch + 1, op.microbatch_b + 1});
  // 1. each op exactly once. task index of (half, mb, stage); compute tasks are lowered first, in order.
  std::vector<int> count(static_cast<std::size_t>(3 * m * S), 0), task(count.size(), -1);
  auto key = [&](int half, int mb, int st) { return static_cast<std::size_t>((half * m + mb) * S + st); };
  int t = 0;
  for (const auto& ops : s.order)
    for (const Op& op : ops) {
      auto mark = [&](int half, int mb, int st) {
        if (mb < 0 || mb >= m || st < 0 || st >= S) {
          fail.push_back(id + ": op " + schedules::label(op) + " has stage " + std::to_string(st) + " out of range");
          return;
        }
        ++count[key(half, mb, st)];
        task[key(half, mb, st)] = t;
      };
      switch (op.kind) {
        case OpKind::F: mark(0, op.microbatch, op.stage); break;
        case OpKind::B: mark(1, op.microbatch, op.stage); break;
        case OpKind::W: mark(2, op.microbatch, op.stage); break;
        case OpKind::FB: mark(0, op.microbatch, op.stage); mark(1, op.microbatch_b, op.stage_b); break;
      }
      ++t;
    }
  for (int half = 0; half < 3; ++half)
    for (int mb = 0; mb < m; ++mb)
      for (int st = 0; st < S; ++st) {
        const int want = half < 2 || s.split_w ? 1 : 0, got = count[key(half, mb, st)];
        if (got != want)
          fail.push_back(id + ": " + "FBW"[half] + " mb" + std::to_string(mb) + " stage" + std::to_string(st) + " appears " +
                         std::to_string(got) + " times, expected " + std::to_string(want));
      }
  if (!fail.empty()) return fail;
  // 2. plays without deadlock.
  schedules::LabResult r;
  try {
    r = schedules::run_lab(s, o.costs);
  } catch (const std::exception& e) {
    fail.push_back(id + ": " + e.what());
    return fail;
  }
  // 3. dependencies on op times.
  auto start = [&](int half, int mb, int st) { return r.timeline.of(task[key(half, mb, st)]).start; };
  auto end = [&](int half, int mb, int st) { return r.timeline.of(task[key(half, mb, st)]).end; };
  auto after = [&](bool ok, const std::string& what) { if (!ok) fail.push_back(id + ": " + what); };
  for (int mb = 0; mb < m; ++mb)
    for (int st = 0; st < S; ++st) {
      const std::string at = " mb" + std::to_string(mb) + " stage" + std::to_string(st);
      if (st > 0) after(start(0, mb, st) >= end(0, mb, st - 1), "F" + at + " starts before F of the previous stage ends");
      if (st + 1 < S) after(start(1, mb, st) >= end(1, mb, st + 1), "B" + at + " starts before B of the next stage ends");
      else after(start(1, mb, st) >= end(0, mb, st), "B" + at + " starts before F of the last stage ends");
      if (s.split_w) after(start(2, mb, st) >= end(1, mb, st), "W" + at + " starts before its B ends");
    }
  for (std::size_t st = 0; st < r.graph.streams().size(); ++st) {
    const auto& q = r.graph.stream_tasks(static_cast<sim::StreamId>(st));
    for (std::size_t k = 1; k < q.size(); ++k)
      after(r.timeline.of(q[k]).start >= r.timeline.of(q[k - 1]).end, "stream " + r.graph.streams()[st].name + " overlaps itself");
  }
  // 4. deterministic.
  const auto again = schedules::run_lab(s, o.costs);
  after(report::chrome_trace(r.graph, r.timeline) == report::chrome_trace(again.graph, again.timeline),
        "two runs give different traces");
  // 6. critical path: contiguous chain from time 0 to the makespan.
  const auto& cp = r.timeline.critical_path;
  if (cp.empty() || r.timeline.of(cp.front()).start.ns != 0 || r.timeline.of(cp.back()).end != r.timeline.makespan) {
    fail.push_back(id + ": critical path does not span [0, makespan]");
  } else {
    for (std::size_t k = 1; k < cp.size(); ++k)
      after(r.timeline.of(cp[k]).start == r.timeline.of(cp[k - 1]).end, "critical path has a gap");
  }
  // 5. makespan >= per-rank work; 7. activation bound.
  for (std::size_t k = 0; k < r.busy_s.size(); ++k) {
    after(r.makespan_s + 1e-12 >= r.busy_s[k], "makespan below rank " + std::to_string(k) + "'s work");
    if (o.activation_bound) {
      const double bound = o.activation_bound(static_cast<int>(k));
      after(r.peak_activations[k] <= bound + 1e-9, "rank " + std::to_string(k) + " holds " +
                                                       std::to_string(r.peak_activations[k]) + " activations, bound " +
                                                       std::to_string(bound));
    }
  }
  return fail;
}

inline double bubble_fraction_of(const std::string& name, const schedules::PipelineShape& shape,
                                 const config::ScheduleCosts& costs) {
  return schedules::run_lab(schedules::generate(name, shape), costs).bubble_fraction;
}

}  // namespace mfusim::testing
