// The coarse lowering (LowerOptions::per_layer = false, used by plan): one
// compute task per op, its duration found by playing the op's chains on one
// GPU by the same rules as the per-layer tasks.
#include <algorithm>
#include <cmath>
#include <deque>
#include <stdexcept>

#include "step/builder.h"

namespace mfusim::step {

using layer::Seg;

Builder::Merged Builder::play_merged(const std::vector<Item>* const* chains, std::size_t n) const {
  // The same rules as the per-layer lowering, played on one GPU without
  // other traffic: segments run in order on the compute stream; a segment
  // waits for its chain's previous collective; overlapped TP collectives start
  // after the first GEMM chunk and slow the rest by their footprint (Seg::comm, each
  // segment by its own mix of kernels: layer::seg_slowdown);
  // the two chains of F&B in fb_order's order (a `beside` segment waits for no collective).
  if (n > 2) throw std::logic_error("emit_merged: one or two chains");
  std::vector<FbStep> steps;
  if (n == 2) {
    steps = fb_order(*chains[0], *chains[1], s_.moe.fb_rearrange);
  } else if (n == 1) {
    steps.reserve(chains[0]->size());
    for (std::size_t i = 0; i < chains[0]->size(); ++i) steps.push_back({0, static_cast<std::uint32_t>(i), false});
  }
  Merged m;
  Parts& parts = m.parts;
  std::int64_t t = 0, launch = 0, mem = 0, host = 0, transient_top = 0;
  double flops = 0;
  std::int64_t ready[2] = {0, 0};
  Category ready_cat[2] = {Category::other, Category::other};
  std::int64_t comm_free = 0;   // the TP stream
  const bool tp_overlap = s_.features.tp_comm_overlap;
  // The EP stream: its transfers in the order issued, run back to back, each with the work left
  // (ns at full rate). While the compute stream runs a segment, the transfer at the head slows
  // the segment by its footprint (each kind of kernel by its own curve) and runs slower itself by
  // its `self` factor (an SM-paced kernel beside compute); alone (the chain waits) it runs at full
  // rate. As the per-layer tasks do in the engine.
  struct Transfer { double left; std::size_t chain; hardware::Contention c; };
  std::deque<Transfer> ep_queue;
  int ep_pending[2] = {0, 0};   // the chain's transfers not yet done
  std::int64_t ep_now = 0;      // the EP stream's progress is accounted up to here (<= t)
  auto ep_done = [&](std::int64_t at) {
    const Transfer& x = ep_queue.front();
    --ep_pending[x.chain];
    ready[x.chain] = std::max(ready[x.chain], at);
    ep_queue.pop_front();
  };
  auto full_rate_end = [](const Transfer& x, std::int64_t from) {
    return from + static_cast<std::int64_t>(std::ceil(x.left - 1e-6));
  };
  // From ep_now to `to` the transfers run at full rate: the chain waits, or a TP-overlapped segment
  // ran (played by the TP stream's rule, which does not slow the EP transfer beside it).
  auto ep_idle_to = [&](std::int64_t to) {
    while (!ep_queue.empty() && full_rate_end(ep_queue.front(), ep_now) <= to) {
      ep_now = full_rate_end(ep_queue.front(), ep_now);
      ep_done(ep_now);
    }
    if (!ep_queue.empty() && to > ep_now) ep_queue.front().left -= static_cast<double>(to - ep_now);
    ep_now = std::max(ep_now, to);
  };
  // The chain waits (nothing computes) until its transfers are done.
  auto wait_ep = [&](std::size_t c) {
    ep_idle_to(t);
    while (ep_pending[c] > 0) {
      t = ep_now = full_rate_end(ep_queue.front(), ep_now);
      ep_done(t);
    }
  };
  double seg_ns = 0, attn_ns = 0, mem_ns = 0, mem_coef_ns = 0;   // the op's compute mix (Merged::mix)
  auto compute = [&](const Seg& sg) {
    ep_idle_to(t);
    std::int64_t left = sg.ns;
    while (left > 0 && !ep_queue.empty()) {
      Transfer& x = ep_queue.front();
      const double k = std::max(0.0, seg_slowdown(sg, x.c) - 1.0), f = std::max(1.0, x.c.self);
      if (static_cast<double>(left) * (1 + k) <= x.left * f) {
        const auto dt = static_cast<std::int64_t>(static_cast<double>(left) * (1 + k));
        t += dt;
        x.left -= static_cast<double>(dt) / f;
        return ep_now = t;
      }
      const auto dt = static_cast<std::int64_t>(std::ceil(x.left * f - 1e-6));
      left -= static_cast<std::int64_t>(static_cast<double>(dt) / (1 + k));
      t += dt;
      ep_done(t);
    }
    t += std::max<std::int64_t>(0, left);
    return ep_now = t;
  };
  {
    for (const FbStep& st : steps) {
      const std::size_t c = st.chain;
      const Item& it = (*chains[c])[st.item];
      const Seg& sg = *it.seg;
      if (it.release > 0) transient_top = std::max(transient_top, mem + std::max<std::int64_t>(0, it.mem));
      mem += it.mem - it.release;
      if (!(st.beside && sg.comm_ns <= 0)) {
        const std::int64_t t0 = t;
        wait_ep(c);
        t = std::max(t, ready[c]);
        parts[static_cast<std::size_t>(ready_cat[c])] += t - t0;
      }
      const auto ci = static_cast<std::size_t>(it.cat);
      // A blocking collective: the stream waits, no compute (not in the op's mix); the EP transfers progress
      // meanwhile (the next compute's ep_idle_to).
      if (sg.wait) {
        t += sg.ns;
        parts[ci] += sg.ns;
        continue;
      }
      launch += sg.launch_ns;
      host += sg.host_ns;
      flops += sg.flops;
      seg_ns += static_cast<double>(sg.ns);
      attn_ns += static_cast<double>(sg.ns) * sg.attn_share();
      mem_ns += static_cast<double>(sg.ns) * sg.mem_share();
      mem_coef_ns += static_cast<double>(sg.ns) * sg.mem_share() * sg.mem_coef;
      if (sg.comm_ns <= 0) {
        const std::int64_t t0 = t;
        parts[ci] += compute(sg) - t0;
        continue;
      }
      const bool overlap = sg.comm_overlappable && tp_overlap && sg.ns > 0;
      const bool ep = sg.comm_cat == Category::ep_comm;
      if (overlap && !ep) {
        // The tail beside the collective is the chunked GEMMs (layer::split_overlap).
        const double k = std::max(0.0, sg.comm.gemm - 1.0);
        const std::int64_t head = sg.ns - std::min(sg.ns, sg.overlap_ns), tail = sg.ns - head;
        const std::int64_t cs = std::max(t + head, comm_free), ce = cs + sg.comm_ns;
        // Tail from t+head; slowed by (1+k) while the collective runs.
        const std::int64_t ts = t + head;
        std::int64_t te;
        const std::int64_t before = std::min(tail, std::max<std::int64_t>(0, cs - ts));   // alone before the collective starts
        const std::int64_t left = tail - before;
        const std::int64_t during = ce - std::max(ts + before, cs);
        if (static_cast<double>(left) * (1 + k) <= during) te = ts + before + static_cast<std::int64_t>(left * (1 + k));
        else te = ce + left - static_cast<std::int64_t>(during / (1 + k));
        parts[ci] += te - t;
        t = te;
        comm_free = ce;
        ready[c] = ce;
      } else {
        const std::int64_t t0 = t;
        parts[ci] += compute(sg) - t0;
        if (ep) {
          ep_queue.push_back({static_cast<double>(sg.comm_ns), c, sg.comm});
          ++ep_pending[c];
        } else {
          const std::int64_t cs = std::max(t, comm_free), ce = cs + sg.comm_ns;
          comm_free = ce;
          ready[c] = ce;
        }
      }
      ready_cat[c] = sg.comm_cat;
    }
  }
  for (std::size_t c = 0; c < n; ++c) {
    const std::int64_t t0 = t;
    wait_ep(c);
    t = std::max(t, ready[c]);
    parts[static_cast<std::size_t>(ready_cat[c])] += t - t0;
  }
  m.t = t;
  // The merged task's mix: the shares of its segments' compute (its waits, already played, blend
  // in proportion rather than as GEMM work).
  m.mix.ns = t;
  if (seg_ns > 0) {
    m.mix.attn_ns = static_cast<double>(t) * attn_ns / seg_ns;
    m.mix.mem_ns = static_cast<double>(t) * mem_ns / seg_ns;
  }
  m.mix.mem_coef = mem_ns > 0 ? mem_coef_ns / mem_ns : 0.0;
  m.launch = launch;
  m.host = host;
  m.mem = mem;
  m.transient_top = transient_top;
  m.flops = flops;
  // Gradient-final items in the order the loop above met them.
  for (const FbStep& st : steps) {
    const Item& it = (*chains[st.chain])[st.item];
    if (it.grad_final) m.grad_layers.push_back(it.layer);
  }
  return m;
}

TaskId Builder::emit_merged_task(int rank, const Merged& m, Chain* const* ch, std::size_t n, const Name& name,
                                 int mb, int chunk, char kind, Category cat) {
  const sim::StreamId cs = out_.compute_stream[rank];
  // The merged task holds the op's net change; with a transient above it (the loss's), the task allocates
  // up to the transient's top at its start and frees the difference at its end.
  const bool transient = m.transient_top > std::max<std::int64_t>(0, m.mem);
  TaskId id = add_task(rank, cs, m.t, cat, name, mb, chunk, kind, m.launch, m.flops, transient ? m.transient_top : m.mem, {},
                       0, m.host, layer::mix_of(m.mix), transient ? m.transient_top - m.mem : 0);
  out_.info[static_cast<std::size_t>(id)].parts = static_cast<int>(out_.parts.size());
  out_.parts.push_back(m.parts);
  for (std::size_t c = 0; c < n; ++c) {
    for (TaskId d : ch[c]->pending) out_.graph.depend(d, id);
    ch[c]->pending.clear();
    ch[c]->last = id;
  }
  last_compute_[rank] = id;
  for (std::size_t i = 0; i < m.grad_layers.size(); ++i) {
    // on_grad_final; a counter above 1 is only decremented there (the usual case, done here directly).
    int* c = i < m.grad_counters.size() ? m.grad_counters[i] : nullptr;
    if (c != nullptr && *c > 1) --*c;
    else on_grad_final(rank, m.grad_layers[i], id);
  }
  return id;
}

TaskId Builder::emit_merged(int rank, const std::vector<const std::vector<Item>*>& chains, std::vector<Chain*> ch,
                            const Name& name, int mb, int chunk, char kind, Category cat) {
  // Coarse lowering: play one op's chains (one, or two for F&B) locally and
  // emit a single compute task holding the result.
  if (chains.size() > 2 || ch.size() != chains.size()) throw std::logic_error("emit_merged: one or two chains");
  if (chains.size() == 1 && !items_cache_.empty() && chains[0] >= items_cache_.data() &&
      chains[0] < items_cache_.data() + items_cache_.size()) {   // an items_of list
    const std::size_t key = static_cast<std::size_t>(chains[0] - items_cache_.data()) * static_cast<std::size_t>(p_) +
                            static_cast<std::size_t>(rank);
    if (merged_cache_.size() <= key) {
      merged_cache_.resize(items_cache_.size() * static_cast<std::size_t>(p_));
      merged_built_.resize(merged_cache_.size(), 0);
    }
    Merged& m = merged_cache_[key];
    if (!merged_built_[key]) {
      merged_built_[key] = 1;
      m = play_merged(chains.data(), 1);
      for (int l : m.grad_layers) {
        int* c = nullptr;
        if (stage_of_layer_rank_[rank].count(l) != 0) {
          auto f = grad_remaining_[rank].find(l);
          if (f != grad_remaining_[rank].end()) c = &f->second;
        }
        m.grad_counters.push_back(c);
      }
    }
    return emit_merged_task(rank, m, ch.data(), 1, name, mb, chunk, kind, cat);
  }
  const Merged m = play_merged(chains.data(), chains.size());
  return emit_merged_task(rank, m, ch.data(), ch.size(), name, mb, chunk, kind, cat);
}

}  // namespace mfusim::step
