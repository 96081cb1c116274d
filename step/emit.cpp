// Ops to tasks: an op's inputs (the previous stage's output, the
// micro-batch's data, the parameter gathers it waits for), then its items as
// compute tasks with their collectives on the rank's communication streams,
// per layer (replayed when it can be, see replay.h) or merged (coarse.cpp).
//
// A segment may be followed by a collective (TP all-reduce, or all-gather +
// reduce-scatter with sequence parallelism; EP all-to-all) on the rank's
// communication stream, which the next segment waits for. With
// tp_comm_overlap the collective starts after the first GEMM chunk of its
// segment and runs beside the rest (Megatron's userbuffer pipelining), slowing
// compute by its kernels' footprint (Seg::comm: a contention class of the
// graph, interference_class; each compute task slows by its own mix of GEMM,
// attention and memory-bound work, Seg's shares as the task's ComputeMix). DualPipe's F&B interleaves the segments
// of a forward and a backward chain so each chain's communication runs
// under the other's compute (fb_order: with EP transfers, as the DeepSeek-V3
// report's Figure 4 arranges a pair of chunks).
#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

#include "step/builder.h"

namespace mfusim::step {

using layer::Seg;

TaskId Builder::add_task(int rank, sim::StreamId stream, std::int64_t ns, Category cat, Name name, int mb,
                         int chunk, char kind, std::int64_t launch_ns, double flops, std::int64_t mem,
                         sim::ResourceList res, std::uint8_t interferes, std::int64_t host_ns, sim::ComputeMix mix,
                         std::int64_t release) {
  sim::TaskSpec t = spec_of(stream, ns, cat, name.id, kind, mem, res, interferes, host_ns, mix, release);
  t.label = name.label;
  t.microbatch = mb;
  t.chunk = chunk;
  TaskId id = name.text.empty() ? out_.graph.add(t) : out_.graph.add(t, std::move(name.text));
  if (static_cast<std::size_t>(id) >= out_.info.size()) out_.info.resize(id + 1);
  out_.info[static_cast<std::size_t>(id)].launch_ns = launch_ns;
  out_.info[static_cast<std::size_t>(id)].flops = flops;
  // Blocking pipeline P2P (features.overlap_p2p_comm = false): the rank's next
  // compute waits for the sends it posted.
  if (rank >= 0 && rank < static_cast<int>(p2p_wait_.size()) && !p2p_wait_[rank].empty() &&
      stream == out_.compute_stream[rank]) {
    for (TaskId d : p2p_wait_[rank]) out_.graph.depend(d, id);
    p2p_wait_[rank].clear();
  }
  return id;
}

std::uint8_t Builder::interference_class(const hardware::Contention& c) {
  return out_.graph.contention_class(std::max(0.0, c.gemm - 1.0), std::max(0.0, c.attention - 1.0), std::max(0.0, c.hbm),
                                     std::max(0.0, c.self - 1.0));
}

std::uint8_t Builder::side_elementwise_class() {
  return out_.graph.uniform_contention_class(hardware::side_elementwise_slowdown() - 1.0, hardware::kSideElementwiseStretch - 1.0);
}

std::vector<FbStep> fb_order(const std::vector<Item>& f, const std::vector<Item>& b, bool rearrange) {
  std::vector<FbStep> out;
  out.reserve(f.size() + b.size());
  const std::vector<Item>* lists[2] = {&f, &b};
  auto ep = [](const Item& it) { return it.seg->comm_ns > 0 && it.seg->comm_cat == Category::ep_comm; };
  const bool any_ep = std::any_of(f.begin(), f.end(), ep) || std::any_of(b.begin(), b.end(), ep);
  if (!any_ep || !rearrange) {
    // One F segment, then one B segment, until both are done: each chain's collective
    // (TP) runs while the other chain's next segment computes.
    for (std::size_t i = 0; i < std::max(f.size(), b.size()); ++i)
      for (std::uint8_t c = 0; c < 2; ++c)
        if (i < lists[c]->size()) out.push_back({c, static_cast<std::uint32_t>(i), false});
    return out;
  }
  // DeepSeek-V3 §3.2.1, Figure 4: a pair of forward and backward chunks, each cut into
  // attention, dispatch, MLP and combine (the backward's attention and MLP also into their
  // input- and weight-gradient parts), rearranged so that every all-to-all of one chain runs
  // beside a whole compute block of the other:
  //   compute  ATTN(F)     MLP(B) MLP(W)  MLP(F)       ATTN(B) ATTN(W)
  //   EP       COMBINE(B)  DISPATCH(F)    DISPATCH(B)  COMBINE(F)
  // As a rule over the two item lists: a chain's turn runs its segments up to the one that
  // starts an EP transfer, then the segments that need nothing from it (`beside`: the shared
  // expert, weight gradients; one met before the transfer waits until the transfer has
  // started); then the other chain takes its turn. The backward chain starts, so that its
  // first transfer (the combine's gradient) runs beside the forward's attention. The
  // collectives are tasks on the rank's EP stream in the order they are started; what
  // overlaps what is the engine's outcome.
  std::size_t pos[2] = {0, 0};
  bool started[2] = {false, false};   // the chain has emitted a segment that waits for its inputs
  std::vector<std::uint32_t> deferred[2];
  auto turn = [&](std::uint8_t c) {
    const auto& L = *lists[c];
    bool issued = false;
    while (pos[c] < L.size() && !issued) {
      const Item& it = L[pos[c]];
      const auto i = static_cast<std::uint32_t>(pos[c]++);
      if (it.seg->beside && started[c]) {
        deferred[c].push_back(i);
        continue;
      }
      out.push_back({c, i, false});
      started[c] = true;
      issued = ep(it);
    }
    for (std::uint32_t i : deferred[c]) out.push_back({c, i, true});
    deferred[c].clear();
    while (pos[c] < L.size() && L[pos[c]].seg->beside)
      out.push_back({c, static_cast<std::uint32_t>(pos[c]++), true});
  };
  std::uint8_t c = b.empty() ? 0 : 1;
  while (pos[0] < f.size() || pos[1] < b.size()) {
    if (pos[c] < lists[c]->size()) turn(c);
    c ^= 1;
  }
  return out;
}

void Builder::emit_seg(int rank, Chain& ch, const Seg& sg, Category cat, const Name& name, int mb, int chunk,
                       char kind, std::int64_t mem, bool beside, std::int64_t release, int blocks) {
  const sim::StreamId cs = out_.compute_stream[rank];
  const bool overlap = sg.comm_ns > 0 && sg.comm_overlappable && s_.features.tp_comm_overlap;
  TaskId head = -1, tail = -1;
  if (overlap && sg.ns > 0) {
    const auto [h, t] = split_overlap(sg);
    head = add_task(rank, cs, h.ns, cat, name, mb, chunk, kind, h.launch_ns, h.flops, mem, {}, 0, h.host_ns, mix_of(h));
    tail = add_task(rank, cs, t.ns, cat, Name(), mb, chunk, kind, t.launch_ns, t.flops, 0, {}, 0, t.host_ns, mix_of(t),
                    release);
  } else {
    const bool amax = sg.wait && name.text.empty() && name.label == sim::Label::text;   // (unnamed: its own label)
    head = tail = add_task(rank, cs, sg.ns, cat, amax ? Name(sim::Label::text, amax_text_) : name, mb, chunk, kind,
                           sg.launch_ns, sg.flops, mem, {}, 0, sg.host_ns, mix_of(sg), release);
    out_.info[static_cast<std::size_t>(head)].blocks = blocks;
  }
  last_compute_[rank] = tail;
  if (beside && sg.comm_ns == 0) {
    // Needs nothing from the chain's pending collective: it stays pending for the next segment.
    if (ch.pending.empty()) ch.last = tail;
    return;
  }
  for (TaskId d : ch.pending) out_.graph.depend(d, head);
  ch.pending.clear();
  ch.last = tail;
  if (sg.comm_ns > 0) {
    const bool ep = sg.comm_cat == Category::ep_comm;
    const sim::StreamId st = ep ? ep_stream_[rank] : tp_stream_[rank];
    const sim::ResourceId res = sg.comm_nic ? nic_[rank] : nvl_[rank];
    TaskId c = add_task(rank, st, sg.comm_ns, sg.comm_cat, Name(sim::Label::text, ep ? a2a_text_ : tp_text_), mb, chunk, 'C', 0, 0, 0,
                        {res}, overlap || ep ? interference_class(sg.comm) : std::uint8_t{0});
    out_.graph.depend(overlap ? head : tail, c);
    ch.pending.push_back(c);
    if (overlap) ch.pending.push_back(tail);
    ch.last = c;
  }
}

namespace {
// The overlapped parameter gather (distributed optimizer) a layer's first segment in the op waits for.
void wait_gather(std::map<int, TaskId>& gathers, const Item& it, Chain& ch) {
  if (gathers.empty()) return;
  auto f = gathers.find(it.layer);
  if (f == gathers.end()) return;
  ch.pending.push_back(f->second);
  gathers.erase(f);
}
}  // namespace

void Builder::emit_items(int rank, Chain& ch, const std::vector<Item>& items, const Name& name, int mb,
                         int chunk, std::map<int, TaskId>* gathers) {
  bool first = true;
  const bool offload = act_offload_on();
  for (std::size_t i = 0; i < items.size(); ++i) {
    const Item& it = items[i];
    if (gathers) wait_gather(*gathers, it, ch);
    if (offload && it.kind != 'F') act_offload_backward(rank, ch, items, i, mb);
    emit_seg(rank, ch, *it.seg, it.cat, first ? name : Name(), mb, chunk, it.kind, it.mem, false, it.release, it.blocks);
    first = false;
    if (offload && it.kind == 'F') act_offload_forward(rank, ch, items, i, mb);
    if (it.grad_final) on_grad_final(rank, it.layer, ch.last);
  }
}

void Builder::emit_op(int rank, const Op& op) {
  // The op's label: a label code for F, B and W (formatted on demand), the text for F&B.
  const Name name = op.kind == OpKind::FB ? Name(label(op)) : op_name(op.kind);
  // Inputs: the previous stage's output as this rank sees it (the send task when it
  // crossed ranks; see publish()), or the micro-batch's data for the first stage.
  auto deps_for = [&](OpKind k, int mb, int stage) {
    std::vector<TaskId> deps;
    if (k == OpKind::F) {
      if (stage > 0) {
        const TaskId prev = f_out_[mb * S_ + stage - 1];
        if (prev < 0) throw std::logic_error("lowering: F of mb " + std::to_string(mb) + " stage " + std::to_string(stage) + " before its input");
        deps.push_back(prev);
      } else if (mb < static_cast<int>(data_task_.size()) && data_task_[mb] >= 0) {
        deps.push_back(data_task_[mb]);
      }
    } else {  // B
      const TaskId prev = stage < S_ - 1 ? b_out_[mb * S_ + stage + 1] : f_out_[mb * S_ + stage];
      if (prev < 0) throw std::logic_error("lowering: B of mb " + std::to_string(mb) + " stage " + std::to_string(stage) + " before its input");
      deps.push_back(prev);
    }
    return deps;
  };
  // Overlapped parameter all-gather (distributed optimizer): a layer's first forward of the step waits
  // for its bucket's gather. Per layer: the wait is attached to the layer's first segment, so later
  // buckets gather while earlier layers compute (Megatron's forward pre-hook); in the coarse lowering
  // the whole op waits for the gathers of all its layers.
  std::map<int, TaskId> gathers;   // layer -> gather task, for this op's forward
  auto param_deps = [&](const std::vector<Item>& items, Chain& ch) {
    auto& pg = param_gather_[rank];
    if (pg.empty()) return;
    for (const auto& it : items) {
      auto f = pg.find(it.layer);
      if (f != pg.end()) {
        if (opt_.per_layer) gathers[it.layer] = f->second;
        else ch.pending.push_back(f->second);
        pg.erase(f);
      }
    }
  };
  if (op.kind == OpKind::F || op.kind == OpKind::B || op.kind == OpKind::W) {
    Chain ch;
    if (op.kind != OpKind::W) ch.pending = deps_for(op.kind, op.microbatch, op.stage);
    if (op.kind == OpKind::F && s_.features.dataloader_workers == 0 && op.stage == 0 &&
        op.microbatch < static_cast<int>(data_task_.size()) && data_cost_ns_ > 0) {
      // Loading on the training thread: on the critical path, just before the micro-batch's forward.
      TaskId d = add_task(rank, out_.compute_stream[rank], data_cost_ns_, Category::dataloader, "load batch", op.microbatch,
                          -1, 'D', 0, 0, 0, {}, 0, 0, kHostOnly);
      for (TaskId x : ch.pending) out_.graph.depend(x, d);
      ch.pending = {d};
    }
    const auto& items = items_of(rank, op, true);
    if (op.kind == OpKind::F) param_deps(items, ch);
    if (fsdp_active()) {
      fsdp_emit(rank, ch, items, name, op);   // ZeRO-3: per-unit gathers and reduce-scatters (step/fsdp.cpp)
    } else if (opt_.per_layer) {
      if (!gathers.empty()) {
        emit_items(rank, ch, items, name, op.microbatch, op.chunk, &gathers);
      } else if (act_offload_on() || !replay_.emit(rank, ch, op)) {   // (offloading: item by item)
        emit_items(rank, ch, items, name, op.microbatch, op.chunk);
      }
    } else {
      const Category cat = op.kind == OpKind::F ? Category::forward
                           : op.kind == OpKind::B ? Category::backward : Category::weight_grad;
      const char k = op.kind == OpKind::F ? 'F' : op.kind == OpKind::B ? 'B' : 'W';
      emit_merged(rank, {&items}, {&ch}, name, op.microbatch, op.chunk, k, cat);
    }
    if (op.kind == OpKind::F) publish(rank, OpKind::F, op.microbatch, op.stage, ch.last);
    if (op.kind == OpKind::B) publish(rank, OpKind::B, op.microbatch, op.stage, ch.last);
    return;
  }
  // F&B: interleave the segments of the forward and the backward chain.
  Chain cf, cb;
  cf.pending = deps_for(OpKind::F, op.microbatch, op.stage);
  cb.pending = deps_for(OpKind::B, op.microbatch_b, op.stage_b);
  const auto& fi = items_of(rank, op, true);
  const auto& bi = items_of(rank, op, false);
  param_deps(fi, cf);
  if (!opt_.per_layer) {
    emit_merged(rank, {&fi, &bi}, {&cf, &cb}, name, op.microbatch, op.chunk, 'F', Category::forward);
    publish(rank, OpKind::F, op.microbatch, op.stage, cf.last);
    publish(rank, OpKind::B, op.microbatch_b, op.stage_b, cb.last);
    return;
  }
  if (gathers.empty() && replay_.emit_fb(rank, cf, cb, op, name.text)) {
    publish(rank, OpKind::F, op.microbatch, op.stage, cf.last);
    publish(rank, OpKind::B, op.microbatch_b, op.stage_b, cb.last);
    return;
  }
  bool first_f = true, first_b = true;
  for (const FbStep& st : fb_order(fi, bi, s_.moe.fb_rearrange)) {
    if (st.chain == 0) {
      const Item& it = fi[st.item];
      if (!st.beside) wait_gather(gathers, it, cf);
      emit_seg(rank, cf, *it.seg, it.cat, first_f ? name : Name(), op.microbatch, op.chunk, it.kind, it.mem, st.beside,
               it.release, it.blocks);
      first_f = false;
      if (it.grad_final) on_grad_final(rank, it.layer, st.beside ? last_compute_[rank] : cf.last);
    } else {
      const Item& it = bi[st.item];
      emit_seg(rank, cb, *it.seg, it.cat, first_b ? Name(sim::Label::backward_mb) : Name(), op.microbatch_b,
               op.chunk_b, it.kind, it.mem, st.beside, it.release, it.blocks);
      // A weight gradient emitted beside a pending collective is the chain's last compute, not its last task.
      if (it.grad_final) on_grad_final(rank, it.layer, st.beside ? last_compute_[rank] : cb.last);
      first_b = false;
    }
  }
  publish(rank, OpKind::F, op.microbatch, op.stage, cf.last);
  publish(rank, OpKind::B, op.microbatch_b, op.stage_b, cb.last);
}

}  // namespace mfusim::step
