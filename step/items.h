#pragma once
// The vocabulary of the step builder: an op of the schedule becomes a list of
// items (one per compute segment of its layers' passes), emitted as tasks on a
// chain (what the next segment waits for), each task labelled by a Name.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "layer/pass_cost.h"
#include "sim/engine.h"
#include "step/lower.h"

namespace mfusim::step {

// One compute segment of an op with its category, memory change and layer.
struct Item {
  const layer::Seg* seg;
  sim::Category cat;
  char kind;
  std::int64_t mem;   // > 0: allocated at the segment's start; < 0: freed at its end
  int layer;          // -1 for embedding/head
  bool grad_final;    // this item finishes the layer's weight gradient for the step
  // Bytes (>= 0) freed at the segment's end as well: with mem > 0, what the segment holds only
  // while it runs (the loss's transients, models::HeadMemory).
  std::int64_t release = 0;
  int blocks = -1;   // mem and release as blocks: index into Lowered::mem_blocks (-1: one block each)
};

// One step of an F&B op's emission: an item of chain 0 (F) or 1 (B), and whether it runs
// beside its chain's pending collective (waits for none of it; Seg::beside).
struct FbStep {
  std::uint8_t chain = 0;
  std::uint32_t item = 0;
  bool beside = false;
};
// The order in which an F&B op's two item lists are emitted (step/emit.cpp): segment by
// segment alternately; with EP transfers, DeepSeek-V3's Figure 4 arrangement.
// rearrange = false (moe.fb_rearrange): always the plain alternation.
std::vector<FbStep> fb_order(const std::vector<Item>& f, const std::vector<Item>& b, bool rearrange = true);

// A chain of tasks on one rank: one per op (two for F&B).
struct Chain {
  std::vector<sim::TaskId> pending;   // what the next segment must wait for
  sim::TaskId last = -1;              // last task of the chain (its output)
};

// A task's label: an explicit name (kept in the graph's side table), else a
// label code and text number (sim::Label), formatted only when asked for.
struct Name {
  std::string text;
  sim::Label label = sim::Label::text;
  std::uint16_t id = 0;
  Name() = default;
  Name(std::string s) : text(std::move(s)) {}   // NOLINT: implicit, as a string
  Name(const char* s) : text(s) {}              // NOLINT: implicit, as a string
  explicit Name(sim::Label l, std::uint16_t i = 0) : label(l), id(i) {}
};

// The mix of host work on a compute stream (a GC pause, data loading on the training thread): the
// GPU idles, communication beside it slows nothing (sim::ComputeMix::host_only).
inline constexpr sim::ComputeMix kHostOnly{0, 0, 0, 1};

// The TaskSpec of one lowered task. Builder::add_task and the recorded op
// programs (Replay) both build it here, so a replayed program adds exactly the
// tasks add_task would have added.
inline sim::TaskSpec spec_of(sim::StreamId stream, std::int64_t ns, sim::Category cat, std::uint16_t text, char kind,
                             std::int64_t mem, sim::ResourceList res, std::uint8_t interferes, std::int64_t host_ns = 0,
                             sim::ComputeMix mix = {}, std::int64_t release = 0) {
  sim::TaskSpec t;
  t.mix = mix;
  t.host_ns = std::max<std::int64_t>(0, host_ns);
  t.stream = stream;
  t.duration_ns = std::max<std::int64_t>(0, ns);
  t.category = cat;
  t.text = text;
  t.kind = kind;
  t.resources = res;
  t.interferes = interferes;
  t.memory_delta = mem;
  t.memory_release = release;
  return t;
}

}  // namespace mfusim::step
