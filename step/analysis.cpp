// The step's breakdown read off the timeline (see analysis.h).
#include "step/analysis.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <tuple>
#include <unordered_map>
#include <stdexcept>

#include "sim/caching_allocator.h"
#include "sim/process_memory.h"

namespace mfusim::step {

namespace {

using sim::Category;

// Exposed time is attributed to the communication the idle compute stream
// overlaps, in this priority (the first one present wins).
enum Part : int { p_tp, p_ep, p_cp, p_data, p_pp, p_dp, p_count };
int part_of(Category c) {
  switch (c) {
    case Category::tp_comm: return p_tp;
    case Category::ep_comm: return p_ep;
    case Category::cp_comm: return p_cp;
    case Category::dataloader: return p_data;
    case Category::pp_comm: return p_pp;
    case Category::dp_comm: return p_dp;
    default: return -1;
  }
}

// Where the busy time of a compute task goes, by its category.
enum BusySlot : int { b_forward, b_backward, b_recompute, b_optimizer, b_dataloader, b_gc, b_launch, b_busy,
                      b_tp, b_ep, b_cp, b_interference, b_dp, b_count };
int busy_slot_of(Category c) {
  switch (c) {
    case Category::forward: return b_forward;
    case Category::backward:
    case Category::weight_grad: return b_backward;
    case Category::recompute: return b_recompute;
    case Category::optimizer: return b_optimizer;
    case Category::dataloader: return b_dataloader;
    case Category::gc: return b_gc;
    // A blocking collective the compute stream waits through (layer::Seg::wait: delayed scaling's amax all-reduce).
    case Category::tp_comm: return b_tp;
    case Category::ep_comm: return b_ep;
    case Category::cp_comm: return b_cp;
    case Category::dp_comm: return b_dp;
    default: return b_forward;
  }
}

// Sweep state of one rank. Slots: 0 the compute stream(s), 1 + Part the
// communication parts, 7 the tasks that count nowhere (only on the dummy rank
// P, whose state is never read).
struct Sweep {
  std::int64_t prev = 0;
  std::array<std::int32_t, 8> count{};
  std::array<double, 8> exposed{};     // [1 + Part], [7] bubble ([0] unused)
  std::array<double, b_count> acc{};   // busy time by BusySlot, summed at the end events in completion order
  std::array<char, 48> pad_{};         // to 256 bytes: a task code keeps its rank's byte offset above 8 flag bits
  // Accrues the time since the previous event: while the compute stream is
  // idle, to the first communication present, else to the bubble. The events
  // come in time order (until >= prev); with the clock not moved the amount
  // added is +0.0, and x + 0.0 == x for every sum here (all are >= +0), so the
  // sums are those of a sweep that skips empty stretches.
  void account(std::int64_t until) {
    if (count[0] == 0) {
      std::size_t k = 1;
      while (k < 7 && count[k] == 0) ++k;
      exposed[k] += (until - prev) * 1e-9;
    }
    prev = until;
  }
};
static_assert(sizeof(Sweep) % 256 == 0, "the task codes keep a rank's byte offset above 8 bits");
static_assert(b_count <= 16, "a task code holds its busy slot in 4 bits");

}  // namespace

// Per-rank breakdown read off the timeline: busy compute by category (merged
// op tasks split by their parts), and each idle stretch of the compute stream
// attributed to the communication it overlaps, else to the bubble.
//
// One sweep over the whole timeline in time order: the engine lists the tasks
// in completion order (intervals, ends non-decreasing) and in start order
// (started, starts non-decreasing), so merging the two lists gives every start
// and end event in time order without sorting. Each event goes to the sweep
// state of its rank (and of the receiving rank for a stage-to-stage send).
// Within a rank the events come in time order, as a sort of the rank's events
// would give them; events at the same instant may come in any order, because
// a rank's sweep accrues time only when its clock moves, after every event at
// the previous instant has been applied. So each rank accrues the same
// sequence of intervals, and every floating-point sum is the same, as a sweep
// over that rank's sorted events. The busy time by category is summed at the
// end events, in completion order.
//
// Each task's effect is read once, before the sweep, into a 64-bit code: low
// word (byte offset of its rank's Sweep | busy slot << 4 | send flag << 3 |
// slot) from a (stream, category) table, high word the byte offset of the
// receiving rank's Sweep for a flagged send; tasks
// that count nowhere (a non-compute stream, a category with no part) go to a
// dummy rank P, so the sweep has no per-event branch on them.
std::vector<RankParts> analyze(const sim::TaskGraph& g, const sim::Timeline& tl, int P, const Lowered* low) {
  const auto& streams = g.streams();
  if (tl.started.size() != tl.intervals.size())
    throw std::logic_error("analyze: the timeline lacks the start order of its tasks");
  constexpr std::size_t kCats = static_cast<std::size_t>(Category::count_);
  constexpr std::uint32_t kSend = 8, kSlot = 7, kRank = ~255u;
  if (static_cast<std::size_t>(P) + 1 > std::size_t{0xffffffffu} / sizeof(Sweep))
    throw std::logic_error("analyze: too many ranks for the 32-bit rank offsets of the task codes");
  const auto rank_code = [](int rank) { return static_cast<std::uint32_t>(static_cast<std::size_t>(rank) * sizeof(Sweep)); };
  const std::uint32_t dummy = rank_code(P) | kSlot;

  // Code by (stream, category).
  constexpr std::size_t kStride = 16;   // >= kCats; a power of two makes the index a shift
  static_assert(kCats <= kStride);
  std::vector<std::uint32_t> table(streams.size() * kStride);
  for (std::size_t s = 0; s < streams.size(); ++s)
    for (std::size_t c = 0; c < kCats; ++c) {
      const std::uint32_t rank = rank_code(streams[s].rank);
      const int part = part_of(static_cast<Category>(c));
      const auto busy = static_cast<std::uint32_t>(busy_slot_of(static_cast<Category>(c))) << 4;
      table[s * kStride + c] = streams[s].compute ? rank | busy : part < 0 ? dummy : rank | static_cast<std::uint32_t>(1 + part);
    }
  const auto& tasks = g.tasks();
  const std::size_t n = tasks.size();
  // Not value-initialised: every entry is written below (zeroing would cost a pass).
  const std::unique_ptr<std::uint64_t[]> code(new std::uint64_t[n]);
  sim::advise_huge(code.get(), n * sizeof(std::uint64_t));
#pragma GCC unroll 4
  for (std::size_t t = 0; t < n; ++t)
    code[t] = table[static_cast<std::size_t>(tasks[t].stream) * kStride + static_cast<std::size_t>(tasks[t].category)];
  // A stage-to-stage send also keeps the receiving rank waiting.
  if (low)
    for (const auto& [t, target] : low->send_target) {
      auto& c = code[static_cast<std::size_t>(t)];
      if ((c & kSlot) == 0 || (c & kSlot) == kSlot || target < 0 || rank_code(target) == (c & kRank)) continue;
      c |= kSend | static_cast<std::uint64_t>(rank_code(target)) << 32;
    }
  std::vector<Sweep> sweep(static_cast<std::size_t>(P) + 1);
  char* const base = reinterpret_cast<char*>(sweep.data());
  const auto sweep_of = [base](std::uint64_t c) -> Sweep& {
    return *reinterpret_cast<Sweep*>(base + (static_cast<std::uint32_t>(c) & kRank));
  };
  auto event = [&](std::uint64_t c, std::int64_t x, std::int32_t delta) {
    const unsigned slot = c & kSlot;
    Sweep& sw = sweep_of(c);
    sw.account(x);
    sw.count[slot] += delta;
    if (c & kSend) [[unlikely]] {
      Sweep& to = *reinterpret_cast<Sweep*>(base + (c >> 32));
      to.account(x);
      to.count[slot] += delta;
    }
  };

  // Busy compute of a finished task, by category.
  const auto* info_of = low ? low->info.data() : nullptr;
  const std::int64_t* host_wait_ns = tl.host_wait_ns.empty() ? nullptr : tl.host_wait_ns.data();
  auto busy = [&]<bool kLow>(const sim::Interval& iv, std::uint64_t c) {
    auto& acc = sweep_of(c).acc;
    const double dur = (iv.end.ns - iv.start.ns) * 1e-9;
    std::int64_t launch_ns = 0;
    int merged = -1;
    if constexpr (kLow) {
      launch_ns = info_of[iv.task].launch_ns;
      merged = info_of[iv.task].parts;
    }
    const double nominal = tasks[static_cast<std::size_t>(iv.task)].duration_ns * 1e-9;
    // A task that outlasted its work waiting for the host's issue (TaskSpec::host_ns): that
    // wait is launch overhead (the GPU idles for the host); the rest scales as before.
    const double host_wait =
        host_wait_ns ? static_cast<double>(host_wait_ns[&iv - tl.intervals.data()]) * 1e-9 : 0;
    const double launch = (nominal > 0 ? launch_ns * 1e-9 * ((dur - host_wait) / nominal) : 0) + host_wait;
    const double body = dur - launch;
    acc[b_launch] += launch;
    acc[b_busy] += dur;
    // What communication beside it added (the engine's contention classes): its work beyond its
    // duration at full rate, host wait apart.
    acc[b_interference] += std::max(0.0, dur - host_wait - nominal);
    if (merged >= 0) [[unlikely]] {
      // A merged op task: split its time over the parts it absorbed, in proportion.
      const auto& pt = low->parts[static_cast<std::size_t>(merged)];
      std::int64_t sum = 0;
      for (auto x : pt) sum += x;
      const double scale = sum > 0 ? body / (sum * 1e-9) : 0;
      auto share = [&](Category cat) { return pt[static_cast<std::size_t>(cat)] * 1e-9 * scale; };
      acc[b_forward] += share(Category::forward);
      acc[b_backward] += share(Category::backward) + share(Category::weight_grad);
      acc[b_recompute] += share(Category::recompute);
      acc[b_tp] += share(Category::tp_comm);
      acc[b_ep] += share(Category::ep_comm);
      acc[b_cp] += share(Category::cp_comm);
      acc[b_dp] += share(Category::dp_comm);
      return;
    }
    acc[(c >> 4) & 15] += body;
  };

  // Merge the start order and the completion order by time.
  const auto* started = tl.started.data();
  const auto* interval_of = tl.interval_of.data();
  const auto* intervals = tl.intervals.data();
  std::size_t i = 0;
  auto merge = [&]<bool kLow>() {
    // Locals, not captures: stores into the sweep states could alias them otherwise.
    const auto* const started_ = started;
    const auto* const interval_of_ = interval_of;
    const auto* const intervals_ = intervals;
    const std::uint64_t* const code_ = code.get();
    // The next start (task, time), kept across the completions; INT64_MAX once all have started.
    std::size_t k = 0;
    sim::TaskId next = 0;
    std::int64_t next_at = INT64_MAX;
    const auto load_next = [&] {
      if (k < n) {
        next = started_[k];
        next_at = intervals_[static_cast<std::size_t>(interval_of_[static_cast<std::size_t>(next)])].start.ns;
      } else {
        next_at = INT64_MAX;
      }
    };
    load_next();
    for (const sim::Interval& iv : tl.intervals) {
      const std::int64_t end = iv.end.ns;
      while (next_at <= end) {
        event(code_[static_cast<std::size_t>(next)], next_at, +1);
        ++k;
        load_next();
      }
      const std::uint64_t c = code_[static_cast<std::size_t>(iv.task)];
      event(c, end, -1);
      if ((c & kSlot) == 0) busy.template operator()<kLow>(iv, c);
    }
    i = k;
  };
  if (low) merge.template operator()<true>();
  else merge.template operator()<false>();
  for (; i < n; ++i) {   // unreachable when every task ends after it starts; kept for safety
    const sim::TaskId t = started[i];
    event(code[static_cast<std::size_t>(t)], tl.of(t).start.ns, +1);
  }

  std::vector<RankParts> parts(static_cast<std::size_t>(P));
  for (int rk = 0; rk < P; ++rk) {
    auto& sw = sweep[static_cast<std::size_t>(rk)];
    sw.account(tl.makespan.ns);
    const auto& exposed = sw.exposed;
    const auto& acc = sw.acc;
    auto& b = parts[static_cast<std::size_t>(rk)].b;
    b.forward = acc[b_forward];
    b.backward = acc[b_backward];
    b.recompute = acc[b_recompute];
    b.optimizer = acc[b_optimizer];
    b.dataloader = acc[b_dataloader];
    b.gc = acc[b_gc];
    b.launch_overhead = acc[b_launch];
    parts[static_cast<std::size_t>(rk)].busy = acc[b_busy];
    parts[static_cast<std::size_t>(rk)].interference = acc[b_interference];
    b.tp_comm_exposed = acc[b_tp] + exposed[1 + p_tp];
    b.ep_comm_exposed = acc[b_ep] + exposed[1 + p_ep];
    b.cp_comm_exposed = acc[b_cp] + exposed[1 + p_cp];
    b.dataloader += exposed[1 + p_data];
    b.pp_comm_exposed = exposed[1 + p_pp];
    b.dp_comm_exposed = acc[b_dp] + exposed[1 + p_dp];
    b.bubble = exposed[1 + p_count];
  }
  return parts;
}

// The critical rank (least idle time: bubble and imbalance) and the mean idle fraction.
void summarize(StepResult& r, const std::vector<RankParts>& parts, double T) {
  const int P = static_cast<int>(parts.size());
  int crit = 0;
  double bubble_sum = 0;
  r.ranks.resize(P);
  auto idle = [&](int rk) { return parts[rk].b.bubble + parts[rk].b.imbalance; };
  for (int rk = 0; rk < P; ++rk) {
    bubble_sum += idle(rk);
    if (idle(rk) < idle(crit)) crit = rk;
    r.ranks[rk].busy_s = parts[rk].busy;
    r.ranks[rk].bubble_s = parts[rk].b.bubble;
    r.ranks[rk].imbalance_s = parts[rk].b.imbalance;
    const auto& b = parts[rk].b;
    r.ranks[rk].exposed_comm_s = b.tp_comm_exposed + b.ep_comm_exposed + b.cp_comm_exposed + b.pp_comm_exposed + b.dp_comm_exposed;
  }
  r.breakdown = parts[crit].b;
  r.breakdown_rank = crit;
  r.interference_s = parts[crit].interference;
  r.bubble_fraction = T > 0 ? bubble_sum / P / T : 0;
}

namespace {

// One change of a rank's allocated memory: an allocation at a task's start or a free at its end.
struct MemChange {
  std::int64_t at = 0;
  int order = 0;     // 0 free, 1 allocation
  sim::TaskId task = 0;
  std::int64_t bytes = 0;   // allocated, or freed
  int stream = 0, microbatch = -1, chunk = -1, layer = -1;
};

// How the changes of one kind (frees, or allocations) at one instant are ordered: as their tasks'
// intervals come in the timeline (completion order; a task's allocation before its free), or by task
// first (then as in the timeline).
enum class SameInstant { timeline_order, task_order };

// The memory changes of each rank in [first, first + count) in time order (out[rank - first]): frees
// (at a task's end) before allocations (at a start) at the same instant, then as `same` says. With
// `low`, a task with blocks of its own (Lowered::mem_blocks) changes memory block by block, and each
// change carries its task's layer; without, a task's memory_delta > 0 is one allocation and its freed
// bytes (memory_delta < 0, memory_release) one free.
std::vector<std::vector<MemChange>> memory_changes(const sim::TaskGraph& g, const sim::Timeline& tl, const Lowered* low,
                                                   int first, int count, SameInstant same) {
  std::vector<std::vector<MemChange>> changes(static_cast<std::size_t>(std::max(count, 0)));
  const auto& streams = g.streams();
  const auto& tasks = g.tasks();
  // Which tasks change memory (one sequential pass), then their intervals in the timeline's order.
  std::vector<std::uint8_t> changes_memory(tasks.size(), 0);
  for (std::size_t i = 0; i < tasks.size(); ++i)
    changes_memory[i] = tasks[i].memory_delta != 0 || tasks[i].memory_release > 0;
  for (const auto& iv : tl.intervals) {
    if (!changes_memory[static_cast<std::size_t>(iv.task)]) continue;
    const auto& sp = g.task(iv.task);
    const int rank = streams[static_cast<std::size_t>(sp.stream)].rank;
    if (rank < first || rank - first >= count) continue;
    auto& c = changes[static_cast<std::size_t>(rank - first)];
    const int layer = low && static_cast<std::size_t>(iv.task) < low->info.size()
                          ? low->info[static_cast<std::size_t>(iv.task)].layer : -1;
    const int bi = low && static_cast<std::size_t>(iv.task) < low->info.size()
                       ? low->info[static_cast<std::size_t>(iv.task)].blocks : -1;
    if (bi >= 0 && static_cast<std::size_t>(bi) < low->mem_blocks.size()) {   // the task's blocks one by one (the head's loss)
      const MemBlocks* blocks = &low->mem_blocks[static_cast<std::size_t>(bi)];
      for (std::int64_t b : blocks->at_start)
        if (b > 0) c.push_back({iv.start.ns, 1, iv.task, b, sp.stream, sp.microbatch, sp.chunk, layer});
      for (std::int64_t b : blocks->at_end)
        if (b > 0) c.push_back({iv.end.ns, 0, iv.task, b, sp.stream, sp.microbatch, sp.chunk, layer});
      continue;
    }
    if (sp.memory_delta > 0)
      c.push_back({iv.start.ns, 1, iv.task, sp.memory_delta, sp.stream, sp.microbatch, sp.chunk, layer});
    const std::int64_t freed = (sp.memory_delta < 0 ? -sp.memory_delta : 0) + sp.memory_release;
    if (freed > 0) c.push_back({iv.end.ns, 0, iv.task, freed, sp.stream, sp.microbatch, sp.chunk, layer});
  }
  for (auto& ch : changes) {
    if (same == SameInstant::task_order)
      std::stable_sort(ch.begin(), ch.end(), [](const MemChange& a, const MemChange& b) {
        return a.at != b.at ? a.at < b.at : a.order != b.order ? a.order < b.order : a.task < b.task;
      });
    else
      std::stable_sort(ch.begin(), ch.end(), [](const MemChange& a, const MemChange& b) {
        return a.at != b.at ? a.at < b.at : a.order < b.order;
      });
  }
  return changes;
}

}  // namespace

std::int64_t held_at_peak(const sim::TaskGraph& g, const sim::Timeline& tl, int rank,
                          const std::vector<std::pair<sim::TaskId, std::int64_t>>& allocs) {
  if (allocs.empty()) return 0;
  std::unordered_map<sim::TaskId, std::int64_t> mine;
  for (const auto& [t, b] : allocs) mine[t] += b;
  // The bytes as the executor's allocated timeline counts them: a task's memory_delta and freed bytes
  // whole, without the transient blocks of Lowered::mem_blocks (so no `low`).
  const auto changes = memory_changes(g, tl, nullptr, rank, 1, SameInstant::timeline_order);
  // The tasks' bytes are freed together by one task (the optimizer step), after every other change that
  // matters here: until then they are held.
  std::int64_t cur = 0, top = 0, held = 0, held_top = 0;
  for (const MemChange& c : changes[0]) {
    if (c.order == 1) {
      cur += c.bytes;
      if (const auto m = mine.find(c.task); m != mine.end()) held += m->second;
    } else {
      cur -= c.bytes;
    }
    if (cur > top) {
      top = cur;
      held_top = held;
    }
  }
  return held_top;
}

std::vector<std::int64_t> reserved_peaks(const sim::TaskGraph& g, const sim::Timeline& tl, int P, const Lowered* low,
                                         int steps) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(std::max(P, 0)), 0);
  if (!g.any_memory() || P <= 0) return out;
  // Per rank, with the blocks of the tasks that have them one by one; at one instant by task.
  const auto changes = memory_changes(g, tl, low, 0, P, SameInstant::task_order);
  struct Live {
    std::int64_t size = 0;
    int stream = 0;
    std::size_t key = 0;
    bool alive = false;
  };
  for (std::size_t r = 0; r < out.size(); ++r) {
    const auto& ch = changes[r];
    if (ch.empty()) continue;
    // A free pairs with blocks of its task's micro-batch, chunk and layer (key) first.
    std::map<std::tuple<int, int, int>, std::size_t> key_ids;
    std::vector<std::size_t> key_of(ch.size());
    for (std::size_t i = 0; i < ch.size(); ++i)
      key_of[i] = key_ids.emplace(std::make_tuple(ch[i].microbatch, ch[i].chunk, ch[i].layer), key_ids.size()).first->second;
    // The pairing depends on the order of the changes only, not on the allocator: worked out once, as a
    // script of allocations (a slot each) and frees (of a slot), then played.
    struct Op {
      std::int64_t bytes;   // > 0: allocate into slot `slot`; 0: free slot `slot`
      int stream;
      std::size_t slot;
    };
    std::vector<Op> script;
    script.reserve(ch.size() + 16);
    {
      std::vector<Live> live;   // a slot each: the index is the slot
      std::vector<std::vector<std::size_t>> by_key(key_ids.size());   // live slots per key, in order
      std::unordered_map<std::int64_t, std::vector<std::size_t>> by_size;
      std::unordered_map<std::uint64_t, std::vector<std::size_t>> by_key_size;
      live.reserve(ch.size());
      auto ks_key = [](std::size_t key, std::int64_t bytes) {
        return (static_cast<std::uint64_t>(key) << 44) ^ static_cast<std::uint64_t>(bytes);
      };
      auto add = [&](std::int64_t bytes, int stream, std::size_t key) {
        script.push_back(Op{bytes, stream, live.size()});
        live.push_back(Live{bytes, stream, key, true});
        by_key[key].push_back(live.size() - 1);
        by_size[bytes].push_back(live.size() - 1);
        by_key_size[ks_key(key, bytes)].push_back(live.size() - 1);
      };
      auto release = [&](std::size_t i) {
        script.push_back(Op{0, live[i].stream, i});
        live[i].alive = false;
      };
      auto trim = [&](std::vector<std::size_t>& v) { while (!v.empty() && !live[v.back()].alive) v.pop_back(); };
      for (std::size_t c = 0; c < ch.size(); ++c) {
        const std::size_t key = key_of[c];
        if (ch[c].order == 1) {
          add(ch[c].bytes, ch[c].stream, key);
          continue;
        }
        std::int64_t need = ch[c].bytes;
        // 1. one live block of exactly this size: of this key, else the latest of any key.
        std::ptrdiff_t hit = -1;
        if (auto ks = by_key_size.find(ks_key(key, need)); ks != by_key_size.end()) {
          trim(ks->second);
          if (!ks->second.empty() && live[ks->second.back()].size == need && live[ks->second.back()].key == key)
            hit = static_cast<std::ptrdiff_t>(ks->second.back());
        }
        if (hit < 0) {
          auto bs = by_size.find(need);
          if (bs != by_size.end()) {
            trim(bs->second);
            if (!bs->second.empty()) hit = static_cast<std::ptrdiff_t>(bs->second.back());
          }
        }
        if (hit >= 0) {
          release(static_cast<std::size_t>(hit));
          continue;
        }
        // 2. every live block of the key when they add up to it (a layer's activations and its recompute).
        auto& mine = by_key[key];
        mine.erase(std::remove_if(mine.begin(), mine.end(), [&](std::size_t i) { return !live[i].alive; }), mine.end());
        std::int64_t key_sum = 0;
        for (std::size_t i : mine) key_sum += live[i].size;
        if (key_sum == need) {
          for (std::size_t i : mine) release(i);
          mine.clear();
          continue;
        }
        // 3. the latest blocks (of the key first) until the bytes are covered; what a block holds beyond
        // them stays allocated as a block of its own.
        for (int pass = 0; pass < 2 && need > 0; ++pass)
          for (std::size_t k = live.size(); k-- > 0 && need > 0;) {
            if (!live[k].alive || (pass == 0 && live[k].key != key)) continue;
            const Live b = live[k];
            release(k);
            if (b.size > need) {
              add(b.size - need, b.stream, b.key);
              need = 0;
            } else {
              need -= b.size;
            }
          }
      }
      for (std::size_t k = 0; k < live.size(); ++k)   // what the step left allocated goes with it
        if (live[k].alive) release(k);
    }
    // Every block is freed by the step's end, so a step that creates no segment leaves the allocator as
    // it found it (each segment one free block): the steps after it repeat it. Played until then (at
    // most `steps` times), its peak is the steady state's.
    sim::CachingAllocator alloc;
    std::vector<std::int64_t> ids;
    for (int step = 0; step < steps; ++step) {
      alloc.reset_peaks();
      const std::size_t segments_before = alloc.segments().size();
      ids.assign(script.size(), -1);
      for (const Op& op : script) {
        if (op.bytes > 0) ids[op.slot] = alloc.allocate(op.bytes, op.stream).id;
        else alloc.free(ids[op.slot]);
      }
      if (alloc.segments().size() == segments_before) break;
    }
    out[r] = alloc.peak_reserved();
  }
  return out;
}

}  // namespace mfusim::step
