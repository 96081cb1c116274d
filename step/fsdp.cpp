// ZeRO-2/3, FSDP and HSDP in the step (docs/fsdp.md).
//
// ZeRO-3 (FSDP FULL_SHARD): the model is cut into units (each transformer
// block, the embedding, the LM head with the final norm). Before a unit's
// forward, and again before its backward unless it stayed gathered
// (reshard_after_forward = false, or FSDP2's root and torchtitan's last
// block), its parameters are all-gathered over the shard group on the rank's
// all-gather stream; the gather of unit j is issued when unit j - prefetch
// starts (the end of unit j - prefetch - 1), the first ones when the op
// starts. The unit's first compute segment waits for its gather. The gathered
// buffer is allocated when the gather starts and freed after the unit's
// compute (reshard). After the unit's weight gradients (B, or W when split)
// its unsharded gradient is reduce-scattered over the shard group on the
// rank's reduce-scatter stream (every micro-batch with pp = 1, FSDP2's
// default; once per step with pp > 1, torch.distributed.pipelining's no-sync
// on all but the last backward), then, with HSDP, all-reduced across the
// replica groups (1/shard of the bytes). Collectives use the NVLink or NIC
// resource of the rank, shared with everything else. With expert parallelism
// (ep > 1) a unit's routed experts are their own FSDP module, sharded over the
// members of the shard group that hold the same experts (shard x cp / ep of
// them: torchtitan's dp_shard_mod_ep mesh, Megatron-FSDP's expert-data-parallel
// group, as models::sharded_static_memory holds them): gathered and
// reduce-scattered over that group, beside the dense parameters' collectives.
//
// ZeRO-2 (and HSDP or offload at stages 1-2): gradient buckets as in
// data_parallel.cpp, reduce-scattered over the shard group (+ the replica
// all-reduce), parameters replicated and gathered after the optimizer.
//
// Offload: the optimizer step runs on the host; the gradient shard goes over
// PCIe to the host, the host's Adam runs at the host's memory bandwidth per GPU
// (hardware host_memory_bandwidth_gbs), the updated bf16 parameter shard comes
// back. With parameter offload (ZeRO-3) the rank's bf16 shard of a unit also
// crosses PCIe to the GPU before every all-gather of that unit (docs/fsdp.md).
//
// The end of the step (add_sharded_reduce_and_optimizer): on more than one GPU, each rank's gradient
// norm over its shard and one all-reduce of it over every rank before any optimizer step, then torch's
// clip multiply where the framework always scales; with tied embeddings on a pipeline, the first and
// last stage's all-reduce of the embedding's gradient shard.
#include <algorithm>

#include "hardware/cost_model.h"
#include "layer/moe_dispatch.h"
#include "models/memory.h"
#include "sim/time.h"
#include "step/builder.h"

namespace mfusim::step {

using hardware::Collective;
using hardware::Group;

namespace {
constexpr int kEmbUnit = -2, kHeadUnit = -3;

// One copy kernel of FSDP2's all-gather copy-out or reduce-scatter copy-in (a memory-bound
// kernel at the calibration's copy bandwidth).
hardware::Kernel fsdp_copy_kernel(const char* name, double read, double write) {
  hardware::Kernel k;
  k.kind = hardware::KernelKind::memory;
  k.name = name;
  k.bytes = read + write;
  k.count = 1;
  return k;
}

// A group of k consecutive members of g (HSDP's shard group).
Group first_of(const Group& g, int k) {
  if (k >= g.size) return g;
  if (g.per_domain >= k) return Group{k, 1, k};
  return Group{k, (k + g.per_domain - 1) / g.per_domain, g.per_domain};
}

// One member of each run of k consecutive members of g (HSDP's replica group across the shard groups).
Group one_of_each(const Group& g, int k) {
  k = std::max(1, k);
  Group r;
  r.size = std::max(1, g.size / k);
  r.per_domain = std::min(g.per_domain >= k ? std::max(1, g.per_domain / k) : 1, r.size);
  r.domains = std::max(1, (r.size + r.per_domain - 1) / r.per_domain);
  return r;
}
}  // namespace

bool Builder::zero_sharded() const { return models::zero_sharded(s_); }

bool Builder::fsdp_active() const { return s_.parallel.zero() == 3 && s_.parallel.dp * s_.parallel.cp > 1; }

// The shard group: shard_degree data-parallel ranks times the context-parallel ranks inside them
// (torchtitan's dp_shard_cp mesh).
Group Builder::fsdp_shard_group() const {
  const auto& pl = layers_.placement();
  const Group d = first_of(pl.dp, s_.parallel.shard());
  const Group c = pl.cp;
  Group g;
  g.size = c.size * d.size;
  g.per_domain = c.domains > 1 ? c.per_domain : c.size * d.per_domain;
  g.domains = std::max(1, (g.size + g.per_domain - 1) / g.per_domain);
  return g;
}

Group Builder::fsdp_expert_shard_group() const {
  const auto& P = s_.parallel;
  if (P.ep <= 1) return fsdp_shard_group();
  return first_of(layer::expert_dp_group(s_), std::max(1, P.shard() * P.cp / P.ep));
}

// The routed experts' replica group (HSDP): the ranks that hold the same experts in the other shard groups,
// the expert-data-parallel group's dp x cp / ep ranks over the expert shard group's.
Group Builder::fsdp_expert_replica_group() const {
  if (s_.parallel.ep <= 1) return fsdp_replica_group();
  return one_of_each(layer::expert_dp_group(s_), fsdp_expert_shard_group().size);
}

// The replica group: one rank of each shard group (HSDP's all-reduce).
Group Builder::fsdp_replica_group() const { return one_of_each(layers_.placement().dp, s_.parallel.shard()); }

// Reduce `params` parameters' gradients after `after`: reduce-scatter over the shard group (the expert
// shard group for routed experts), then (HSDP) all-reduce of the shard across replicas; frees
// `grad_buffer` bytes at the end. Experts held whole by every member of their shard group with no
// replicas to sum over need no reduction.
TaskId Builder::fsdp_reduce(int rank, double params, TaskId after, std::int64_t grad_buffer, bool experts) {
  auto& g = out_.graph;
  const sim::StreamId st = fsdp_active() ? fsdp_rs_stream_[rank] : dp_stream_[rank];
  const double bytes = params * (s_.features.reduce_fp32 ? 4.0 : 2.0);
  const Group sg = experts ? fsdp_expert_shard_group() : fsdp_shard_group();
  const Group rg = experts ? fsdp_expert_replica_group() : fsdp_replica_group();
  if (experts && sg.size <= 1 && rg.size <= 1) {
    if (grad_buffer <= 0) return after;
    TaskId fr = add_task(rank, st, 0, Category::dp_comm, Name(), -1, -1, 'M', 0, 0, -grad_buffer);
    if (after >= 0) g.depend(after, fr);
    return fr;
  }
  // PyTorch's FSDP works over the unit's whole unsharded gradient on the reduce-scatter stream before
  // the collective (Megatron-FSDP accumulates into its fp32 main_grad: nothing here):
  //  * FSDP2's foreach_reduce copies the unit's bf16 gradients into the reduce-scatter input in the
  //    reduce dtype (torch._chunk_cat): 2 bytes read, 2 or 4 written; the averaging is NCCL's.
  //  * FSDP1 (FlatParameter, torch/distributed/fsdp/_runtime_utils.py _post_backward_hook /
  //    _reduce_grad) casts the bf16 gradient to the reduce dtype when it differs (2 read, 4 written)
  //    and pre-divides it in place by _get_gradient_predivide_factor(world size) (> 1 from 2 ranks:
  //    4 + 4 bytes in fp32, 2 + 2 in bf16); the post-division of the shard is 1 / size of that.
  TaskId copy_in = -1;
  const auto& F = s_.features;
  hardware::Kernel k;
  const char* task_name = nullptr;
  if (fsdp_active() && !F.megatron_fsdp) {
    if (F.fsdp_version == 2) {
      k = fsdp_copy_kernel("fsdp_copy_in", 2.0 * params, bytes);
      task_name = "fsdp reduce copy-in";
    } else if (sg.size > 1) {
      const double shard = bytes / sg.size;
      k = fsdp_copy_kernel("fsdp1_grad_cast_divide", (F.reduce_fp32 ? 2.0 * params : 0.0) + bytes + shard,
                           (F.reduce_fp32 ? bytes : 0.0) + bytes + shard);
      task_name = "fsdp1 grad cast + divide";
    }
  }
  if (task_name) {
    const layer::Seg cs = layers_.seg_of({&k});
    // Not hidden under the backward beside it (run 39): its own contention class.
    copy_in = add_task(rank, st, cs.ns, Category::dp_comm, task_name, -1, -1, 'C', cs.launch_ns, 0, 0, {},
                       side_elementwise_class(), cs.host_ns);
    if (after >= 0) g.depend(after, copy_in);
  }
  out_.sharded_grad_bytes[rank] += bytes;
  TaskId last = -1;
  if (!experts || sg.size > 1) {   // (experts held whole in their shard group: nothing to scatter, only HSDP's sum)
    last = add_task(rank, st, sim::checked_ns(layers_.coll(Collective::reduce_scatter, bytes, sg), "the FSDP reduce-scatter"),
                    Category::dp_comm, experts ? "fsdp expert reduce-scatter" : "fsdp reduce-scatter", -1, -1, 'C', 0, 0, 0,
                    {sg.crosses_domains() ? nic_[rank] : nvl_[rank]},
                    interference_class(layers_.comm_contention(Collective::reduce_scatter, sg)));
    if (after >= 0) g.depend(after, last);
    if (copy_in >= 0) g.depend(copy_in, last);
  } else {
    last = copy_in >= 0 ? copy_in : after;
  }
  if (rg.size > 1) {
    TaskId ar = add_task(rank, st, sim::checked_ns(layers_.coll(Collective::all_reduce, bytes / sg.size, rg), "the HSDP all-reduce"),
                         Category::dp_comm, "hsdp all-reduce", -1, -1, 'C', 0, 0, 0,
                         {rg.crosses_domains() ? nic_[rank] : nvl_[rank]},
                         interference_class(layers_.comm_contention(Collective::all_reduce, rg)));
    if (last >= 0) g.depend(last, ar);
    last = ar;
  }
  if (grad_buffer > 0) {
    TaskId fr = add_task(rank, st, 0, Category::dp_comm, Name(), -1, -1, 'M', 0, 0, -grad_buffer);
    g.depend(last, fr);
  }
  dp_tasks_[rank].push_back(last);
  return last;
}

void Builder::add_sharded_param_gathers() {
  const auto& P = s_.parallel;
  unit_gathered_.assign(p_, {});
  unit_grad_.assign(p_, {});
  unit_backwards_.assign(p_, {});
  const auto& shape = layers_.shape();
  fsdp_emb_params_ = models::static_memory(s_.model, {}, true, false, P.tp, P.ep, 1, false, shape.fp32_autocast).grads / 4;
  fsdp_head_params_ = models::static_memory(s_.model, {}, false, true, P.tp, P.ep, 1, false, shape.fp32_autocast).grads / 4;
  fsdp_head_expert_params_ = P.ep > 1 ? mtp_expert_params() : 0.0;   // (static_memory holds the MTP modules with the head)
  if (fsdp_active()) {
    fsdp_ag_stream_.resize(p_);
    fsdp_rs_stream_.resize(p_);
    for (int r = 0; r < p_; ++r) {
      fsdp_ag_stream_[r] = out_.graph.add_stream(r, "fsdp all-gather", false);
      fsdp_rs_stream_[r] = out_.graph.add_stream(r, "fsdp reduce-scatter", false);
    }
    return;
  }
  // ZeRO-1/2 with the overlapped parameter gather: the bucketed gathers of data_parallel.cpp over the shard group.
  const Group sg = fsdp_shard_group();
  const Group eg = fsdp_expert_shard_group();
  if (!(P.distributed_optimizer && s_.features.overlap_param_gather && sg.size > 1)) return;
  for (int r = 0; r < p_; ++r) {
    std::vector<int> layers = held_layers(out_.stage_layers, rank_stages_[r]).layers;
    std::sort(layers.begin(), layers.end());
    double fill = 0, fill_bytes = 0, expert_bytes = 0;
    std::vector<int> members;
    auto flush = [&] {
      if (members.empty() && !(fill > 0)) return;
      out_.sharded_gather_bytes[r] += fill_bytes + (eg.size > 1 ? expert_bytes : 0.0);
      const double t = layers_.coll(Collective::all_gather, fill_bytes, sg);
      TaskId ag = add_task(r, dp_stream_[r], sim::checked_ns(t, "the DP parameter gather"), Category::dp_comm, "dp param gather", -1, -1, 'C', 0, 0, 0,
                           {sg.crosses_domains() ? nic_[r] : nvl_[r]},
                           interference_class(layers_.comm_contention(Collective::all_gather, sg)));
      for (int l : members) param_gather_[r][l] = ag;
      // The routed experts' shards over their own group, on the same stream: the layers wait for both.
      if (expert_bytes > 0 && eg.size > 1) {
        const double te = layers_.coll(Collective::all_gather, expert_bytes, eg);
        TaskId eag = add_task(r, dp_stream_[r], sim::checked_ns(te, "the expert parameter gather"), Category::dp_comm,
                              "dp expert param gather", -1, -1, 'C', 0, 0, 0, {eg.crosses_domains() ? nic_[r] : nvl_[r]},
                              interference_class(layers_.comm_contention(Collective::all_gather, eg)));
        out_.graph.depend(ag, eag);
        for (int l : members) param_gather_[r][l] = eag;
      }
      members.clear();
      fill = 0;
      fill_bytes = 0;
      expert_bytes = 0;
    };
    const double expert_width = s_.features.fp8_params ? 1.0 : 2.0;   // bytes per routed-expert parameter gathered
    // As data_parallel.cpp's buckets: the embedding joins the first layer's bucket, the final norm, output
    // head and MTP modules the last layer's (bf16).
    fill += embedding_params(r);
    fill_bytes += 2.0 * embedding_params(r);
    const double end_experts = holds_mtp(r) ? fsdp_head_expert_params_ : 0.0;
    for (int l : layers) {
      const auto& lc = layers_.layer_cost(l);
      const auto gb = layer_gather_bytes(s_, l, lc);
      fill += lc.params;
      if (P.ep > 1) {
        fill_bytes += gb.dense;
        expert_bytes += gb.expert;
      } else {
        fill_bytes += gb.all;
      }
      if (l == layers.back()) {
        const double end = last_stage_end_params(r);
        fill += end;
        fill_bytes += 2.0 * (end - end_experts);
        expert_bytes += expert_width * end_experts;
      }
      members.push_back(l);
      if (fill >= bucket_params(P.dp)) flush();
    }
    if (layers.empty()) {   // a rank without layers (an embedding- or head-only stage): its end parameters alone
      const double end = last_stage_end_params(r);
      fill += end;
      fill_bytes += 2.0 * (end - end_experts);
      expert_bytes += expert_width * end_experts;
    }
    flush();
  }
}

void Builder::sharded_grad_final(int rank, int layer, TaskId t) {
  if (fsdp_active()) return;   // ZeRO-3: fsdp_emit reduces per unit
  auto& stages = stage_of_layer_rank_[rank];
  auto sit = stages.find(layer);
  if (sit == stages.end()) return;
  auto& rem = grad_remaining_[rank][layer];
  if (--rem > 0) return;
  if (!s_.features.overlap_grad_reduce || s_.parallel.dp * s_.parallel.cp <= 1) return;
  // The final norm's, output head's and MTP modules' gradients are final with the last stage's last
  // layer's (their backward runs first): that layer's bucket, as data_parallel.cpp's; routed experts
  // (ep > 1) in their own buckets, reduced over the expert shard group.
  if (sit->second == S_ - 1 && layer == out_.stage_layers[static_cast<std::size_t>(S_ - 1)].back())
    fill_last_stage_end(rank);
  const auto& lc = layers_.layer_cost(layer);
  if (s_.parallel.ep > 1) {
    bucket_fill_[rank] += lc.params - lc.expert_params;
    expert_fill_[rank] += lc.expert_params;
    if (expert_fill_[rank] >= bucket_params(s_.parallel.dp)) {
      fsdp_reduce(rank, expert_fill_[rank], t, 0, true);
      expert_fill_[rank] = 0;
    }
  } else {
    bucket_fill_[rank] += lc.params;
  }
  if (bucket_fill_[rank] >= bucket_params(s_.parallel.dp)) {
    fsdp_reduce(rank, bucket_fill_[rank], t, 0);
    bucket_fill_[rank] = 0;
  }
}

void Builder::fsdp_emit(int rank, Chain& ch, const std::vector<Item>& items, const Name& name, const Op& op) {
  const auto& F = s_.features;
  auto& g = out_.graph;
  const bool fwd = op.kind == OpKind::F;
  const bool wgrad = (op.kind == OpKind::B && !op.split_w) || op.kind == OpKind::W;
  const bool needs_params = op.kind != OpKind::W;   // dW = x^T dy needs no weight
  // Units in order of the items.
  struct Unit { int key; std::size_t begin, end; double params, experts; };   // experts: routed (ep > 1), in params
  std::vector<Unit> units;
  bool seen_layer = false;
  for (std::size_t i = 0; i < items.size(); ++i) {
    // A blocking collective after the layers (delayed scaling's amax all-reduce, Seg::wait) ends the unit
    // before it: it needs no parameters and opens no unit.
    if (items[i].seg->wait && !units.empty()) {
      units.back().end = i + 1;
      continue;
    }
    const int l = items[i].layer;
    int key = l;
    if (l < 0) {
      const bool lead = !seen_layer;
      if (fwd) key = lead && op.stage == 0 ? kEmbUnit : kHeadUnit;
      else key = lead && op.stage == S_ - 1 ? kHeadUnit : kEmbUnit;
    } else {
      seen_layer = true;
    }
    if (units.empty() || units.back().key != key) {
      const double params = key >= 0 ? layers_.layer_cost(key).params : key == kEmbUnit ? fsdp_emb_params_ : fsdp_head_params_;
      const double experts = s_.parallel.ep <= 1 ? 0.0
                             : key >= 0          ? layers_.layer_cost(key).expert_params
                             : key == kHeadUnit  ? fsdp_head_expert_params_
                                                 : 0.0;
      units.push_back(Unit{key, i, i + 1, params, experts});
    } else {
      units.back().end = i + 1;
    }
  }
  const Group sg = fsdp_shard_group();
  const Group eg = fsdp_expert_shard_group();
  const sim::ResourceId res = sg.crosses_domains() ? nic_[rank] : nvl_[rank];
  const TaskId start = last_compute_[rank];
  const int ahead = std::max(0, F.fsdp_prefetch);
  std::vector<TaskId> unit_last(units.size(), -1);
  auto& gathered = unit_gathered_[rank];
  auto& grads = unit_grad_[rank];
  bool first = true;
  for (std::size_t j = 0; j < units.size(); ++j) {
    const Unit& u = units[j];
    if (needs_params && gathered.find(u.key) == gathered.end()) {
      const double width = F.fp8_all_gather || F.fp8_params ? 1.0 : 2.0;
      // The routed experts (their own FSDP module) over the expert shard group, none where that group is one
      // rank (each holds its experts whole); the rest over the shard group.
      const double expert_bytes = eg.size > 1 ? u.experts * width : 0.0;
      const double dense_bytes = (u.params - u.experts) * width;
      const double gathered_bytes = dense_bytes + expert_bytes;
      const auto mem = static_cast<std::int64_t>(gathered_bytes);
      // Parameter offload: the rank's bf16 shard of the unit comes from the host first (on the
      // gather's stream, so the gather follows it).
      TaskId h2d = -1;
      if (F.offload == config::Offload::params)
        h2d = add_task(rank, fsdp_ag_stream_[rank],
                       sim::checked_ns(2.0 * ((u.params - u.experts) / sg.size + u.experts / std::max(1, eg.size)) /
                                           s_.hardware.pcie_bandwidth,
                                       "the offloaded parameter copy"),
                       Category::dp_comm, "fsdp params to gpu", op.microbatch, op.chunk, 'C');
      out_.sharded_gather_bytes[rank] += gathered_bytes;
      TaskId ag = add_task(rank, fsdp_ag_stream_[rank], sim::checked_ns(layers_.coll(Collective::all_gather, dense_bytes, sg), "the FSDP all-gather"),
                           Category::dp_comm, "fsdp all-gather", op.microbatch, op.chunk, 'C', 0, 0, mem, {res},
                           interference_class(layers_.comm_contention(Collective::all_gather, sg)));
      TaskId eag = -1;
      if (expert_bytes > 0) {
        eag = add_task(rank, fsdp_ag_stream_[rank], sim::checked_ns(layers_.coll(Collective::all_gather, expert_bytes, eg), "the FSDP expert all-gather"),
                       Category::dp_comm, "fsdp expert all-gather", op.microbatch, op.chunk, 'C', 0, 0, 0,
                       {eg.crosses_domains() ? nic_[rank] : nvl_[rank]},
                       interference_class(layers_.comm_contention(Collective::all_gather, eg)));
        g.depend(ag, eag);
      }
      // Issued when unit j - ahead starts: after unit j - ahead - 1, or at the op's start.
      const std::ptrdiff_t trig = static_cast<std::ptrdiff_t>(j) - ahead - 1;
      const TaskId after = trig >= 0 ? unit_last[static_cast<std::size_t>(trig)] : start;
      if (after >= 0) g.depend(after, h2d >= 0 ? h2d : ag);
      if (h2d >= 0) g.depend(h2d, ag);
      ch.pending.push_back(eag >= 0 ? eag : ag);
      gathered[u.key] = mem;
      // FSDP2 (fully_shard) gathers the unit into one flat buffer and copies it out into the
      // per-parameter tensors on the compute stream (torch/distributed/_composable/fsdp/
      // _fsdp_param_group.py wait_for_unshard -> foreach_all_gather_copy_out,
      // split_with_sizes_copy): the gathered bytes read and written once, before the unit's
      // compute. FSDP1's FlatParameter views the gathered buffer: no copy.
      if (F.fsdp_version == 2 && !F.megatron_fsdp && gathered_bytes > 0) {
        const hardware::Kernel k = fsdp_copy_kernel("fsdp_copy_out", gathered_bytes, gathered_bytes);
        const layer::Seg cs = layers_.seg_of({&k});
        const Item& first_item = items[u.begin];
        TaskId co = add_task(rank, out_.compute_stream[rank], cs.ns, first_item.cat, "fsdp copy-out", op.microbatch, op.chunk,
                             first_item.kind, cs.launch_ns, 0, 0, {}, 0, cs.host_ns, layer::mix_of(cs));
        g.depend(eag >= 0 ? eag : ag, co);
      }
    }
    std::int64_t grad_bytes = 0;
    if (wgrad) {
      auto gi = grads.find(u.key);
      if (gi == grads.end()) {   // the unit's unsharded gradient, until its reduce-scatter
        grad_bytes = static_cast<std::int64_t>(u.params * (F.reduce_fp32 ? 4.0 : 2.0));
        add_task(rank, out_.compute_stream[rank], 0, Category::dp_comm, Name(), op.microbatch, op.chunk, 'M', 0, 0, grad_bytes);
        grads[u.key] = grad_bytes;
      } else {
        grad_bytes = gi->second;
      }
    }
    for (std::size_t i = u.begin; i < u.end; ++i) {
      const Item& it = items[i];
      if (act_offload_on() && it.kind != 'F') act_offload_backward(rank, ch, items, i, op.microbatch);
      emit_seg(rank, ch, *it.seg, it.cat, first ? name : Name(), op.microbatch, op.chunk, it.kind, it.mem, false,
               it.release, it.blocks);
      first = false;
      if (act_offload_on() && it.kind == 'F') act_offload_forward(rank, ch, items, i, op.microbatch);
    }
    unit_last[j] = ch.last;
    // Reshard: after the backward always; after the forward unless kept (the option, FSDP2's root
    // units, torchtitan's last transformer block).
    const bool keep = fwd && (!F.reshard_after_forward || u.key < 0 || u.key == s_.model.layers - 1);
    auto gi = gathered.find(u.key);
    if (needs_params && !keep && gi != gathered.end()) {
      add_task(rank, out_.compute_stream[rank], 0, Category::dp_comm, Name(), op.microbatch, op.chunk, 'M', 0, 0, -gi->second);
      gathered.erase(gi);
    }
    if (wgrad) {
      const int done = ++unit_backwards_[rank][u.key];
      if (s_.parallel.pp == 1 || done >= m_) {
        // The experts' gradients (their own module) apart, each part's buffer freed by its reduction.
        const auto expert_buf = static_cast<std::int64_t>(u.experts * (F.reduce_fp32 ? 4.0 : 2.0));
        if (u.experts > 0) fsdp_reduce(rank, u.experts, ch.last, std::min(expert_buf, grad_bytes), true);
        fsdp_reduce(rank, u.params - u.experts, ch.last, grad_bytes - std::min(expert_buf, grad_bytes));
        grads.erase(u.key);
        if (done >= m_) unit_backwards_[rank][u.key] = 0;
      }
    }
  }
}

// Gradient clipping on the sharded path. Every framework behind the FSDP rows clips by the global
// gradient norm each step: each rank's norm over the gradient shard it holds, one all-reduce of the
// scalar over every rank (a synchronisation point: the optimizer step waits for it), then the
// gradients scaled by the clamped coefficient min(1, max_norm / norm). Sources:
//  * torchtitan: training max_norm = 1.0 by default (torchtitan/config/job_config.py, 000204a4a); its
//    clip_grad_norm_ (torchtitan/distributed/utils.py, commit 0032be99b) takes the norm with
//    torch.nn.utils.get_total_norm over the local shards (DTensor, reduced over the mesh, then over the
//    pipeline ranks) and calls torch.nn.utils.clip_grads_with_norm_;
//  * torch.nn.utils (torch/nn/utils/clip_grad.py, pytorch commit 01a57d87b): _clip_grads_with_norm_
//    clamps the coefficient at 1 and always multiplies, _foreach_mul_ over the gradients, so as not to
//    synchronise the host on `if coef < 1`: one more read and write of the gradient shard each step;
//  * FSDP1's FullyShardedDataParallel.clip_grad_norm_ (torch/distributed/fsdp/
//    fully_sharded_data_parallel.py, pytorch commit 005df1d67): the local sharded norm, an all-reduce
//    over the process group, then grad.mul_(clip_coef_clamped) on every gradient, always. fms-fsdp
//    calls it each step with grad_clip_thresh = 1.0 (fms_fsdp/utils/train_utils.py, commit 078c29e74;
//    fms_fsdp/config/training.py, 00f20d5e1); llm-foundry's yamls set algorithms.gradient_clipping
//    (clipping_type norm, threshold 1.0; scripts/train/yamls/pretrain/mpt-7b.yaml, commit 15fb4ffaa),
//    and Composer's GradientClipping calls the root FSDP module's clip_grad_norm_
//    (composer/algorithms/gradient_clipping/gradient_clipping.py, commit 13dd3581f);
//  * Megatron (clip_grad_by_total_norm_fp32) scales only when the coefficient is below 1, not in
//    steady state: as the unsharded path (step/data_parallel.cpp), no multiply. (Megatron-LM 0293807e5
//    scales every step with the clamped coefficient when Transformer Engine's multi_tensor_scale_tensor
//    is present; not modelled on either path: docs/fsdp.md.)
// Which convention a scenario runs follows the keys that already say whose FSDP it is: zero_stage 3
// without features.megatron_fsdp is PyTorch's FSDP (FSDP2 with fsdp_version 2, torchtitan; FSDP1 with
// fsdp_version 1, fms-fsdp and llm-foundry): the multiply every step. Megatron-FSDP and the bucketed
// ZeRO-2 path (Megatron's buckets and distributed optimizer, over the shard group): none. Offload:
// the step runs on the host, the scaling with it (not modelled); the norm and its all-reduce are.
// The torch gradient shard is fp32 (FSDP's sharded gradient in the fp32 parameter's dtype; Megatron's
// main_grad): 4 bytes per parameter, as models::sharded_static_memory holds it.
namespace {
bool clip_scales_every_step(const config::Scenario& s) {
  return models::torch_fsdp(s) && s.features.offload == config::Offload::none;
}
}  // namespace

void Builder::add_sharded_reduce_and_optimizer() {
  const auto& P = s_.parallel;
  const int dp_group = P.dp * P.cp;
  const int shard = P.shard() * P.cp;
  auto& g = out_.graph;
  const bool offload = s_.features.offload != config::Offload::none;
  const bool sync = grad_norm_sync();   // (a one-GPU step clips nothing: the single-GPU rows ran without)
  // Megatron's finalize_model_grads runs (its TP and embedding-group all-reduces) unless the framework is
  // PyTorch's FSDP, which has no such step.
  const bool megatron_finalize = !models::torch_fsdp(s_);
  // The rank's optimizer shard: the dense parameters over the shard group, the routed experts over theirs.
  const int expert_shard = fsdp_expert_shard_group().size;
  auto local_of = [&](int r) {
    if (!P.distributed_optimizer) return rank_params_[r];
    const double ex = rank_expert_params(r);
    return (rank_params_[r] - ex) / shard + ex / std::max(1, expert_shard);
  };
  std::vector<TaskId> norm_task(p_, -1);
  for (int r = 0; r < p_; ++r) {
    if (dp_group > 1 && !fsdp_active()) {
      if (s_.features.overlap_grad_reduce) {
        // The last bucket: a head-only last stage's end parameters, and the embedding's gradient (final
        // when the first stage's backward ends), as data_parallel.cpp's.
        if (out_.stage_layers[static_cast<std::size_t>(S_ - 1)].empty()) fill_last_stage_end(r);
        bucket_fill_[r] += embedding_params(r);
      } else {
        // Everything at the step's end: the routed experts (the MTP modules' included) apart.
        expert_fill_[r] = rank_expert_params(r);
        bucket_fill_[r] = rank_params_[r] - expert_fill_[r];
      }
      if (bucket_fill_[r] > 0) fsdp_reduce(r, bucket_fill_[r], last_compute_[r], 0);
      if (expert_fill_[r] > 0) fsdp_reduce(r, expert_fill_[r], last_compute_[r], 0, true);
      bucket_fill_[r] = 0;
      expert_fill_[r] = 0;
    }
    // Megatron's finalize_model_grads (Megatron-FSDP, the bucketed ZeRO-2 path): with sequence parallelism the
    // TP all-reduce of the whole-held parameters' gradients (step/data_parallel.cpp). PyTorch's FSDP with TP
    // reduces those inside the backward (DTensor's partial gradients): not modelled.
    if (megatron_finalize) add_sequence_parallel_grad_allreduce(r);
    // The norm of the rank's fp32 gradient shard, after its reductions.
    if (sync) norm_task[r] = add_grad_norm(r, local_of(r), 4.0);
  }
  // With tied embeddings on a pipeline, the first and the last stage's copies of the embedding's gradient
  // summed (step/data_parallel.cpp, Megatron's _allreduce_word_embedding_grads), the rank's shard of it;
  // both ends' norm kernels wait for it. PyTorch's FSDP frameworks state no such all-reduce: not modelled there.
  if (megatron_finalize) add_tied_embedding_allreduce(norm_task);
  else if (tied_embedding_ends().first >= 0)
    out_.warnings.push_back("tied embeddings on a pipeline under PyTorch's FSDP: the sum of the first and the last "
                            "stage's embedding gradients is not modelled");
  // Offload: the gradient shard's copy to the host follows the rank's reductions (and the embedding group's
  // all-reduce), not the norm's all-reduce: only the host's Adam waits for that (below). Issued before it on the
  // rank's stream.
  std::vector<TaskId> down(p_, -1);
  for (int r = 0; r < p_ && offload; ++r) {
    down[r] = add_task(r, dp_stream_[r], sim::checked_ns(4.0 * local_of(r) / s_.hardware.pcie_bandwidth, "the offload gradient copy"),
                       Category::optimizer, "offload grads to host", -1, -1, 'O');
    for (TaskId d : dp_tasks_[r]) g.depend(d, down[r]);
    if (last_compute_[r] >= 0) g.depend(last_compute_[r], down[r]);
  }
  const std::vector<TaskId> norm_ar = add_grad_norm_allreduce(norm_task);
  for (int r = 0; r < p_; ++r) {
    const double local = local_of(r);
    TaskId clip = -1;
    if (sync && clip_scales_every_step(s_)) {
      // torch's clip: the gradient shard scaled in place by the clamped coefficient (read + write, fp32).
      hardware::Kernel k;
      k.kind = hardware::KernelKind::memory;
      k.name = "grad_clip_scale";
      k.bytes = 8.0 * local;
      k.flops = local;
      k.count = 1;
      const layer::Seg cs = layers_.seg_of({&k});
      clip = add_task(r, out_.compute_stream[r], cs.ns, Category::optimizer, "grad clip", -1, -1, 'O', cs.launch_ns, 0, 0,
                      {}, 0, cs.host_ns, layer::mix_of(cs));
      g.depend(norm_ar[r], clip);
    }
    TaskId optim = -1;
    if (!offload) {
      // The Adam step of data_parallel.cpp over the rank's shard (FSDP2's fp32 shard is the master: no bf16 copy
      // written, models::torch_fsdp_fp32_shards).
      optim = add_adam_step(r, local, layers_.shape().fp32_autocast || models::torch_fsdp_fp32_shards(s_) ? 28.0 : 30.0);
      for (TaskId d : dp_tasks_[r]) g.depend(d, optim);
      if (norm_ar[r] >= 0) g.depend(norm_ar[r], optim);
      if (clip >= 0) g.depend(clip, optim);
    } else {
      // ZeRO-Offload: fp32 gradient shard to the host, bf16 parameter shard back, over PCIe.
      const double bw = s_.hardware.pcie_bandwidth;
      // The host's Adam over the shard (fp32 master, m, v and gradient read, master, m, v and
      // the bf16 copy written: 30 bytes per parameter, as the GPU's step) at the host's memory
      // bandwidth per GPU; it waits for the gradient norm's all-reduce.
      TaskId host_adam = add_task(r, dp_stream_[r], sim::checked_ns(30.0 * local / s_.hardware.host_memory_bandwidth, "the host's Adam step"),
                                  Category::optimizer, "host adam", -1, -1, 'O');
      g.depend(down[r], host_adam);
      if (norm_ar[r] >= 0) g.depend(norm_ar[r], host_adam);
      optim = add_task(r, dp_stream_[r], sim::checked_ns(2.0 * local / bw, "the offload parameter copy"), Category::optimizer,
                       "offload params to gpu", -1, -1, 'O');
      g.depend(host_adam, optim);
    }
    const Group sg = fsdp_shard_group();
    if (P.zero() < 3 && P.distributed_optimizer && sg.size > 1 && !s_.features.overlap_param_gather) {
      const double ex = rank_expert_params(r);
      const Group eg = fsdp_expert_shard_group();
      const double expert_bytes = eg.size > 1 ? ex * (s_.features.fp8_params ? 1.0 : 2.0) : 0.0;
      out_.sharded_gather_bytes[r] += (rank_params_[r] - ex) * 2.0 + expert_bytes;
      const double t = layers_.coll(Collective::all_gather, (rank_params_[r] - ex) * 2.0, sg);
      TaskId ag = add_task(r, dp_stream_[r], sim::checked_ns(t, "the DP parameter gather"), Category::dp_comm, "dp param gather", -1, -1, 'C', 0, 0, 0,
                           {sg.crosses_domains() ? nic_[r] : nvl_[r]});
      g.depend(optim, ag);
      if (expert_bytes > 0) {
        TaskId eag = add_task(r, dp_stream_[r], sim::checked_ns(layers_.coll(Collective::all_gather, expert_bytes, eg), "the expert parameter gather"),
                              Category::dp_comm, "dp expert param gather", -1, -1, 'C', 0, 0, 0, {eg.crosses_domains() ? nic_[r] : nvl_[r]});
        g.depend(optim, eag);
      }
    }
  }
}

}  // namespace mfusim::step
