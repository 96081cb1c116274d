// Host events in the step: loading the micro-batches (on the training thread,
// or on background workers) and Python's garbage-collection pauses.
#include <algorithm>
#include <cmath>
#include <string>

#include "sim/time.h"
#include "step/builder.h"

namespace mfusim::step {


void Builder::add_data_loading() {
  const auto& order = out_.schedule.order;
  auto& g = out_.graph;
  // Loading one micro-batch: features.dataloader_ms_per_sample per sequence, or by default
  // tokenising seq_len tokens at 1M tokens/s on one core plus 1 ms to collate and copy
  // (docs/levers.md: Hugging Face tokenizers, "less than 20 seconds to tokenize a GB of text").
  const double per_sample = s_.features.dataloader_ms_per_sample >= 0
                                ? s_.features.dataloader_ms_per_sample * 1e-3
                                : s_.training.seq_len / 1e6 + 1e-3;
  data_cost_ns_ = sim::checked_ns(per_sample * s_.training.micro_batch, "the data loading of a micro-batch");

  // Data loading with workers: background streams, one per worker; the first
  // 2 * workers micro-batches were prefetched during the previous step
  // (PyTorch DataLoader prefetch_factor = 2).
  data_task_.assign(m_, -1);
  if (s_.features.dataloader_workers > 0 && data_cost_ns_ > 0) {
    const int workers = s_.features.dataloader_workers;
    std::vector<int> first_rank_of(m_, -1);
    for (int r = 0; r < p_; ++r)
      for (const Op& op : order[r])
        if ((op.kind == OpKind::F || op.kind == OpKind::FB) && op.stage == 0 && first_rank_of[op.microbatch] < 0)
          first_rank_of[op.microbatch] = r;
    std::vector<std::vector<sim::StreamId>> ws(p_);
    for (int mb = 2 * workers; mb < m_; ++mb) {
      const int r = first_rank_of[mb] < 0 ? 0 : first_rank_of[mb];
      if (ws[r].empty())
        for (int w = 0; w < workers && w < m_; ++w) ws[r].push_back(g.add_stream(r, "data worker " + std::to_string(w), false));
      data_task_[mb] = add_task(r, ws[r][mb % workers], data_cost_ns_ * workers > 0 ? data_cost_ns_ : 0,
                                Category::dataloader, "load batch mb" + std::to_string(mb), mb, -1, 'D');
    }
  }
}

// Python GC (features.python_gc). Each GPU's training process stops the world
// for a collection of gc_pause_ms, on average every gc_interval_s of training: a
// fraction p = pause / interval of its time. The ranks of one pipeline stage
// (tp * cp * dp of them) synchronise in every TP collective and in the DP
// gradient reduction, so a pause on any of them stalls all: the stage loses the
// union of its peers' pauses, a fraction f = 1 - (1 - p)^peers of wall time
// (independent, unaligned collections; ~ peers * p while that is small). This
// is why unaligned GC hurts at scale (torchtitan PR #148: scheduled GC gained
// ~1.5% per step at 512 GPUs; Megatron-LM --manual-gc: "helps to align the
// timing of the collection across ranks"). The step simulated is the average
// step: the expected stall B * f / (1 - f) over the stage's busy time B, as
// pauses of gc_pause_ms (the last one shorter) spread evenly over its ops and
// staggered between pipeline ranks; other stages see them through the
// pipeline's dependencies. Deterministic.
// Parameters and sources: docs/levers.md.

void Builder::add_gc_pauses(int rank, std::vector<std::int64_t>& pause_before_op) {
  const auto& ops = out_.schedule.order[rank];
  pause_before_op.assign(ops.size() + 1, 0);
  if (ops.empty()) return;
  // Busy-time estimate of this rank's ops (compute and the collectives it waits for), as the time base.
  std::vector<double> start(ops.size() + 1, 0);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    double t = 0;
    if (ops[i].kind != OpKind::FB) {
      // The same sum, in the same order, for every op of one item list: memoised.
      const std::size_t key = items_key(ops[i], true);
      if (busy_of_items_.size() <= key) busy_of_items_.resize(key + 1, std::nan(""));
      if (std::isnan(busy_of_items_[key])) {
        double sum = 0;
        for (const auto& it : items_of(rank, ops[i], true)) sum += (it.seg->ns + it.seg->comm_ns) * 1e-9;
        busy_of_items_[key] = sum;
      }
      t = busy_of_items_[key];
    } else {
      for (bool half : {true, false})
        for (const auto& it : items_of(rank, ops[i], half)) t += (it.seg->ns + it.seg->comm_ns) * 1e-9;
    }
    start[i + 1] = start[i] + t;
  }
  const double busy = start.back();
  const double pause = s_.features.gc_pause_ms * 1e-3, interval = s_.features.gc_interval_s;
  if (!(pause > 0) || !(interval > 0) || !(busy > 0)) return;
  const int peers = std::max(1, s_.gpus / std::max(1, s_.parallel.pp));
  const double p = std::min(1.0, pause / interval);
  const double f = 1.0 - std::pow(1.0 - p, peers);
  const double stall = f >= 1.0 ? busy : busy * f / (1.0 - f);
  const int count = static_cast<int>(std::ceil(stall / pause - 1e-9));
  for (int j = 0; j < count; ++j) {
    const double len = std::min(pause, stall - j * pause);
    // Evenly spread over the rank's busy time, staggered between pipeline ranks
    // (their processes collect independently, not at the same moment).
    const double at = busy * (j + (rank + 0.5) / p_) / count;
    const auto it = std::upper_bound(start.begin(), start.end(), at);
    const std::size_t op = std::min(ops.size() - 1, static_cast<std::size_t>(std::max<std::ptrdiff_t>(0, (it - start.begin()) - 1)));
    pause_before_op[op] += sim::checked_ns(len, "a GC pause");
  }
}

}  // namespace mfusim::step
