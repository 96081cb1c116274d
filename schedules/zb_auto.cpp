// zb-auto: the automatic Zero Bubble scheduler of Qi, Wan, Huang, Lin, "Zero Bubble Pipeline
// Parallelism", ICLR 2024 (arXiv:2401.10241), §3.1 "heuristic algorithm" (the paper's ILP starts from it;
// the authors' runtime uses it alone). It plans from per-stage costs T_F, T_B, T_W, T_comm and a memory
// limit per rank M_lim = max_inflight micro-batch activations (F adds one, B frees the share not kept for
// W, W the rest; with the whole share kept until W the limit counts micro-batches between F and W):
//  - warm-up: rank j runs as many forwards before its first B as fit in memory and finish before the
//    first B arrives from rank j+1 (or, in a second variant, start before it arrives); a rank never runs
//    more warm-up forwards than the rank before it;
//  - steady state, one round per micro-batch: an F on every rank that still has one (ranks ahead of the
//    next by two forwards may instead wait so the B they feed is not delayed), then B from the last
//    rank to the first; before each F / B a rank runs pending W passes while memory is over the limit,
//    and W passes that fit in the wait for the F / B input; a wait longer than W is filled with a W
//    only when it would exceed the largest bubble seen on any rank (or always, in a third variant);
//  - the remaining W passes last.
// Each of the 2 x 2 x 2 variants is played with its list-scheduled times (comm as a latency between
// ranks) and the one with the shortest rank span (first F start to last W end, the step time once
// steps tile, §4) wins, the first in the order below on a tie.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "schedules/schedule.h"

namespace mfusim::schedules {

namespace {

enum Kind { kF = 0, kB = 1, kW = 2 };

struct Planner {
  int p = 0, m = 0;
  const StageCosts& c;
  std::vector<double> limit;         // in-flight micro-batches allowed per rank
  // State per rank: counts of F/B/W placed, end of its last op, memory in flight, bubble so far.
  std::vector<int> n[3];
  std::vector<double> end, mem, bubble;
  std::vector<double> done;          // end time of (kind, rank, mb); NaN until placed
  StageOrder order;

  Planner(int p_, int m_, const StageCosts& costs) : p(p_), m(m_), c(costs) {}

  double cost(int kind, int r) const {
    const auto& v = kind == kF ? c.f : kind == kB ? c.b : c.w;
    return v[static_cast<std::size_t>(r)];
  }
  double mem_delta(int kind) const {
    return kind == kF ? 1.0 : kind == kB ? -(1.0 - c.w_memory_fraction) : -c.w_memory_fraction;
  }
  std::size_t at(int kind, int r, int mb) const {
    return (static_cast<std::size_t>(kind) * static_cast<std::size_t>(p) + static_cast<std::size_t>(r)) *
               static_cast<std::size_t>(m) + static_cast<std::size_t>(mb);
  }
  double finished(int kind, int r, int mb) const {
    const double t = mb < m ? done[at(kind, r, mb)] : std::numeric_limits<double>::quiet_NaN();
    if (t != t)
      throw std::logic_error("zb_auto: " + std::string("FBW").substr(static_cast<std::size_t>(kind), 1) + " mb" +
                             std::to_string(mb) + " on rank " + std::to_string(r) + " used before it was planned");
    return t;
  }
  double max_bubble() const { return *std::max_element(bubble.begin(), bubble.end()); }

  void reset() {
    for (auto& v : n) v.assign(static_cast<std::size_t>(p), 0);
    end.assign(static_cast<std::size_t>(p), 0.0);
    mem.assign(static_cast<std::size_t>(p), 0.0);
    bubble.assign(static_cast<std::size_t>(p), 0.0);
    done.assign(static_cast<std::size_t>(3 * p * m), std::numeric_limits<double>::quiet_NaN());
    order.assign(static_cast<std::size_t>(p), {});
  }

  int& count(int kind, int r) { return n[kind][static_cast<std::size_t>(r)]; }

  void put(int r, int kind) {
    const auto R = static_cast<std::size_t>(r);
    const int mb = count(kind, r);
    const double dur = cost(kind, r);
    const double gapless = end[R] + dur;
    double t = gapless;
    if (kind == kF && r > 0) t = std::max(t, finished(kF, r - 1, mb) + c.comm + dur);
    if (kind == kB && r + 1 < p) t = std::max(t, finished(kB, r + 1, mb) + c.comm + dur);
    if (count(kF, r) > 0) bubble[R] += t - gapless;   // the wait before a rank's first op is not its bubble
    end[R] = t;
    done[at(kind, r, mb)] = t;
    mem[R] += mem_delta(kind);
    ++count(kind, r);
    const auto k = kind == kF ? OpKind::F : kind == kB ? OpKind::B : OpKind::W;
    order[R].push_back({.kind = k, .stage = r, .microbatch = mb, .split_w = true});
  }

  // W passes before an op of `kind` on rank r: while memory would exceed the limit, then while one fits
  // in the wait for the op's input `ready` (finish time of its producer + comm), then one more when the
  // wait is too long to leave idle.
  void fill_w(int r, int kind, bool has_input, double ready, bool no_bubble_greedy) {
    const auto R = static_cast<std::size_t>(r);
    while (mem[R] + mem_delta(kind) > limit[R]) {
      if (count(kW, r) >= count(kB, r))
        throw std::invalid_argument("zb-auto: schedule.max_inflight=" + std::to_string(static_cast<int>(limit[R])) +
                                    " cannot hold rank " + std::to_string(r) + "'s next " +
                                    (kind == kF ? "forward" : "backward"));
      put(r, kW);
    }
    if (!has_input) return;
    while (count(kW, r) < count(kB, r) && end[R] + cost(kW, r) <= ready) put(r, kW);
    if (count(kW, r) < count(kB, r) && end[R] < ready) {
      if (ready - end[R] <= max_bubble() - bubble[R]) {
        if (no_bubble_greedy) put(r, kW);
      } else {
        put(r, kW);
      }
    }
  }

  void plan(bool allow_bubble_before_first_b, bool prioritize_b, bool no_bubble_greedy) {
    reset();
    for (int i = 0; i < m; ++i) {
      std::vector<int> extra_f(static_cast<std::size_t>(p), 0);
      if (i == 0) {
        for (int r = 0; r < p; ++r) put(r, kF);
        // Warm-up forwards per rank, walking the first B back from the last rank.
        double b_arrives = 0;
        for (int r = p - 1; r >= 0; --r) {
          const auto R = static_cast<std::size_t>(r);
          if (r == p - 1) {
            b_arrives = finished(kF, r, 0) + cost(kB, r);
            continue;
          }
          double mem_r = mem[R], busy_until = end[R];
          while (count(kF, r) + extra_f[R] < m && mem_r + mem_delta(kF) <= limit[R]) {
            if (allow_bubble_before_first_b ? busy_until + cost(kF, r) > b_arrives + c.comm
                                            : busy_until >= b_arrives + c.comm)
              break;
            mem_r += mem_delta(kF);
            busy_until += cost(kF, r);
            ++extra_f[R];
          }
          b_arrives = std::max(busy_until, b_arrives + c.comm) + cost(kB, r);
        }
        // No rank warms up with as many forwards as the rank before it.
        for (int r = 1; r < p; ++r) {
          const auto R = static_cast<std::size_t>(r);
          while (extra_f[R] > 0 && extra_f[R] >= extra_f[R - 1] && count(kF, r) + extra_f[R] < m) --extra_f[R];
        }
        for (int r = 0; r < p; ++r)
          for (int k = 0; k < extra_f[static_cast<std::size_t>(r)]; ++k) put(r, kF);
        for (int r = p - 1; r >= 0; --r) put(r, kB);
        continue;
      }
      for (int r = 0; r < p; ++r) {
        const auto R = static_cast<std::size_t>(r);
        if (count(kF, r) >= m) continue;
        if (prioritize_b && r + 1 < p && count(kF, r) >= count(kF, r + 1) + 2) {
          // Rank r is two forwards ahead: a forward now may delay the B rank r+1 will send.
          const double b_from_next = end[R + 1] + cost(kF, r + 1) + cost(kB, r + 1) + c.comm;
          if (end[R] >= b_from_next) continue;
          double w_cost = 0, mem_with_w = mem[R] + mem_delta(kF);
          for (int k = 0; mem_with_w > limit[R] && count(kW, r) + k < count(kB, r); ++k) {
            w_cost += cost(kW, r);
            mem_with_w += mem_delta(kW);
          }
          if (end[R] + cost(kF, r) + w_cost <= b_from_next) {
            extra_f[R] = 1;
            continue;
          }
          if (b_from_next - end[R] <= max_bubble() - bubble[R]) continue;
        }
        extra_f[R] = 1;
      }
      for (int r = p - 2; r >= 0; --r)
        extra_f[static_cast<std::size_t>(r)] = std::min(extra_f[static_cast<std::size_t>(r)], extra_f[static_cast<std::size_t>(r) + 1]);
      for (int r = 0; r < p; ++r) {
        if (extra_f[static_cast<std::size_t>(r)] == 0) continue;
        const bool has_input = r > 0;
        fill_w(r, kF, has_input, has_input ? finished(kF, r - 1, count(kF, r)) + c.comm : 0.0, no_bubble_greedy);
        put(r, kF);
      }
      for (int r = p - 1; r >= 0; --r) {
        if (count(kB, r) != i)
          throw std::logic_error("zb_auto: rank " + std::to_string(r) + " reached round " + std::to_string(i) +
                                 " with " + std::to_string(count(kB, r)) + " backwards");
        const bool has_input = r + 1 < p;
        fill_w(r, kB, has_input, has_input ? finished(kB, r + 1, i) + c.comm : 0.0, no_bubble_greedy);
        if (r == 0 && count(kF, r) == m)
          while (count(kW, r) < count(kB, r)) put(r, kW);
        put(r, kB);
      }
    }
    for (int r = 0; r < p; ++r)
      while (count(kW, r) < m) put(r, kW);
  }

  // Longest rank span: first F start to last W end.
  double span() const {
    double best = 0;
    for (int r = 0; r < p; ++r)
      best = std::max(best, finished(kW, r, m - 1) - (finished(kF, r, 0) - cost(kF, r)));
    return best;
  }
};

}  // namespace

StageCosts uniform_costs(int ranks, double f, double b, double w, double comm, int max_inflight,
                         double w_memory_fraction) {
  const auto n = static_cast<std::size_t>(std::max(ranks, 0));
  return StageCosts{.f = std::vector<double>(n, f), .b = std::vector<double>(n, b), .w = std::vector<double>(n, w),
                    .comm = comm, .max_inflight = max_inflight, .w_memory_fraction = w_memory_fraction, .activation = {},
                    .fixed = {}};
}

PipelineSchedule zb_auto(const PipelineShape& shape, const StageCosts& given) {
  check_shape("zb-auto", shape);
  const int p = shape.ranks, m = shape.microbatches;
  const StageCosts costs = given.f.empty() && given.b.empty() && given.w.empty()
                               ? uniform_costs(p, 1, 1, 1, given.comm, given.max_inflight, given.w_memory_fraction)
                               : given;
  const auto P = static_cast<std::size_t>(p);
  if (costs.f.size() != P || costs.b.size() != P || costs.w.size() != P)
    throw std::invalid_argument("zb-auto: costs for " + std::to_string(costs.f.size()) + "/" + std::to_string(costs.b.size()) +
                                "/" + std::to_string(costs.w.size()) + " ranks (F/B/W), pp=" + std::to_string(p));
  for (const auto* v : {&costs.f, &costs.b, &costs.w})
    for (double x : *v)
      if (!(x >= 0) || !(x < std::numeric_limits<double>::infinity()))
        throw std::invalid_argument("zb-auto: op costs must be finite and >= 0 (got " + std::to_string(x) + ")");
  if (!(costs.comm >= 0) || !(costs.comm < std::numeric_limits<double>::infinity()))
    throw std::invalid_argument("zb-auto: comm cost must be finite and >= 0 (got " + std::to_string(costs.comm) + ")");
  if (!(costs.w_memory_fraction >= 0 && costs.w_memory_fraction <= 1))
    throw std::invalid_argument("zb-auto: w_memory_fraction must be in [0, 1] (got " +
                                std::to_string(costs.w_memory_fraction) + ")");
  if (costs.max_inflight < 0)
    throw std::invalid_argument("zb-auto: schedule.max_inflight must be >= 0, 0 meaning pp (got " +
                                std::to_string(costs.max_inflight) + ")");
  Planner plan(p, m, costs);
  const double n_inflight = static_cast<double>(costs.max_inflight == 0 ? p : costs.max_inflight);
  plan.limit.assign(P, n_inflight);
  if (!costs.activation.empty()) {
    if (costs.activation.size() != P)
      throw std::invalid_argument("zb-auto: activations for " + std::to_string(costs.activation.size()) + " ranks, pp=" +
                                  std::to_string(p));
    if (!costs.fixed.empty() && costs.fixed.size() != P)
      throw std::invalid_argument("zb-auto: fixed memory for " + std::to_string(costs.fixed.size()) + " ranks, pp=" +
                                  std::to_string(p));
    // One memory for every rank (rank 0's micro-batches): 1F1B's peak, where its rank r holds p - r of its
    // own micro-batches beside its fixed memory, the activations scaled by max_inflight / pp (pp, the
    // default: 1F1B's; 2 pp: ZB-2p). The peak rank is rank 0 unless a later rank's micro-batches or
    // weights are heavier enough (DeepSeek-V3's first stage holds three dense layers, the MoE stages
    // after it more).
    auto fixed = [&](std::size_t r) { return costs.fixed.empty() ? 0.0 : costs.fixed[r]; };
    double budget = 0;
    for (std::size_t r = 0; r < P; ++r) {
      const double a = costs.activation[r];
      if (!(a > 0) || !(a < std::numeric_limits<double>::infinity()))
        throw std::invalid_argument("zb-auto: relative activations must be finite and > 0 (got " + std::to_string(a) + ")");
      if (!(fixed(r) >= 0) || !(fixed(r) < std::numeric_limits<double>::infinity()))
        throw std::invalid_argument("zb-auto: fixed memory must be finite and >= 0 (got " + std::to_string(fixed(r)) + ")");
      budget = std::max(budget, fixed(r) + n_inflight / p * static_cast<double>(p - static_cast<int>(r)) * a);
    }
    // Each rank as many of its own micro-batches as fit beside its fixed memory, at least one (as
    // 1F1B's last rank).
    for (std::size_t r = 0; r < P; ++r)
      plan.limit[r] = std::max(1.0, std::floor((budget - fixed(r)) / costs.activation[r] + 1e-9));
  }

  PipelineSchedule best;
  double best_span = 0;
  bool have = false;
  for (bool allow_bubble_before_first_b : {true, false})
    for (bool prioritize_b : {true, false})
      for (bool no_bubble_greedy : {true, false}) {
        plan.plan(allow_bubble_before_first_b, prioritize_b, no_bubble_greedy);
        const double s = plan.span();
        if (!have || s < best_span) {
          best.order = plan.order;
          best_span = s;
          have = true;
        }
      }
  best.name = "zb-auto";
  best.stages = p;
  best.split_w = true;
  return best;
}

}  // namespace mfusim::schedules
