#pragma once
// A small, independent list scheduler for schedule orders (tests only): plays each rank's order
// as-soon-as-possible with integer op costs, honouring Op::split_w per op (a B with split_w = false is a
// full backward costing b + w, and has no W). It is the second opinion next to the engine's lab mode:
// it knows nothing of the engine's lowering. Throws std::runtime_error listing every rank's blocked op
// and what it waits for (the Zero Bubble scheduler's deadlock report) when the order cannot be played.
#include <algorithm>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "schedules/schedule.h"

namespace mfusim::schedules::testing {

struct IntCosts { std::int64_t f = 1, b = 1, w = 1, comm = 0, fb = -1; };   // fb < 0: f + b + w

struct PlayedOp { Op op; std::int64_t start = 0, end = 0; };

struct Played {
  std::vector<std::vector<PlayedOp>> ranks;
  std::int64_t makespan = 0;
  std::vector<std::int64_t> first_start, last_end, work;
  // Zero Bubble paper §5.3 "cost": the largest per-rank time from its first op's start to its last op's end.
  std::int64_t max_span() const {
    std::int64_t x = 0;
    for (std::size_t r = 0; r < ranks.size(); ++r) x = std::max(x, last_end[r] - first_start[r]);
    return x;
  }
  std::int64_t max_work() const { return *std::max_element(work.begin(), work.end()); }
};

inline std::int64_t op_cost(const Op& op, const IntCosts& c) {
  switch (op.kind) {
    case OpKind::F: return c.f;
    case OpKind::B: return op.split_w ? c.b : c.b + c.w;
    case OpKind::W: return c.w;
    case OpKind::FB: return c.fb >= 0 ? c.fb : c.f + c.b + c.w;
  }
  return 0;
}

inline Played play(const PipelineSchedule& s, const IntCosts& c) {
  using Key = std::tuple<char, int, int>;   // (F|B|W, microbatch, stage)
  std::map<Key, std::pair<std::int64_t, int>> done;   // -> (end, rank)
  const int p = static_cast<int>(s.order.size());
  const int S = s.stages;
  Played out;
  out.ranks.resize(static_cast<std::size_t>(p));
  out.first_start.assign(static_cast<std::size_t>(p), -1);
  out.last_end.assign(static_cast<std::size_t>(p), 0);
  out.work.assign(static_cast<std::size_t>(p), 0);
  std::vector<std::size_t> next(static_cast<std::size_t>(p), 0);
  std::vector<std::int64_t> free_at(static_cast<std::size_t>(p), 0);
  auto deps_of = [&](char kind, int mb, int st, std::vector<Key>& deps) {
    if (kind == 'F' && st > 0) deps.emplace_back('F', mb, st - 1);
    if (kind == 'B') deps.emplace_back(st + 1 < S ? 'B' : 'F', mb, st + 1 < S ? st + 1 : st);
    if (kind == 'B') deps.emplace_back('F', mb, st);
    if (kind == 'W') deps.emplace_back('B', mb, st);
  };
  auto halves = [](const Op& op) {
    std::vector<std::tuple<char, int, int>> h;
    switch (op.kind) {
      case OpKind::F: h.emplace_back('F', op.microbatch, op.stage); break;
      case OpKind::B: h.emplace_back('B', op.microbatch, op.stage); break;
      case OpKind::W: h.emplace_back('W', op.microbatch, op.stage); break;
      case OpKind::FB: h.emplace_back('F', op.microbatch, op.stage); h.emplace_back('B', op.microbatch_b, op.stage_b); break;
    }
    return h;
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < p; ++r) {
      auto& i = next[static_cast<std::size_t>(r)];
      const auto& ops = s.order[static_cast<std::size_t>(r)];
      while (i < ops.size()) {
        const Op& op = ops[i];
        std::int64_t ready = free_at[static_cast<std::size_t>(r)];
        bool ok = true;
        std::vector<Key> deps;
        for (auto [k, mb, st] : halves(op)) deps_of(k, mb, st, deps);
        for (const Key& d : deps) {
          auto h = halves(op);
          if (std::find(h.begin(), h.end(), d) != h.end()) continue;   // FB's own forward half
          auto it = done.find(d);
          if (it == done.end()) { ok = false; break; }
          ready = std::max(ready, it->second.first + (it->second.second == r ? 0 : c.comm));
        }
        if (!ok) break;
        const std::int64_t end = ready + op_cost(op, c);
        for (auto [k, mb, st] : halves(op)) {
          if (!done.emplace(Key{k, mb, st}, std::make_pair(end, r)).second)
            throw std::runtime_error(s.name + ": rank " + std::to_string(r) + " runs " + label(op) + " twice");
        }
        out.ranks[static_cast<std::size_t>(r)].push_back({op, ready, end});
        if (out.first_start[static_cast<std::size_t>(r)] < 0) out.first_start[static_cast<std::size_t>(r)] = ready;
        out.last_end[static_cast<std::size_t>(r)] = end;
        out.work[static_cast<std::size_t>(r)] += op_cost(op, c);
        free_at[static_cast<std::size_t>(r)] = end;
        out.makespan = std::max(out.makespan, end);
        ++i;
        progress = true;
      }
    }
  }
  std::string pending;
  for (int r = 0; r < p; ++r)
    if (next[static_cast<std::size_t>(r)] < s.order[static_cast<std::size_t>(r)].size())
      pending += " rank" + std::to_string(r) + ": " + label(s.order[static_cast<std::size_t>(r)][next[static_cast<std::size_t>(r)]]) +
                 " (stage " + std::to_string(s.order[static_cast<std::size_t>(r)][next[static_cast<std::size_t>(r)]].stage) + ");";
  if (!pending.empty()) throw std::runtime_error(s.name + ": deadlock, blocked:" + pending);
  return out;
}

// Every (microbatch, stage) has exactly one F and one B, and one W exactly when its B is split.
inline std::string check_op_set(const PipelineSchedule& s, int m) {
  std::map<std::tuple<char, int, int>, int> count;
  std::map<std::pair<int, int>, bool> split;
  for (const auto& ops : s.order)
    for (const Op& op : ops) {
      if (op.kind == OpKind::FB) {
        ++count[{'F', op.microbatch, op.stage}];
        ++count[{'B', op.microbatch_b, op.stage_b}];
        split[{op.microbatch_b, op.stage_b}] = false;
      } else {
        const char k = op.kind == OpKind::F ? 'F' : op.kind == OpKind::B ? 'B' : 'W';
        ++count[{k, op.microbatch, op.stage}];
        if (op.kind == OpKind::B) split[{op.microbatch, op.stage}] = op.split_w;
      }
    }
  for (int mb = 0; mb < m; ++mb)
    for (int st = 0; st < s.stages; ++st) {
      const bool w = split[{mb, st}];
      for (char k : {'F', 'B', 'W'}) {
        const int want = k == 'W' ? (w ? 1 : 0) : 1;
        const int got = count[{k, mb, st}];
        if (got != want)
          return std::string(1, k) + " mb" + std::to_string(mb) + " stage" + std::to_string(st) + " appears " +
                 std::to_string(got) + " times, want " + std::to_string(want);
      }
    }
  if (static_cast<int>(count.size()) > 3 * m * s.stages) return "ops outside (microbatch, stage) range";
  return {};
}

// Peak number of chunk activations a rank holds, counted from F to the end of its backward (W when split).
inline std::vector<int> peak_chunk_activations(const PipelineSchedule& s) {
  std::vector<int> peaks;
  for (const auto& ops : s.order) {
    int cur = 0, peak = 0;
    for (const Op& op : ops) {
      if (op.kind == OpKind::F || op.kind == OpKind::FB) peak = std::max(peak, ++cur);
      if (op.kind == OpKind::W || (op.kind == OpKind::B && !op.split_w) || op.kind == OpKind::FB) --cur;
    }
    peaks.push_back(peak);
  }
  return peaks;
}

}  // namespace mfusim::schedules::testing
