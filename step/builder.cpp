// The step builder's skeleton: the schedule and the stages, the streams of
// each rank, which layers each rank holds, and the order in which the ops of
// all ranks are emitted (see builder.h for who owns the rest).
#include "step/builder.h"

#include "layer/moe_dispatch.h"

#include <algorithm>
#include <map>
#include <string>

#include "models/accounting.h"
#include "sim/process_memory.h"

namespace mfusim::step {

using schedules::PipelineShape;

namespace {
// What a rank's static memory keeps on the GPU through the step: its parameters and optimizer state, and its
// gradient buffer unless the backward allocates the gradients (no DDP buckets: Lowered::lazy_grads).
double resident_static_bytes(const config::Scenario& s, const models::StaticMemory& sm) {
  return sm.params + (models::grads_only_in_backward(s) ? 0.0 : sm.grads) + sm.optimizer;
}
}  // namespace

Lowered Builder::run() {
  plan();
  add_streams();
  assign_ranks();
  add_static_memory();
  add_data_loading();
  add_param_gathers();
  // GC pauses, per rank, inserted before ops.
  std::vector<std::vector<std::int64_t>> gc_before(p_);
  if (s_.features.python_gc)
    for (int r = 0; r < p_; ++r) add_gc_pauses(r, gc_before[r]);
  if (opt_.per_layer) {
    const std::size_t n = out_.graph.size() + estimate_tasks();
    out_.graph.reserve(n);
    out_.info.reserve(n);
    sim::advise_huge_storage(out_.info);
  }
  emit_ops(gc_before);
  add_grad_reduce_and_optimizer();
  if (!s_.features.optimizer_post_validation) add_optimizer_sync();
  out_.send_target = send_target_;
  return std::move(out_);
}

void Builder::plan() {
  const auto& P = s_.parallel;
  p_ = P.pp;
  m_ = s_.microbatches();
  sched_ = config::to_string(s_.schedule.name);
  layers_.place();
  out_.warnings = layers_.placement().warnings;
  out_.sync_group_ranks = models::sync_group_ranks(s_);
  out_.sync_pace = layers_.sync_pace();
  if (hardware::board_sd(s_.calibration ? &*s_.calibration : nullptr, s_.board_spread) > 0 && s_.gpus > 1 &&
      out_.sync_pace > 1.0)
    out_.job_boards = s_.gpus;
  emb_cost_ = layers_.end_cost(true);
  head_cost_ = layers_.end_cost(false);
  head_mem_blocks();
  if (s_.model.mtp_depth > 0) mtp_cost_ = layers_.mtp_cost();
  const PipelineShape shape = pipeline_shape(s_);
  // A schedule planned from costs (zb-auto) gets this scenario's per-stage costs.
  out_.schedule = sched_ == "zb-auto" ? schedules::generate(sched_, shape, zb_auto_costs())
                                      : schedules::generate(sched_, shape);
  S_ = out_.schedule.stages;
  out_.ranks = p_;
  split_w_ = out_.schedule.split_w;
  out_.stage_layers = split_layers(s_, S_);
  plan_amax_reduction();
}

// The per-stage costs zb-auto plans from (one virtual stage per rank): one micro-batch's F, B (with the
// recomputation before it) and W on each rank, the sums of its layers' pass costs plus the embedding on
// the first stage and the LM head and loss on the last; comm = one activation's stage-to-stage send;
// the share of a micro-batch's activations kept from B to W (the W stash) from the memory model.
schedules::StageCosts Builder::zb_auto_costs() {
  const auto stages = split_layers(s_, p_);
  schedules::StageCosts c;
  c.max_inflight = s_.schedule.max_inflight;
  auto pass_s = [](const layer::PassCost& pc) {
    double ns = 0;
    for (const auto& sg : pc.segs) ns += static_cast<double>(sg.ns) + static_cast<double>(sg.comm_ns);
    return ns * 1e-9;
  };
  const bool recompute = s_.features.recompute != config::Recompute::none;
  double act = 0, stash = 0;
  for (int r = 0; r < p_; ++r) {
    double f = 0, b = 0, w = 0;
    const double act_before = act;
    auto add = [&](const layer::LayerCost& lc, bool layer) {
      f += pass_s(lc.f);
      b += pass_s(lc.b) + (layer && recompute ? pass_s(lc.r) : 0.0);
      w += pass_s(lc.w);
      act += lc.act_bytes + (layer && recompute ? lc.recompute_bytes : 0.0);
      stash += layer ? lc.stash_bytes : 0.0;
    };
    if (r == 0) add(emb_cost_, false);
    for (int l : stages[static_cast<std::size_t>(r)]) add(layers_.layer_cost(l), true);
    if (r == p_ - 1) add(head_cost_, false);
    for (int d = 0; r == p_ - 1 && d < s_.model.mtp_depth; ++d) {   // MTP: a module and the head once more
      add(mtp_cost_, true);
      add(head_cost_, false);
    }
    // Delayed scaling's amax all-reduces (op_items.cpp), over the rank's one stage here.
    const auto n = static_cast<double>(stages[static_cast<std::size_t>(r)].size());
    f += amax_seconds(true, n);
    b += amax_seconds(false, n);
    c.f.push_back(f);
    c.b.push_back(b);
    c.w.push_back(w);
    c.activation.push_back(act - act_before);
  }
  // Relative to rank 0's (see StageCosts::activation); all equal when rank 0 holds none. What each rank
  // holds whatever the schedule (its weights, gradients and optimizer state) in the same unit.
  const double act0 = c.activation.empty() ? 0.0 : c.activation.front();
  if (act0 > 0)
    for (int r = 0; r < p_; ++r) {
      const auto& layers = stages[static_cast<std::size_t>(r)];
      const models::StaticMemory sm = models::rank_static_memory(s_, layers, r == 0, r == p_ - 1, layers_.shape().fp32_autocast);
      c.fixed.push_back(resident_static_bytes(s_, sm) / act0);
    }
  for (double& a : c.activation) a = act0 > 0 && a > 0 ? a / act0 : 1.0;
  c.w_memory_fraction = act > 0 ? std::clamp(stash / act, 0.0, 1.0) : 1.0;
  if (p_ > 1) {
    const double bytes = models::layer_comm(s_.model, 0, layers_.shape()).pp_bytes;
    c.comm = layers_.coll(hardware::Collective::send_recv, bytes, layers_.placement().pp_link);
  }
  return c;
}

void Builder::head_mem_blocks() {
  // In bytes as the lowering counts them: the head's activations as before (act_bytes), split into
  // the inputs and what the loss keeps; the transients each a block of its own (run 34's tensors).
  const models::HeadMemory hm = models::head_memory(s_.model, layers_.shape());
  const auto act = static_cast<std::int64_t>(head_cost_.act_bytes);
  out_.mem_blocks.clear();
  if (hm.forward.empty() && hm.backward.empty()) return;
  const auto inputs = std::min(act, static_cast<std::int64_t>(hm.inputs));
  const std::int64_t saved = act - inputs;
  out_.mem_blocks.resize(2);
  auto& f = out_.mem_blocks[0];
  auto& b = out_.mem_blocks[1];
  f.at_start = {inputs, saved};
  for (double x : hm.forward) f.at_start.push_back(static_cast<std::int64_t>(x));
  f.at_end.assign(f.at_start.begin() + 2, f.at_start.end());
  for (double x : hm.backward) b.at_start.push_back(static_cast<std::int64_t>(x));
  b.at_end = {saved};
  b.at_end.insert(b.at_end.end(), b.at_start.begin(), b.at_start.end());
  b.at_end.push_back(inputs);
}

void Builder::allocate_lazy_grads(int rank, const Op& op) {
  // The stage whose weight gradients this op produces (B without a split W, W, an F&B pair's B).
  int stage = -1;
  if ((op.kind == OpKind::B && !op.split_w) || op.kind == OpKind::W) stage = op.stage;
  else if (op.kind == OpKind::FB && !op.split_w) stage = op.stage_b;
  if (stage < 0) return;
  auto& done = grads_allocated_[static_cast<std::size_t>(rank)];
  const auto at = std::lower_bound(done.begin(), done.end(), stage);
  if (at != done.end() && *at == stage) return;
  // The rank's gradients with this stage's minus without it (a tied embedding on a rank holding the first
  // and the last stage is one tensor: counted once, as the rank's static accounting counts it).
  auto grads_of = [&] {
    const HeldLayers h = held_layers(out_.stage_layers, done);
    return models::rank_static_memory(s_, h.layers, h.embedding, h.head, layers_.shape().fp32_autocast).grads;
  };
  const double before = grads_of();
  done.insert(at, stage);
  const auto b = static_cast<std::int64_t>(grads_of() - before);
  if (b <= 0) return;
  // autograd's AccumulateGrad allocates each parameter's .grad as its weight gradient is produced: over the
  // op, while the op's activations are freed. Allocated by the op's last compute task here (at its start,
  // kept; the memory in between lies between the op's two ends). In the coarse lowering the op is one task:
  // the gradients are then held beside the op's activations from its start, an overstatement of up to the
  // stage's gradients (a task of its own after the op would split the rank's idle time and move bubble into
  // imbalance in the breakdown).
  const TaskId t = last_compute_[static_cast<std::size_t>(rank)];
  if (t < 0) return;
  out_.graph.add_allocation(t, b);
  auto& info = out_.info[static_cast<std::size_t>(t)];
  info.blocks = -1;   // (a head task's loss blocks no longer sum to it: one block each way)
  out_.lazy_grads.emplace_back(t, b);
  lazy_grad_bytes_[static_cast<std::size_t>(rank)] += static_cast<double>(b);
}

void Builder::add_streams() {
  const auto& P = s_.parallel;
  auto& g = out_.graph;
  tp_text_ = g.text("tp collective");
  a2a_text_ = g.text("all-to-all");
  amax_text_ = g.text("fp8 amax all-reduce");
  tp_stream_.resize(p_); ep_stream_.resize(p_); pp_fwd_stream_.resize(p_); pp_bwd_stream_.resize(p_);
  dp_stream_.resize(p_); nvl_.resize(p_); nic_.resize(p_);
  out_.compute_stream.resize(p_);
  p2p_wait_.assign(p_, {});
  for (int r = 0; r < p_; ++r) {
    out_.compute_stream[r] = g.add_stream(r, "compute", true);
    if (P.tp > 1) tp_stream_[r] = g.add_stream(r, "tp", false);
    if (P.ep > 1 && s_.model.is_moe()) ep_stream_[r] = g.add_stream(r, "ep", false);
    if (p_ > 1) {
      pp_fwd_stream_[r] = g.add_stream(r, "pp send fwd", false);
      pp_bwd_stream_[r] = g.add_stream(r, "pp send bwd", false);
    }
    dp_stream_[r] = g.add_stream(r, "dp", false);
    nvl_[r] = g.add_resource("nvlink r" + std::to_string(r));
    nic_[r] = g.add_resource("nic r" + std::to_string(r));
  }
  act_offload_plan();
  f_out_.assign(static_cast<std::size_t>(m_) * S_, -1);
  b_out_.assign(static_cast<std::size_t>(m_) * S_, -1);
  f_runner_.assign(static_cast<std::size_t>(m_) * S_, -1);
  b_runner_.assign(static_cast<std::size_t>(m_) * S_, -1);
  bucket_fill_.assign(p_, 0);
  expert_fill_.assign(p_, 0);
  dp_tasks_.assign(p_, {});
  grad_remaining_.assign(p_, {});
  stage_of_layer_rank_.assign(p_, {});
  param_gather_.assign(p_, {});
  last_compute_.assign(p_, -1);
}

// Which layers each rank holds, and how many gradient-finishing passes each gets per step.
void Builder::assign_ranks() {
  const auto& order = out_.schedule.order;
  rank_stages_.assign(p_, {});
  std::vector<int> grad_passes(static_cast<std::size_t>(S_));   // of the rank, per stage
  for (int r = 0; r < p_; ++r) {
    std::fill(grad_passes.begin(), grad_passes.end(), 0);
    for (const Op& op : order[r]) {
      auto note = [&](int stage, bool grad) {
        if (std::find(rank_stages_[r].begin(), rank_stages_[r].end(), stage) == rank_stages_[r].end())
          rank_stages_[r].push_back(stage);
        if (grad) grad_passes[static_cast<std::size_t>(stage)] += 1;
      };
      if (op.kind == OpKind::F || op.kind == OpKind::FB) f_runner_[op.microbatch * S_ + op.stage] = r;
      if (op.kind == OpKind::B) b_runner_[op.microbatch * S_ + op.stage] = r;
      if (op.kind == OpKind::FB) b_runner_[op.microbatch_b * S_ + op.stage_b] = r;
      if (op.kind == OpKind::F) note(op.stage, false);
      else if (op.kind == OpKind::W) note(op.stage, true);
      else if (op.kind == OpKind::B) note(op.stage, !op.split_w);
      else if (op.kind == OpKind::FB) { note(op.stage, false); note(op.stage_b, !op.split_w); }
    }
    for (int st = 0; st < S_; ++st)
      if (grad_passes[static_cast<std::size_t>(st)] > 0)
        for (int l : out_.stage_layers[st]) {
          stage_of_layer_rank_[r][l] = st;
          grad_remaining_[r][l] += grad_passes[static_cast<std::size_t>(st)];
        }
  }
}

// Static memory per rank, and the parameters per rank for DP buckets.
void Builder::add_static_memory() {
  const auto& P = s_.parallel;
  const auto& shape = layers_.shape();
  out_.static_bytes.assign(p_, 0);
  out_.params_bytes.assign(p_, 0);
  for (auto* v : {&out_.dp_grad_bytes, &out_.expert_dp_grad_bytes, &out_.dp_gather_bytes, &out_.expert_dp_gather_bytes,
                  &out_.sp_grad_allreduce_bytes, &out_.sharded_grad_bytes, &out_.sharded_gather_bytes})
    v->assign(static_cast<std::size_t>(p_), 0.0);
  out_.grads_bytes.assign(p_, 0);
  out_.optimizer_bytes.assign(p_, 0);
  rank_params_.assign(p_, 0);
  rank_linear_params_.assign(p_, 0);
  // The plain PyTorch recipe (fp32 master weights under torch.autocast; validation/train_step.py) sets its
  // gradients to None after each optimizer step (zero_grad(set_to_none=True), torch's default since 2.0):
  // they are allocated during the backward. With data parallelism DDP's buckets (gradient_as_bucket_view
  // False, its default: "the saved memory size will be equal to the total gradients size" when True) stay
  // static besides them. PyTorch FSDP (zero_stage >= 2 here, torchtitan's and the FSDP1 trainers'
  // zero_grad) likewise: the sharded gradients are allocated by the backward's reduce-scatters (run 35: a
  // one-rank FSDP2 step peaks 7.2 GiB, its whole fp32 gradient, under a model that held them from the
  // start); with offloading they live on the host.
  lazy_grads_ = models::backward_allocates_grads(s_);
  grads_allocated_.assign(static_cast<std::size_t>(p_), {});
  lazy_grad_bytes_.assign(static_cast<std::size_t>(p_), 0.0);
  for (int r = 0; r < p_; ++r) {
    const HeldLayers h = held_layers(out_.stage_layers, rank_stages_[r]);
    rank_params_[r] = models::static_memory(s_.model, h.layers, h.embedding, h.head, P.tp, P.ep, P.dp,
                                            P.distributed_optimizer, shape.fp32_autocast).params /
                      models::param_bytes(shape.fp32_autocast);
    rank_linear_params_[r] = models::linear_weights(s_.model, h.layers, h.head, P.tp, P.ep);
    const models::StaticMemory sm = models::rank_static_memory(s_, h.layers, h.embedding, h.head, shape.fp32_autocast);
    out_.params_bytes[r] = sm.params;
    out_.grads_bytes[r] = sm.grads;
    out_.optimizer_bytes[r] = sm.optimizer;
    out_.static_bytes[r] = resident_static_bytes(s_, sm);
    if (models::grads_only_in_backward(s_)) {   // no DDP buckets: allocated in the backward (Lowered::lazy_grads)
      out_.grads_bytes[r] = 0;
    }
    // An EMA of the weights (moe.ema): an fp32 copy in HBM, or none with moe.ema_on_cpu
    // (DeepSeek-V3 §3.2.3: kept in CPU memory and updated asynchronously after each step).
    if (s_.moe.ema && !s_.moe.ema_on_cpu) out_.static_bytes[r] += 4.0 * rank_params_[r];
  }
}

// Without optimizer post-validation (Megatron's default) the optimizer step checks the global gradient
// norm and inf/NaN first: an all-reduce of a few scalars over every rank, after every rank's last
// backward and gradient reduction; every rank's optimizer waits for it. Its own time (a latency of
// tens of microseconds) is not modelled: the synchronisation is the dependency, each rank's optimizer
// after the last pipeline rank to finish. With post-validation (Zero Bubble §4) the check runs after
// the step and each rank's optimizer follows its own work only.
void Builder::add_optimizer_sync() {
  if (p_ <= 1) return;
  auto& g = out_.graph;
  const auto& tasks = g.tasks();
  std::vector<TaskId> optim(p_, -1), before(p_, -1), reduce(p_, -1);
  std::map<TaskId, int> rank_of;
  for (int r = 0; r < p_; ++r) {
    const auto& q = g.stream_tasks(out_.compute_stream[r]);
    for (std::size_t i = 0; i < q.size(); ++i)
      if (tasks[static_cast<std::size_t>(q[i])].category == Category::optimizer) {
        optim[r] = q[i];
        before[r] = i > 0 ? q[i - 1] : -1;
        rank_of[q[i]] = r;
        break;
      }
  }
  // The optimizer's latest predecessor off the compute stream (the last gradient reduction).
  for (const auto& [a, b] : g.edges()) {
    const auto it = rank_of.find(static_cast<TaskId>(b));
    if (it == rank_of.end() || static_cast<TaskId>(a) == before[it->second]) continue;
    reduce[it->second] = std::max(reduce[it->second], static_cast<TaskId>(a));
  }
  for (int r = 0; r < p_; ++r) {
    if (optim[r] < 0) continue;
    for (int q = 0; q < p_; ++q) {
      if (q == r) continue;
      if (before[q] >= 0) g.depend(before[q], optim[r]);
      if (reduce[q] >= 0) g.depend(reduce[q], optim[r]);
    }
  }
}

// Emit ops in an order that respects cross-rank inputs: round-robin over
// ranks, each emitting ops while their inputs exist.
void Builder::emit_ops(const std::vector<std::vector<std::int64_t>>& gc_before) {
  const auto& order = out_.schedule.order;
  std::vector<std::size_t> next(p_, 0);
  std::size_t remaining = 0;
  for (const auto& v : order) remaining += v.size();
  auto ready = [&](const Op& op) {
    auto f_ok = [&](int mb, int st) { return st == 0 || f_out_[mb * S_ + st - 1] >= 0; };
    auto b_ok = [&](int mb, int st) {
      return st == S_ - 1 ? f_out_[mb * S_ + st] >= 0 : b_out_[mb * S_ + st + 1] >= 0;
    };
    switch (op.kind) {
      case OpKind::F: return f_ok(op.microbatch, op.stage);
      case OpKind::B: return b_ok(op.microbatch, op.stage);
      case OpKind::W: return true;
      case OpKind::FB:
        // The backward half may depend on the forward half of the same op only through
        // another stage; both inputs must exist before the pair is emitted.
        return f_ok(op.microbatch, op.stage) && b_ok(op.microbatch_b, op.stage_b);
    }
    return false;
  };
  while (remaining > 0) {
    bool progress = false;
    for (int r = 0; r < p_; ++r) {
      while (next[r] < order[r].size() && ready(order[r][next[r]])) {
        const std::size_t k = next[r];
        if (!gc_before[r].empty() && gc_before[r][k] > 0) {
          TaskId gc = add_task(r, out_.compute_stream[r], gc_before[r][k], Category::gc, "python gc", -1, -1, 'G', 0, 0, 0,
                               {}, 0, 0, kHostOnly);
          last_compute_[r] = gc;
        }
        const auto first = static_cast<TaskId>(out_.graph.size());
        emit_op(r, order[r][k]);
        describe_op(r, order[r][k], first);
        if (lazy_grads_) allocate_lazy_grads(r, order[r][k]);
        ++next[r];
        --remaining;
        progress = true;
      }
    }
    if (!progress) {
      std::string msg = "schedule '" + sched_ + "' cannot proceed; waiting ops:";
      for (int r = 0; r < p_; ++r)
        if (next[r] < order[r].size()) msg += "\n  rank " + std::to_string(r) + ": " + label(order[r][next[r]]);
      throw sim::Deadlock(msg);
    }
  }
}

}  // namespace mfusim::step
