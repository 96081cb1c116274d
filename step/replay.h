#pragma once
// The record/replay speed-up of the per-layer lowering. The tasks and edges
// that the item-by-item emission adds for one op's item list on one rank are
// recorded once (ids relative to the first task) and replayed per
// micro-batch: the same tasks, in the same order, with the same edges in the
// same order as Builder::emit_seg would add them. Used only when nothing can
// come in between (no parameter gather to wait for, no gradient bucket that
// could be flushed inside the op); emit and emit_fb answer false otherwise,
// and the caller emits the op item by item.
#include <cstddef>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "schedules/schedule.h"
#include "sim/engine.h"
#include "step/items.h"
#include "step/lower.h"

namespace mfusim::step {

class Builder;

class Replay {
 public:
  explicit Replay(Builder& b) : b_(b) {}
  // One F, B or W op on one chain; false: not replayable, emit it item by item.
  bool emit(int rank, Chain& ch, const schedules::Op& op);
  // One F&B op (two interleaved chains); false: not replayable.
  bool emit_fb(int rank, Chain& cf, Chain& cb, const schedules::Op& op, const std::string& name);

 private:
  struct Program {
    std::vector<sim::TaskSpec> tasks;            // microbatch, chunk and the first name patched per use
    std::vector<TaskInfo> info;
    std::vector<std::pair<sim::TaskId, sim::TaskId>> edges;   // relative; kExternal = the chain's pending tasks
    std::vector<sim::TaskId> pending;            // relative: the chain's pending tasks at the end
    sim::TaskId last = -1, last_compute = -1;    // relative
    // F&B programs (two chains): the B chain's pending tasks and last task at
    // the end, its first task, and per task whether it is on the B chain.
    std::vector<sim::TaskId> pending_b;
    sim::TaskId last_b = -1, first_b = -1, first_f = -1;
    std::vector<char> in_b;
    std::vector<int*> grad_counters;             // grad_remaining_ of each grad-final item's layer, in order
    bool grad_free = true;                       // no grad-final item reaches on_grad_final's bucket logic
    sim::TaskGraph::Block block;                 // `tasks` checked once (at the first use; size 0: not yet)
  };
  static constexpr sim::TaskId kExternal = -1, kExternalB = -2;   // the (F) chain's, the B chain's pending inputs
  void record_item(Program& pr, int rank, const Item& it, std::vector<sim::TaskId>& pending, sim::TaskId& last,
                   bool chain_b, std::vector<int>& layers_seen, bool beside = false);
  Program& program_of(int rank, const schedules::Op& op);

  Builder& b_;
  std::map<std::tuple<std::size_t, std::size_t, int>, Program> fb_programs_;   // (F list, B list, rank)
  std::vector<Program> programs_;
  std::vector<char> program_built_;
  std::vector<std::pair<sim::TaskId, sim::TaskId>> edge_scratch_;
};

}  // namespace mfusim::step
