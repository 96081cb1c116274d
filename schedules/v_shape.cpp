// V-Half and V-Min: Qi, Wan, Huang, Lin, "Pipeline Parallelism with Controllable Memory" (arXiv:2405.15362),
// §3 (building blocks) and §4 ("repeating, squeezing, reordering"). Two chunks per rank in a V (chunk 0 =
// stage r, chunk 1 = stage 2p-1-r, as ZB-V). One building block per rank places, in unit-time slots,
// F of chunk 0, F of chunk 1, B of chunk 1 and B of chunk 0 of one micro-batch; repeating it every 6 slots
// gives the steady state. The lifespan of a micro-batch on a rank (first F to last W) sets its activation
// memory: V-Min's block is about 4p slots long (about 1/3 of 1F1B's memory), V-Half's about 6p (1/2).
// Offsets of rank i (§3.2, Fig. 6 / 7):
//   V-Min:  F0 = i, F1 = 2p-1-i, B1 = 2p+d+i, B0 = 4p+d-1-i, d = 2 when 3 divides p, else 0
//   V-Half: F0 = 2i, F1 = 3p-2-i, B1 = 3p+d+2i-1, B0 = 6p+d-2-i, d = 3 when p is even, else 0
// W passes go to the first empty slot after their B. Then, as in the paper's greedy reordering: every
// pass (outside the steady phase between rank 0's first chunk-0 B and the last forward) moves to the
// earliest empty slot after its inputs that does not raise the rank's peak memory, and the slots are
// squeezed (each pass as early as its inputs and its rank allow, unit times). This is done twice, with W
// passes placed explicitly and then with W passes filling gaps. The result is an order per rank; it does
// not depend on the op costs (the authors' runtime builds it from unit costs as well).
#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "schedules/schedule.h"

namespace mfusim::schedules {

namespace {

// Pass types on a rank: F chunk 0, F chunk 1, B chunk 1, B chunk 0, then W (one list, or W chunk 1 and
// W chunk 0 when split). Slot lists per type hold one slot per micro-batch, increasing.
using Slots = std::vector<std::vector<int>>;   // [type][mb]
using Plan = std::vector<Slots>;               // [rank]

int last_slot(const Slots& s) {
  int b = 0;
  for (const auto& v : s) b = std::max(b, v.back());
  return b;
}

// The type whose next unplaced pass has the smallest slot (ties: lower type), or -1 when all are placed.
int next_type(const Slots& s, const std::vector<int>& next, int types) {
  int best = -1;
  for (int t = 0; t < types; ++t) {
    const auto T = static_cast<std::size_t>(t);
    if (next[T] >= static_cast<int>(s[T].size())) continue;
    if (best < 0 || s[T][static_cast<std::size_t>(next[T])] < s[static_cast<std::size_t>(best)][static_cast<std::size_t>(next[static_cast<std::size_t>(best)])])
      best = t;
  }
  return best;
}

// Adds W passes: each empty slot takes a pending W (chunk 1's first when split); the rest go after the end.
void add_w(Slots& s, bool split) {
  const int bound = last_slot(s);
  s.resize(split ? 6 : 5);
  int pending[2] = {0, 0};
  std::vector<int> next(4, 0);
  int i = 0;
  for (; i <= bound; ++i) {
    const int t = next_type(s, next, 4);
    if (t >= 0 && s[static_cast<std::size_t>(t)][static_cast<std::size_t>(next[static_cast<std::size_t>(t)])] == i) {
      ++next[static_cast<std::size_t>(t)];
      if (t == 2 || t == 3) ++pending[split ? t - 2 : 0];
    } else {
      for (int w = 0; w < 2; ++w)
        if (pending[w]) {
          s[static_cast<std::size_t>(4 + w)].push_back(i);
          --pending[w];
          break;
        }
    }
  }
  --i;
  for (int w = 0; w < 2; ++w)
    while (pending[w] > 0) {
      s[static_cast<std::size_t>(4 + w)].push_back(++i);
      --pending[w];
    }
}

// Peak activations of one rank's slots (F +1, W -1; without W lists, an empty slot runs a pending W).
int peak_memory(const Slots& s) {
  const int types = static_cast<int>(s.size());
  const bool has_w = types > 4;
  std::vector<std::pair<int, int>> passes;   // (slot, type)
  for (int t = 0; t < types; ++t)
    for (int x : s[static_cast<std::size_t>(t)]) passes.emplace_back(x, t);
  std::sort(passes.begin(), passes.end());
  const int bound = passes.back().first;
  int cur = 0, peak = 0, pending = 0;
  std::size_t k = 0;
  for (int i = 0; i <= bound; ++i) {
    if (k < passes.size() && passes[k].first == i) {
      const int t = passes[k++].second;
      cur += t < 2 ? 1 : t == 4 ? -1 : 0;
      if (t == 2 || t == 3) ++pending;
    } else if (!has_w && pending) {
      --cur;
      --pending;
    }
    peak = std::max(peak, cur);
  }
  return peak;
}

struct Pass {
  int slot, rank, type, mb;
  auto operator<=>(const Pass&) const = default;
};

// Every pass in (slot, rank, type, mb) order.
std::vector<Pass> in_slot_order(const Plan& plan) {
  std::vector<Pass> all;
  for (int r = 0; r < static_cast<int>(plan.size()); ++r)
    for (int t = 0; t < static_cast<int>(plan[static_cast<std::size_t>(r)].size()); ++t)
      for (int mb = 0; mb < static_cast<int>(plan[static_cast<std::size_t>(r)][static_cast<std::size_t>(t)].size()); ++mb)
        all.push_back({plan[static_cast<std::size_t>(r)][static_cast<std::size_t>(t)][static_cast<std::size_t>(mb)], r, t, mb});
  std::sort(all.begin(), all.end());
  return all;
}

// List-schedules the slot order with the given per-type costs and comm (the paper's "squeezing").
// Returns the start time of every pass, [rank][type][mb], and each rank's order of (type, mb).
struct Squeezed {
  std::vector<std::vector<std::vector<double>>> start;
  std::vector<std::vector<std::pair<int, int>>> order;
};
Squeezed squeeze(const Plan& plan, const std::vector<double>& cost, double comm) {
  const int p = static_cast<int>(plan.size());
  const int types = static_cast<int>(plan[0].size());
  Squeezed out;
  std::vector<std::vector<std::vector<double>>> finish(static_cast<std::size_t>(p));
  out.start.resize(static_cast<std::size_t>(p));
  out.order.resize(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) {
    finish[static_cast<std::size_t>(r)].resize(static_cast<std::size_t>(types));
    out.start[static_cast<std::size_t>(r)].resize(static_cast<std::size_t>(types));
    for (int t = 0; t < types; ++t) {
      const auto n = plan[static_cast<std::size_t>(r)][static_cast<std::size_t>(t)].size();
      finish[static_cast<std::size_t>(r)][static_cast<std::size_t>(t)].assign(n, -1);
      out.start[static_cast<std::size_t>(r)][static_cast<std::size_t>(t)].assign(n, 0);
    }
  }
  auto fin = [&](int r, int t, int mb) {
    const double x = finish[static_cast<std::size_t>(r)][static_cast<std::size_t>(t)][static_cast<std::size_t>(mb)];
    if (x < 0) throw std::logic_error("v-shape: a pass is ordered before its input");
    return x;
  };
  std::vector<double> rank_end(static_cast<std::size_t>(p), 0);
  std::vector<bool> started(static_cast<std::size_t>(p), false);
  for (const Pass& x : in_slot_order(plan)) {
    double ready = 0;
    if ((x.type == 0 || x.type == 2) && x.rank > 0) ready = std::max(ready, fin(x.rank - 1, x.type, x.mb) + comm);
    if ((x.type == 1 || x.type == 3) && x.rank + 1 < p) ready = std::max(ready, fin(x.rank + 1, x.type, x.mb) + comm);
    if (x.type > 0 && x.type < 4) ready = std::max(ready, fin(x.rank, x.type - 1, x.mb));
    if (x.mb > 0) ready = std::max(ready, fin(x.rank, x.type, x.mb - 1));
    if (started[static_cast<std::size_t>(x.rank)]) ready = std::max(ready, rank_end[static_cast<std::size_t>(x.rank)]);
    started[static_cast<std::size_t>(x.rank)] = true;
    const double end = ready + cost[static_cast<std::size_t>(x.type)];
    finish[static_cast<std::size_t>(x.rank)][static_cast<std::size_t>(x.type)][static_cast<std::size_t>(x.mb)] = end;
    out.start[static_cast<std::size_t>(x.rank)][static_cast<std::size_t>(x.type)][static_cast<std::size_t>(x.mb)] = ready;
    rank_end[static_cast<std::size_t>(x.rank)] = end;
    out.order[static_cast<std::size_t>(x.rank)].emplace_back(x.type, x.mb);
  }
  return out;
}

Plan to_slots(const Squeezed& s) {
  Plan plan(s.start.size());
  for (std::size_t r = 0; r < s.start.size(); ++r) {
    plan[r].resize(s.start[r].size());
    for (std::size_t t = 0; t < s.start[r].size(); ++t)
      for (double x : s.start[r][t]) plan[r][t].push_back(static_cast<int>(x));
  }
  return plan;
}

// Greedy reordering: each pass outside the steady phase moves to the earliest empty slot after its
// inputs that keeps the rank's peak memory; then the plan is squeezed at unit costs.
Plan reorder(Plan plan, bool with_w) {
  const int p = static_cast<int>(plan.size());
  if (with_w)
    for (auto& s : plan) add_w(s, false);
  const int types = with_w ? 5 : 4;
  int peak = 0;
  for (const auto& s : plan) peak = std::max(peak, peak_memory(s));
  const int m = static_cast<int>(plan[0][0].size());
  std::vector<std::vector<bool>> occupied(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) occupied[static_cast<std::size_t>(r)].assign(static_cast<std::size_t>(last_slot(plan[static_cast<std::size_t>(r)]) + 1), false);
  std::vector<std::vector<int>> next(static_cast<std::size_t>(p), std::vector<int>(static_cast<std::size_t>(types), 0));
  int phase = 0;   // 0 warm-up, 1 steady (kept as is), 2 cool-down
  auto slot = [&](int r, int t, int mb) -> int& {
    return plan[static_cast<std::size_t>(r)][static_cast<std::size_t>(t)][static_cast<std::size_t>(mb)];
  };
  for (;;) {
    // The unplaced pass with the smallest (slot, rank, type, mb).
    int br = -1, bt = -1, bslot = 0;
    for (int r = 0; r < p; ++r)
      for (int t = 0; t < types; ++t) {
        const int k = next[static_cast<std::size_t>(r)][static_cast<std::size_t>(t)];
        if (k >= static_cast<int>(plan[static_cast<std::size_t>(r)][static_cast<std::size_t>(t)].size())) continue;
        const int x = slot(r, t, k);
        if (br < 0 || x < bslot) {
          br = r, bt = t, bslot = x;
        }
      }
    if (br < 0) break;
    const int mb = next[static_cast<std::size_t>(br)][static_cast<std::size_t>(bt)]++;
    auto& occ = occupied[static_cast<std::size_t>(br)];
    if (bt == 3 && br == 0 && phase == 0) phase = 1;
    if (phase == 1) {
      if (bt == 0 && mb == m - 1) phase = 2;
      occ[static_cast<std::size_t>(bslot)] = true;
      continue;
    }
    if (phase == 0 && !with_w) {
      occ[static_cast<std::size_t>(bslot)] = true;
      continue;
    }
    int after = -1;
    if ((bt == 0 || bt == 2) && br > 0) after = std::max(after, slot(br - 1, bt, mb));
    if ((bt == 1 || bt == 3) && br + 1 < p) after = std::max(after, slot(br + 1, bt, mb));
    if (bt > 0 && bt < 4) after = std::max(after, slot(br, bt - 1, mb));
    if (bt == 4) {
      std::vector<int> bs = plan[static_cast<std::size_t>(br)][2];
      bs.insert(bs.end(), plan[static_cast<std::size_t>(br)][3].begin(), plan[static_cast<std::size_t>(br)][3].end());
      std::sort(bs.begin(), bs.end());
      after = std::max(after, bs[static_cast<std::size_t>(mb)]);
    }
    if (mb > 0) after = std::max(after, slot(br, bt, mb - 1));
    if (after + 1 > bslot) throw std::logic_error("v-shape: a pass sits before its input");
    bool moved = false;
    for (int x = after + 1; x < bslot; ++x) {
      if (occ[static_cast<std::size_t>(x)]) continue;
      slot(br, bt, mb) = x;
      if (peak_memory(plan[static_cast<std::size_t>(br)]) <= peak) {
        moved = true;
        break;
      }
    }
    if (!moved) slot(br, bt, mb) = bslot;
    occ[static_cast<std::size_t>(slot(br, bt, mb))] = true;
  }
  if (!with_w)
    for (auto& s : plan) add_w(s, false);
  return to_slots(squeeze(plan, std::vector<double>(5, 1.0), 0.0));
}

PipelineSchedule v_schedule(const PipelineShape& shape, const char* name, bool half) {
  check_shape(name, shape);
  const int p = shape.ranks, m = shape.microbatches;
  Plan plan(static_cast<std::size_t>(p));
  for (int i = 0; i < p; ++i) {
    std::vector<int> block;
    if (half) {
      const int d = p % 2 == 0 ? 3 : 0;
      block = {2 * i, 3 * p - i - 2, 3 * p + d + 2 * i - 1, 6 * p + d - i - 2};
    } else {
      const int d = p % 3 == 0 ? 2 : 0;
      block = {i, 2 * p - i - 1, 2 * p + d + i, 4 * p + d - i - 1};
    }
    auto& s = plan[static_cast<std::size_t>(i)];
    s.resize(4);
    for (int t = 0; t < 4; ++t)
      for (int mb = 0; mb < m; ++mb) s[static_cast<std::size_t>(t)].push_back(block[static_cast<std::size_t>(t)] + 6 * mb);
  }
  Plan r1 = reorder(plan, true);
  for (auto& s : r1) s.resize(4);
  Plan r2 = reorder(r1, false);
  for (auto& s : r2) {
    s.resize(4);
    add_w(s, true);
  }
  const auto order = squeeze(r2, std::vector<double>(6, 1.0), 0.0).order;

  PipelineSchedule out;
  out.name = name;
  out.stages = 2 * p;
  out.chunks_per_rank = 2;
  out.split_w = true;
  out.order.resize(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) {
    const int stage_of[2] = {r, 2 * p - 1 - r};
    for (const auto& [t, mb] : order[static_cast<std::size_t>(r)]) {
      // Types: F chunk 0, F chunk 1, B chunk 1, B chunk 0, W chunk 1, W chunk 0.
      static constexpr OpKind kind[6] = {OpKind::F, OpKind::F, OpKind::B, OpKind::B, OpKind::W, OpKind::W};
      static constexpr int chunk[6] = {0, 1, 1, 0, 1, 0};
      const int c = chunk[t];
      out.order[static_cast<std::size_t>(r)].push_back(
          {.kind = kind[t], .stage = stage_of[c], .microbatch = mb, .chunk = c, .split_w = true});
    }
  }
  return out;
}

}  // namespace

PipelineSchedule v_half(const PipelineShape& shape) { return v_schedule(shape, "v-half", true); }
PipelineSchedule v_min(const PipelineShape& shape) { return v_schedule(shape, "v-min", false); }

}  // namespace mfusim::schedules
