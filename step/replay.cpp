// The record/replay speed-up of the per-layer lowering (see replay.h).
#include "step/replay.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "step/builder.h"

namespace mfusim::step {

using layer::Seg;
using layer::split_overlap;

void Replay::record_item(Program& pr, int rank, const Item& it, std::vector<TaskId>& pending, TaskId& last,
                          bool chain_b, std::vector<int>& layers_seen, bool beside) {
  // emit_seg, with task ids relative to the op's first task.
  const sim::StreamId cs = b_.out_.compute_stream[rank];
  auto add = [&](sim::StreamId stream, std::int64_t ns, Category cat, std::uint16_t text, char kind, std::int64_t launch_ns,
                 double flops, std::int64_t mem, sim::ResourceList res, std::uint8_t interferes, std::int64_t host_ns = 0,
                 sim::ComputeMix mix = {}, std::int64_t release = 0) {
    pr.tasks.push_back(spec_of(stream, ns, cat, text, kind, mem, res, interferes, host_ns, mix, release));
    pr.in_b.push_back(chain_b ? 1 : 0);
    TaskInfo info;
    info.launch_ns = launch_ns;
    info.flops = flops;
    pr.info.push_back(info);
    return static_cast<TaskId>(pr.tasks.size() - 1);
  };
  const Seg& sg = *it.seg;
  const bool overlap = sg.comm_ns > 0 && sg.comm_overlappable && b_.s_.features.tp_comm_overlap;
  TaskId head = -1, tail = -1;
  if (overlap && sg.ns > 0) {
    const auto [h, t] = split_overlap(sg);
    head = add(cs, h.ns, it.cat, 0, it.kind, h.launch_ns, h.flops, it.mem, {}, 0, h.host_ns, layer::mix_of(h));
    tail = add(cs, t.ns, it.cat, 0, it.kind, t.launch_ns, t.flops, 0, {}, 0, t.host_ns, layer::mix_of(t), it.release);
  } else {
    head = tail = add(cs, sg.ns, it.cat, sg.wait ? b_.amax_text_ : std::uint16_t{0}, it.kind, sg.launch_ns, sg.flops,
                      it.mem, {}, 0, sg.host_ns, layer::mix_of(sg), it.release);
    pr.info[static_cast<std::size_t>(head)].blocks = it.blocks;
  }
  pr.last_compute = tail;
  if (beside && sg.comm_ns == 0) {   // emit_seg's `beside`: the chain's pending collective stays pending
    if (pending.empty()) last = tail;
  } else {
    for (TaskId d : pending) pr.edges.emplace_back(d, head);
    pending.clear();
    last = tail;
  }
  if (sg.comm_ns > 0) {
    const bool ep = sg.comm_cat == Category::ep_comm;
    const sim::StreamId st = ep ? b_.ep_stream_[rank] : b_.tp_stream_[rank];
    const sim::ResourceId res = sg.comm_nic ? b_.nic_[rank] : b_.nvl_[rank];
    const TaskId c = add(st, sg.comm_ns, sg.comm_cat, ep ? b_.a2a_text_ : b_.tp_text_, 'C', 0, 0, 0, {res},
                         overlap || ep ? b_.interference_class(sg.comm) : std::uint8_t{0});
    pr.edges.emplace_back(overlap ? head : tail, c);
    pending.push_back(c);
    if (overlap) pending.push_back(tail);
    last = c;
  }
  if (it.grad_final) {
    // on_grad_final: only a layer of a stage this rank finishes gradients of counts.
    auto sit = b_.stage_of_layer_rank_[rank].find(it.layer);
    if (sit == b_.stage_of_layer_rank_[rank].end()) return;
    auto rit = b_.grad_remaining_[rank].find(it.layer);
    if (rit == b_.grad_remaining_[rank].end() ||
        std::find(layers_seen.begin(), layers_seen.end(), it.layer) != layers_seen.end()) {
      pr.grad_free = false;   // not the usual shape: always emit item by item
      return;
    }
    layers_seen.push_back(it.layer);
    pr.grad_counters.push_back(&rit->second);
  }
}

Replay::Program& Replay::program_of(int rank, const Op& op) {
  const std::size_t idx = b_.items_key(op, true) * static_cast<std::size_t>(b_.p_) + static_cast<std::size_t>(rank);
  if (programs_.empty()) {   // sized once: references handed out stay valid
    programs_.resize(static_cast<std::size_t>(b_.S_) * 6 * static_cast<std::size_t>(b_.p_));
    program_built_.assign(programs_.size(), 0);
  }
  if (idx >= programs_.size()) throw std::logic_error("lowering: stage " + std::to_string(op.stage) + " out of range");
  Program& pr = programs_[idx];
  if (program_built_[idx]) return pr;
  program_built_[idx] = 1;
  std::vector<TaskId> pending{kExternal};
  std::vector<int> layers_seen;
  for (const Item& it : b_.items_of(rank, op, true)) record_item(pr, rank, it, pending, pr.last, false, layers_seen);
  pr.pending = pending;
  if (!pr.tasks.empty() && (pr.edges.empty() || pr.edges.front() != std::pair<TaskId, TaskId>{kExternal, 0}))
    throw std::logic_error("lowering: op program does not start at its first task");
  for (std::size_t i = 1; i < pr.edges.size(); ++i)
    if (pr.edges[i].first == kExternal) throw std::logic_error("lowering: op program waits for its inputs twice");
  return pr;
}

bool Replay::emit_fb(int rank, Chain& cf, Chain& cb, const Op& op, const std::string& name) {
  const auto& fi = b_.items_of(rank, op, true);
  const auto& bi = b_.items_of(rank, op, false);
  if (fi.empty() || bi.empty()) return false;
  Program& pr = fb_programs_[{b_.items_key(op, true), b_.items_key(op, false), rank}];
  if (pr.tasks.empty()) {
    // The F&B loop of emit_op, in fb_order's order.
    std::vector<TaskId> pf{kExternal}, pb{kExternalB};
    std::vector<int> layers_seen;
    for (const FbStep& st : fb_order(fi, bi, b_.s_.moe.fb_rearrange)) {
      if (st.chain == 0) {
        if (pr.first_f < 0) pr.first_f = static_cast<TaskId>(pr.tasks.size());
        record_item(pr, rank, fi[st.item], pf, pr.last, false, layers_seen, st.beside);
      } else {
        if (pr.first_b < 0) pr.first_b = static_cast<TaskId>(pr.tasks.size());
        record_item(pr, rank, bi[st.item], pb, pr.last_b, true, layers_seen, st.beside);
      }
    }
    pr.pending = pf;
    pr.pending_b = pb;
  }
  if (!pr.grad_free) return false;
  for (const int* c : pr.grad_counters)
    if (*c <= 1) return false;
  for (int* c : pr.grad_counters) --*c;
  auto& g = b_.out_.graph;
  for (std::size_t k = 0; k < pr.tasks.size(); ++k) {
    pr.tasks[k].microbatch = pr.in_b[k] ? op.microbatch_b : op.microbatch;
    pr.tasks[k].chunk = pr.in_b[k] ? op.chunk_b : op.chunk;
  }
  pr.tasks[static_cast<std::size_t>(pr.first_b)].label = sim::Label::backward_mb;   // "B mb<microbatch_b>"
  if (pr.block.size != pr.tasks.size()) pr.block = g.check_block(pr.tasks.data(), pr.tasks.size());
  const TaskId base = g.add_block(pr.tasks.data(), pr.block);
  g.set_name(base + pr.first_f, name);   // the op's name on the F chain's first task
  b_.out_.info.insert(b_.out_.info.end(), pr.info.begin(), pr.info.end());
  auto& edges = edge_scratch_;
  edges.clear();
  auto& wait = b_.p2p_wait_[static_cast<std::size_t>(rank)];
  for (TaskId d : wait) edges.emplace_back(d, base);   // blocking P2P: the first task is on the compute stream
  wait.clear();
  for (const auto& [x, y] : pr.edges) {
    if (x == kExternal || x == kExternalB) {
      for (TaskId d : (x == kExternal ? cf : cb).pending) edges.emplace_back(d, base + y);
    } else {
      edges.emplace_back(base + x, base + y);
    }
  }
  g.depend_all(edges.data(), edges.size());
  cf.pending.clear();
  for (TaskId r : pr.pending) cf.pending.push_back(base + r);
  cb.pending.clear();
  for (TaskId r : pr.pending_b) cb.pending.push_back(base + r);
  cf.last = base + pr.last;
  cb.last = base + pr.last_b;
  b_.last_compute_[static_cast<std::size_t>(rank)] = base + pr.last_compute;
  return true;
}

bool Replay::emit(int rank, Chain& ch, const Op& op) {
  Program& pr = program_of(rank, op);
  if (pr.tasks.empty()) return true;   // no items: nothing to emit
  if (!pr.grad_free) return false;
  // A counter at 1 reaches 0 in this op: on_grad_final may flush a bucket (a
  // task in the middle of the op), so the op is emitted item by item.
  for (const int* c : pr.grad_counters)
    if (*c <= 1) return false;
  for (int* c : pr.grad_counters) --*c;
  auto& g = b_.out_.graph;
  // The recorded tasks, with this op's micro-batch, chunk and label.
  if (pr.tasks.front().microbatch != op.microbatch || pr.tasks.front().chunk != op.chunk)
    for (sim::TaskSpec& t : pr.tasks) {
      t.microbatch = op.microbatch;
      t.chunk = op.chunk;
    }
  pr.tasks.front().label = b_.op_name(op.kind).label;
  if (pr.block.size != pr.tasks.size()) pr.block = g.check_block(pr.tasks.data(), pr.tasks.size());
  const TaskId base = g.add_block(pr.tasks.data(), pr.block);
  b_.out_.info.insert(b_.out_.info.end(), pr.info.begin(), pr.info.end());
  // The edges in emit_seg's order. Blocking pipeline P2P first: the first task
  // is on the compute stream (see add_task).
  // The first recorded edge is (kExternal, 0): the chain's pending tasks to the first task.
  auto& edges = edge_scratch_;
  auto& wait = b_.p2p_wait_[static_cast<std::size_t>(rank)];
  edges.resize(wait.size() + ch.pending.size() + pr.edges.size() - 1);
  auto* e = edges.data();
  for (TaskId d : wait) *e++ = {d, base};
  wait.clear();
  for (TaskId d : ch.pending) *e++ = {d, base};
  for (std::size_t i = 1; i < pr.edges.size(); ++i) *e++ = {base + pr.edges[i].first, base + pr.edges[i].second};
  g.depend_all(edges.data(), edges.size());
  ch.pending.clear();
  for (TaskId r : pr.pending) ch.pending.push_back(base + r);
  ch.last = base + pr.last;
  b_.last_compute_[static_cast<std::size_t>(rank)] = base + pr.last_compute;
  return true;
}

}  // namespace mfusim::step
