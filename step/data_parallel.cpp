// Data parallelism in the step: the gradient buckets reduced as the backward
// finishes each layer's gradient (overlap_grad_reduce), the parameter
// all-gather of the distributed optimizer, and the optimizer step. With context
// parallelism the cp ranks of a data-parallel rank hold the same weights: the
// gradients are reduced, and the optimizer sharded, over dp x cp
// (Placement::dp_cp, Megatron's data-parallel-with-context-parallel group).
#include <algorithm>

#include "hardware/cost_model.h"
#include "layer/moe_dispatch.h"
#include "models/params.h"
#include "sim/time.h"
#include "step/builder.h"

namespace mfusim::step {

using hardware::Collective;

// The MTP modules (DeepSeek-V3 §2.2) sit on the last pipeline stage, after the output head they
// share: their gradients go in the buckets of every rank that holds that stage (the last rank;
// under DualPipe ranks 0 and p-1, each with one of the two parameter copies; under DualPipeV
// rank 0).
bool Builder::holds_mtp(int rank) const {
  if (s_.model.mtp_depth <= 0) return false;
  const auto& st = rank_stages_[static_cast<std::size_t>(rank)];
  return std::find(st.begin(), st.end(), S_ - 1) != st.end();
}
double Builder::mtp_params() const { return s_.model.mtp_depth > 0 ? s_.model.mtp_depth * mtp_cost_.params : 0.0; }
double Builder::mtp_expert_params() const {
  return s_.model.mtp_depth > 0 ? s_.model.mtp_depth * mtp_cost_.expert_params : 0.0;
}

namespace {
// The parameters of the embedding (on the rank that holds the first stage) and of the final norm
// and output head (the last stage; with tied embeddings Megatron's copy of the embedding there),
// which no layer's LayerCost counts: models::static_memory's, less the MTP modules (counted apart).
double end_params(const config::Scenario& s, bool embedding, bool head, bool fp32_autocast) {
  if (!embedding && !head) return 0;
  models::ModelSpec m = s.model;
  m.mtp_depth = 0;
  return models::static_memory(m, {}, embedding, head, s.parallel.tp, s.parallel.ep, 1, false, fp32_autocast).params /
         models::param_bytes(fp32_autocast);
}

}  // namespace

// The parameter all-gather's bytes for a layer's parameters on a rank: bf16, 2 bytes each; with
// features.fp8_params the linear weights are gathered as the fp8 tensors they are held as (1 byte;
// the linear weights of models::static_memory's fp8 copies), the norms in bf16.
GatherBytes layer_gather_bytes(const config::Scenario& s, int layer, const layer::LayerCost& lc) {
  const auto& P = s.parallel;
  const bool fp8 = s.features.fp8_params;
  const auto p = models::detail::layer_parts(s.model, layer);
  GatherBytes b;
  b.dense = 2.0 * (lc.params - lc.expert_params) - (fp8 ? p.tp_sharded / P.tp : 0.0);
  b.expert = (fp8 ? 1.0 : 2.0) * lc.expert_params;
  b.all = 2.0 * lc.params - (fp8 ? p.tp_sharded / P.tp + lc.expert_params : 0.0);
  return b;
}

bool Builder::holds_stage(int rank, int stage) const {
  const auto& st = rank_stages_[static_cast<std::size_t>(rank)];
  return std::find(st.begin(), st.end(), stage) != st.end();
}
double Builder::embedding_params(int rank) const {
  return holds_stage(rank, 0) ? end_params(s_, true, false, layers_.shape().fp32_autocast) : 0.0;
}
double Builder::head_params(int rank) const {
  // with tied embeddings, a rank that also holds the embedding keeps no second copy
  if (!holds_stage(rank, S_ - 1)) return 0.0;
  const bool fp32 = layers_.shape().fp32_autocast;
  return holds_stage(rank, 0) ? end_params(s_, true, true, fp32) - end_params(s_, true, false, fp32)
                              : end_params(s_, false, true, fp32);
}

double Builder::rank_expert_params(int rank) {
  if (s_.parallel.ep <= 1) return 0.0;
  double ex = holds_mtp(rank) ? mtp_expert_params() : 0.0;
  for (int st : rank_stages_[rank])
    for (int l : out_.stage_layers[st]) ex += layers_.layer_cost(l).expert_params;
  return ex;
}

double Builder::last_stage_end_params(int rank) const { return head_params(rank) + (holds_mtp(rank) ? mtp_params() : 0.0); }

void Builder::fill_last_stage_end(int rank) {
  bucket_fill_[rank] += head_params(rank);
  if (!holds_mtp(rank)) return;
  if (s_.parallel.ep > 1) {   // the MTP modules' routed experts: the expert-DP buckets
    bucket_fill_[rank] += mtp_params() - mtp_expert_params();
    expert_fill_[rank] += mtp_expert_params();
  } else {
    bucket_fill_[rank] += mtp_params();
  }
}

// Distributed optimizer with overlapped parameter all-gather: the gather of
// each bucket runs at the start of the step; a layer's first forward waits for it.
void Builder::add_param_gathers() {
  if (zero_sharded()) return add_sharded_param_gathers();   // ZeRO-2/3, HSDP, offload: step/fsdp.cpp
  const auto& P = s_.parallel;
  const int dp_group = P.dp * P.cp;
  if (P.distributed_optimizer && s_.features.overlap_param_gather && dp_group > 1) {
    for (int r = 0; r < p_; ++r) {
      std::vector<int> layers = held_layers(out_.stage_layers, rank_stages_[r]).layers;
      std::sort(layers.begin(), layers.end());
      double fill = 0, expert_fill = 0, fill_bytes = 0, expert_bytes = 0;
      std::vector<int> members;
      // Routed experts (ep > 1) are sharded over the expert-DP group, so their parameters are
      // gathered over it (Megatron's expert-data-parallel distributed optimizer).
      const bool split = P.ep > 1;
      const hardware::Group eg = layer::expert_dp_group(s_);
      auto flush = [&] {
        if (members.empty() && fill + expert_fill <= 0) return;
        out_.dp_gather_bytes[r] += fill_bytes;
        const double t = layers_.coll(Collective::all_gather, fill_bytes, layers_.placement().dp_cp);
        TaskId ag = add_task(r, dp_stream_[r], sim::checked_ns(t, "the DP parameter gather"), Category::dp_comm, "dp param gather", -1, -1, 'C', 0, 0, 0,
                             {layers_.placement().dp_cp.crosses_domains() ? nic_[r] : nvl_[r]},
                             interference_class(layers_.comm_contention(Collective::all_gather, layers_.placement().dp_cp)));
        if (split && expert_fill > 0 && eg.size > 1) {
          out_.expert_dp_gather_bytes[r] += expert_bytes;
          const double te = layers_.coll(Collective::all_gather, expert_bytes, eg);
          TaskId eag = add_task(r, dp_stream_[r], sim::checked_ns(te, "the expert-DP parameter gather"), Category::dp_comm,
                                "expert dp param gather", -1, -1, 'C', 0, 0, 0, {eg.crosses_domains() ? nic_[r] : nvl_[r]},
                                interference_class(layers_.comm_contention(Collective::all_gather, eg)));
          out_.graph.depend(ag, eag);   // the layers wait for the later of the two (same in-order stream)
          ag = eag;
        }
        for (int l : members) param_gather_[r][l] = ag;
        members.clear();
        fill = 0;
        expert_fill = 0;
        fill_bytes = 0;
        expert_bytes = 0;
      };
      // The MTP modules join the bucket of the rank's last layer (the last stage's: it runs right
      // before them), or one of their own when the rank holds no layer.
      const bool mtp = holds_mtp(r);
      // (with features.fp8_params their linear weights in fp8, as the layers')
      const double mtp_linear = s_.features.fp8_params && s_.model.mtp_depth > 0
                                    ? models::detail::mtp_parts(s_.model).tp_sharded / P.tp   // (all mtp_depth modules)
                                    : 0.0;
      const double mtp_expert_bytes = (s_.features.fp8_params ? 1.0 : 2.0) * mtp_expert_params();
      auto add_mtp = [&] {
        fill += split ? mtp_params() - mtp_expert_params() : mtp_params();
        if (split) fill_bytes += 2.0 * (mtp_params() - mtp_expert_params()) - mtp_linear;
        else if (s_.features.fp8_params) fill_bytes += 2.0 * (mtp_params() - mtp_expert_params()) - mtp_linear + mtp_expert_bytes;
        else fill_bytes += 2.0 * mtp_params();
        if (split) expert_fill += mtp_expert_params();
        if (split) expert_bytes += mtp_expert_bytes;
      };
      // The embedding joins the first layer's bucket (its forward runs right before it), the final
      // norm and output head the last layer's with the MTP modules (dense parameters: the DP group).
      fill += embedding_params(r);
      fill_bytes += 2.0 * embedding_params(r);
      const double head = head_params(r);
      for (int l : layers) {
        const auto& lc = layers_.layer_cost(l);
        const GatherBytes gb = layer_gather_bytes(s_, l, lc);
        fill += split ? lc.params - lc.expert_params : lc.params;
        fill_bytes += split ? gb.dense : gb.all;
        if (split) expert_fill += lc.expert_params;
        if (split) expert_bytes += gb.expert;
        if (mtp && l == layers.back()) add_mtp();
        if (l == layers.back()) fill += head;
        if (l == layers.back()) fill_bytes += 2.0 * head;
        members.push_back(l);
        if (fill + expert_fill >= bucket_params(P.dp)) flush();
      }
      if (mtp && layers.empty()) add_mtp();
      if (layers.empty()) fill += head;
      if (layers.empty()) fill_bytes += 2.0 * head;
      flush();
    }
  }
}

void Builder::on_grad_final(int rank, int layer, TaskId t) {
  if (zero_sharded()) return sharded_grad_final(rank, layer, t);   // step/fsdp.cpp
  // Called once per (rank, stage, layer, backward op); the layer's gradient is
  // final when the stage's last backward op on this rank runs.
  auto& stages = stage_of_layer_rank_[rank];
  auto sit = stages.find(layer);
  if (sit == stages.end()) return;
  auto& rem = grad_remaining_[rank][layer];
  if (--rem > 0) return;
  if (!s_.features.overlap_grad_reduce || s_.parallel.dp * s_.parallel.cp <= 1) return;
  const auto& lc = layers_.layer_cost(layer);
  // The output head's, final norm's and MTP modules' backward runs first in the last stage's backward
  // (step/op_items.cpp), so their gradients are final once that stage's last layer's are: they join
  // its bucket (Megatron registers the output layer last, so its gradients fill the first bucket).
  if (sit->second == S_ - 1 && layer == out_.stage_layers[static_cast<std::size_t>(S_ - 1)].back())
    fill_last_stage_end(rank);
  if (s_.parallel.ep > 1) {   // routed experts: their own buckets over the expert-DP group (Megatron)
    bucket_fill_[rank] += lc.params - lc.expert_params;
    expert_fill_[rank] += lc.expert_params;
    if (expert_fill_[rank] >= bucket_params(s_.parallel.dp)) flush_expert_bucket(rank, t);
  } else {
    bucket_fill_[rank] += lc.params;
  }
  if (bucket_fill_[rank] >= bucket_params(s_.parallel.dp)) flush_bucket(rank, t);
}

// Megatron-LM reduces the routed experts' gradients over the expert-data-parallel group
// (dp * cp * tp / (ep * etp) ranks with the same expert shard), not the whole DP group.
void Builder::flush_expert_bucket(int rank, TaskId after) {
  if (expert_fill_[rank] <= 0) return;
  const hardware::Group g = layer::expert_dp_group(s_);
  const double bytes = expert_fill_[rank] * models::grad_bytes(s_.features.reduce_fp32, layers_.shape().fp32_autocast);
  expert_fill_[rank] = 0;
  if (g.size <= 1) return;
  out_.expert_dp_grad_bytes[rank] += bytes;
  const Collective c = s_.parallel.distributed_optimizer ? Collective::reduce_scatter : Collective::all_reduce;
  const double t = layers_.coll(c, bytes, g);
  TaskId d = add_task(rank, dp_stream_[rank], sim::checked_ns(t, "the expert-DP gradient reduction"), Category::dp_comm,
                      "expert dp grad reduce", -1, -1, 'C', 0, 0, 0, {g.crosses_domains() ? nic_[rank] : nvl_[rank]},
                      interference_class(layers_.comm_contention(c, g)));
  if (after >= 0) out_.graph.depend(after, d);
  dp_tasks_[rank].push_back(d);
}

void Builder::flush_bucket(int rank, TaskId after) {
  if (bucket_fill_[rank] <= 0) return;
  hardware::Group g = layers_.placement().dp_cp;
  // fp32 main gradients (Megatron's default), bf16 with features.reduce_dtype = "bf16"
  const double bytes = bucket_fill_[rank] * models::grad_bytes(s_.features.reduce_fp32, layers_.shape().fp32_autocast);
  out_.dp_grad_bytes[rank] += bytes;
  const Collective c = s_.parallel.distributed_optimizer ? Collective::reduce_scatter : Collective::all_reduce;
  const double t = layers_.coll(c, bytes, g);
  TaskId d = add_task(rank, dp_stream_[rank], sim::checked_ns(t, "the DP gradient reduction"), Category::dp_comm, "dp grad reduce", -1, -1, 'C', 0, 0, 0,
                      {g.crosses_domains() ? nic_[rank] : nvl_[rank]}, interference_class(layers_.comm_contention(c, g)));
  if (after >= 0) out_.graph.depend(after, d);
  dp_tasks_[rank].push_back(d);
  bucket_fill_[rank] = 0;
}

// Gradient reduction and the optimizer step. Between them, Megatron's per-step synchronisation
// of all ranks: the loss averaged over the data-parallel ranks on the last stage
// (average_losses_across_data_parallel_group: one small all-reduce over dp x cp), and the
// gradient norm for clipping (get_grad_norm_fp32: each rank's squared norm of the gradients it
// holds, a multi-tensor L2-norm over its fp32 gradient shard, then one all-reduce of the scalar
// over every rank, all pipeline stages included). Every rank's optimizer step waits for that
// all-reduce, and so for the slowest rank's gradients. Modelled for steps on more than one GPU
// (Megatron-LM's default clip_grad = 1.0); a one-GPU step has neither (the single-GPU
// measurements in validation/ ran without clipping).
TaskId Builder::add_adam_step(int rank, double local, double fused_bytes) {
  hardware::Kernel k;
  k.kind = hardware::KernelKind::memory;
  k.name = "adam";
  // (features.optimizer_foreach: torch's foreach AdamW's eight passes, models::kForeachAdamExtraBytes)
  k.bytes = (fused_bytes + (s_.features.optimizer_foreach ? models::kForeachAdamExtraBytes : 0.0)) * local;
  if (layers_.shape().fp32_autocast) k.family = hardware::MemFamily::adamw;   // torch's fused AdamW (kernel_bw.py)
  k.flops = 12.0 * local;
  k.count = s_.features.optimizer_foreach ? models::kForeachAdamPasses : 1;
  k.bytes /= k.count;   // (per kernel: each pass moves its share)
  k.flops /= k.count;
  const layer::Seg opt_seg = layers_.seg_of({&k});
  // (zero_grad(set_to_none=True) after it frees the gradients the backward allocated: lazy_grads_)
  // (features.optimizer_foreach: torch's foreach AdamW's fp32 temporary of the stepped parameters, run 35)
  const auto lazy = static_cast<std::int64_t>(lazy_grads_ ? lazy_grad_bytes_[static_cast<std::size_t>(rank)] : 0.0);
  const auto temp = static_cast<std::int64_t>(s_.features.optimizer_foreach ? 4.0 * local : 0.0);
  return add_task(rank, out_.compute_stream[rank], opt_seg.ns, Category::optimizer, "optimizer step", -1, -1, 'O',
                  opt_seg.launch_ns, 0, temp, {}, 0, opt_seg.host_ns, layer::mix_of(opt_seg), lazy + temp);
}

// The gradient-norm synchronisation of the comment above add_adam_step, shared by the unsharded path
// and the sharded one (step/fsdp.cpp): whether the step has it (more than one GPU), each rank's
// norm kernel over the gradients it holds (`params` of `bytes_per_param` each, read once), after
// the rank's reductions, and the all-reduce of the scalar over every rank, after every rank's norm.
bool Builder::grad_norm_sync() const {
  const auto& P = s_.parallel;
  return static_cast<std::int64_t>(P.tp) * P.cp * P.dp * P.pp > 1;
}

TaskId Builder::add_grad_norm(int rank, double params, double bytes_per_param) {
  hardware::Kernel nk;
  nk.kind = hardware::KernelKind::memory;
  nk.name = "grad_norm";
  nk.bytes = bytes_per_param * params;
  nk.flops = 2.0 * params;
  nk.count = 1;
  const layer::Seg ns = layers_.seg_of({&nk});
  const TaskId t = add_task(rank, out_.compute_stream[rank], ns.ns, Category::optimizer, "grad norm", -1, -1, 'O',
                            ns.launch_ns, 0, 0, {}, 0, ns.host_ns, layer::mix_of(ns));
  for (TaskId d : dp_tasks_[rank]) out_.graph.depend(d, t);
  return t;
}

std::vector<TaskId> Builder::add_grad_norm_allreduce(const std::vector<TaskId>& norm_task) {
  std::vector<TaskId> norm_ar(p_, -1);
  if (!grad_norm_sync()) return norm_ar;
  const auto& P = s_.parallel;
  const std::int64_t world = static_cast<std::int64_t>(P.tp) * P.cp * P.dp * P.pp;
  hardware::Group all;
  all.size = static_cast<int>(world);
  const int domain = std::max(1, s_.hardware.gpus_per_node);
  all.domains = static_cast<int>((world + domain - 1) / domain);
  all.per_domain = static_cast<int>(std::min<std::int64_t>(world, domain));
  const double norm_allreduce_s = layers_.coll(Collective::all_reduce, 4.0, all);
  for (int r = 0; r < p_; ++r) {
    norm_ar[r] = add_task(r, dp_stream_[r], sim::checked_ns(norm_allreduce_s, "the gradient-norm all-reduce"),
                          Category::dp_comm, "grad-norm all-reduce", -1, -1, 'C', 0, 0, 0,
                          {all.crosses_domains() ? nic_[r] : nvl_[r]});
    for (int q = 0; q < p_; ++q)
      if (norm_task[q] >= 0) out_.graph.depend(norm_task[q], norm_ar[r]);
  }
  return norm_ar;
}

// Megatron's finalize_model_grads, after the data-parallel gradient sync and before the optimizer
// reads the gradients: with tied embeddings and the embedding and the output head on different
// pipeline ranks, the two copies' gradients are summed by an all-reduce over the embedding group,
// the first and the last stage (_allreduce_word_embedding_grads: the whole main_grad of the rank's
// vocabulary shard, whatever the distributed optimizer's shard). A rank that holds both ends
// (DualPipe, DualPipeV's V) keeps one copy and needs none. Both ranks' gradient norms wait for it.
std::pair<int, int> Builder::tied_embedding_ends() const {
  if (!s_.model.tied_embeddings) return {-1, -1};
  int first = -1, last = -1;
  for (int r = 0; r < p_; ++r) {
    if (first < 0 && holds_stage(r, 0)) first = r;
    if (last < 0 && holds_stage(r, S_ - 1)) last = r;
  }
  if (first < 0 || last < 0 || first == last) return {-1, -1};
  return {first, last};
}

// The bytes a rank's all-reduce in finalize_model_grads moves for `params` of its gradients: the whole main_grad
// unsharded; on ZeRO-2/3, HSDP or offload (step/fsdp.cpp) the gradients were reduce-scattered, so the rank holds
// its fp32 shard of them (models::sharded_static_memory), and its peers in the all-reduce (the same position in
// their shard groups) the same shard: the all-reduce moves that.
double Builder::finalize_grad_bytes(double params) const {
  const auto& P = s_.parallel;
  return zero_sharded() ? 4.0 * params / (P.distributed_optimizer ? P.shard() * P.cp : 1)
                        : params * models::grad_bytes(s_.features.reduce_fp32, layers_.shape().fp32_autocast);
}

void Builder::add_tied_embedding_allreduce(const std::vector<TaskId>& norm_task) {
  const auto [first, last] = tied_embedding_ends();
  if (first < 0) return;
  const auto& P = s_.parallel;
  // Ranks in Megatron's order (TP innermost, then CP, DP, PP): a first-stage GPU g (0 .. tp cp dp - 1) and
  // its last-stage peer g + d, d = (pp - 1) x tp x cp x dp; the pair crosses NVLink domains when any does (as
  // hardware::place's stage-to-stage hop: domains of 72 need not align with the replicas).
  const std::int64_t stride = static_cast<std::int64_t>(P.tp) * P.cp * P.dp, d = (P.pp - 1) * stride;
  const std::int64_t domain = std::max(1, s_.hardware.gpus_per_node);
  bool crosses = false;   // over the first stage's GPUs g = 0 .. stride - 1
  for (std::int64_t g = 0; g < stride && !crosses; ++g) crosses = g / domain != (g + d) / domain;
  hardware::Group eg;
  eg.size = 2;
  eg.domains = crosses ? 2 : 1;
  eg.per_domain = crosses ? 1 : 2;
  const double bytes = finalize_grad_bytes(embedding_params(first));
  out_.embedding_allreduce_bytes = bytes;
  const double t = layers_.coll(Collective::all_reduce, bytes, eg);
  auto& g = out_.graph;
  const int ends[2] = {first, last};
  TaskId ar[2];
  for (int i = 0; i < 2; ++i)
    ar[i] = add_task(ends[i], dp_stream_[ends[i]], sim::checked_ns(t, "the tied embedding's gradient all-reduce"),
                     Category::pp_comm, "embedding grads all-reduce", -1, -1, 'C', 0, 0, 0,
                     {crosses ? nic_[ends[i]] : nvl_[ends[i]]},
                     interference_class(layers_.comm_contention(Collective::all_reduce, eg)));
  // A collective: each side starts when both ranks' gradients are final (their reductions, the loss
  // all-reduce); the dependencies are all added before either side joins its rank's list.
  for (TaskId a : ar)
    for (int r : ends) {
      for (TaskId dep : dp_tasks_[r]) g.depend(dep, a);
      if (last_compute_[r] >= 0) g.depend(last_compute_[r], a);
    }
  for (int i = 0; i < 2; ++i) {
    if (norm_task[ends[i]] >= 0) g.depend(ar[i], norm_task[ends[i]]);
    dp_tasks_[ends[i]].push_back(ar[i]);   // the optimizer step waits for it as for the rank's reductions
  }
}

// Megatron's finalize_model_grads, after the data-parallel sync and before the embedding group's all-reduce:
// with sequence parallelism every TP rank runs the parameters it holds whole (the norms, row-parallel biases,
// the router, MLA's down-projections: models::detail::ParamParts::replicated, and the final norm and the MTP
// modules' on the last stage) over its own chunk of the sequence only, so their gradients are partial sums;
// _allreduce_non_tensor_model_parallel_grads (megatron/core/distributed/finalize_model_grads.py, the
// layer-norm all-reduce of older releases) flattens them into one buffer, all-reduces it (SUM) over the TP
// group and copies the result back: a memory kernel of the buffer (read + write), the collective, and another.
// Its time is on every step's critical path (the gradient norm waits for it); without sequence parallelism
// the TP ranks already hold identical gradients and there is none.
void Builder::add_sequence_parallel_grad_allreduce(int rank) {
  const auto& P = s_.parallel;
  if (P.tp <= 1 || !P.sequence_parallel) return;
  double params = 0;
  for (int st : rank_stages_[rank])
    for (int l : out_.stage_layers[st]) params += models::detail::layer_parts(s_.model, l).replicated;
  if (holds_stage(rank, S_ - 1)) params += models::count_params(s_.model).final_norm;
  if (holds_mtp(rank)) params += models::detail::mtp_parts(s_.model).replicated;
  if (!(params > 0)) return;
  const double bytes = finalize_grad_bytes(params);
  out_.sp_grad_allreduce_bytes[static_cast<std::size_t>(rank)] = bytes;
  auto& g = out_.graph;
  hardware::Kernel ck;   // _flatten_dense_tensors before the collective, the copy back after it
  ck.kind = hardware::KernelKind::memory;
  ck.name = "sp_grads_copy";
  ck.bytes = 2.0 * bytes;
  ck.count = 1;
  const layer::Seg cs = layers_.seg_of({&ck});
  auto copy = [&](const char* name) {
    return add_task(rank, out_.compute_stream[rank], cs.ns, Category::optimizer, name, -1, -1, 'O', cs.launch_ns, 0, 0,
                    {}, 0, cs.host_ns, layer::mix_of(cs));
  };
  const TaskId flatten = copy("sp grads flatten");
  for (TaskId d : dp_tasks_[rank]) g.depend(d, flatten);
  if (last_compute_[rank] >= 0) g.depend(last_compute_[rank], flatten);
  const hardware::Group& tg = layers_.placement().tp;
  const TaskId ar = add_task(rank, dp_stream_[rank],
                             sim::checked_ns(layers_.coll(Collective::all_reduce, bytes, tg), "the sequence-parallel gradient all-reduce"),
                             Category::tp_comm, "sp grads all-reduce", -1, -1, 'C', 0, 0, 0,
                             {tg.crosses_domains() ? nic_[rank] : nvl_[rank]});
  g.depend(flatten, ar);
  const TaskId back = copy("sp grads copy back");
  g.depend(ar, back);
  dp_tasks_[rank].push_back(back);   // the gradient norm and the optimizer step wait for it
}

void Builder::add_grad_reduce_and_optimizer() {
  if (zero_sharded()) return add_sharded_reduce_and_optimizer();   // step/fsdp.cpp
  const auto& P = s_.parallel;
  const int dp_group = P.dp * P.cp;
  auto& g = out_.graph;
  const double loss_allreduce_s = layers_.coll(Collective::all_reduce, 8.0, layers_.placement().dp_cp);
  const bool sync = grad_norm_sync();
  std::vector<TaskId> norm_task(p_, -1);
  for (int r = 0; r < p_; ++r) {
    if (dp_group > 1) {
      if (s_.features.overlap_grad_reduce) {
        // A last stage without layers (a head-only virtual stage): the head's and MTP gradients in the
        // last buckets.
        if (out_.stage_layers[static_cast<std::size_t>(S_ - 1)].empty()) fill_last_stage_end(r);
        // The embedding's gradient is final when the first stage's backward ends (its weight
        // gradient is that backward's last kernel): the last bucket (Megatron registers it first).
        bucket_fill_[r] += embedding_params(r);
        flush_bucket(r, last_compute_[r]);
        flush_expert_bucket(r, last_compute_[r]);
      } else {
        bucket_fill_[r] = rank_params_[r];   // the MTP modules' included (models::static_memory)
        if (P.ep > 1) {
          const double ex = rank_expert_params(r);
          bucket_fill_[r] -= ex;
          expert_fill_[r] = ex;
          flush_expert_bucket(r, last_compute_[r]);
        }
        flush_bucket(r, last_compute_[r]);
      }
    }
    if (r == p_ - 1 && loss_allreduce_s > 0) {
      TaskId l = add_task(r, dp_stream_[r], sim::checked_ns(loss_allreduce_s, "the loss all-reduce"), Category::dp_comm,
                          "loss all-reduce", -1, -1, 'C', 0, 0, 0, {nvl_[r]});
      if (last_compute_[r] >= 0) g.depend(last_compute_[r], l);
      dp_tasks_[r].push_back(l);
    }
    add_sequence_parallel_grad_allreduce(r);
    if (!sync) continue;
    // The squared norm of the rank's gradient shard (fp32 main gradients, or the bf16 buffer).
    norm_task[r] = add_grad_norm(r, rank_params_[r] / (P.distributed_optimizer ? dp_group : 1),
                                 models::grad_bytes(s_.features.reduce_fp32, layers_.shape().fp32_autocast));
  }
  add_tied_embedding_allreduce(norm_task);
  const std::vector<TaskId> norm_ar = add_grad_norm_allreduce(norm_task);
  for (int r = 0; r < p_; ++r) {
    // Adam step over the local shard: read fp32 grad, master, m, v; write master, m, v and the bf16
    // weight: 30 bytes per parameter, memory-bound (multi-tensor apply, a handful of launches).
    // fp32-autocast (torch AdamW fused over fp32 params): read p, g, m, v; write p, m, v: 28 bytes.
    double local = rank_params_[r] / (P.distributed_optimizer ? dp_group : 1);
    const double rank_experts = rank_expert_params(r);
    if (P.ep > 1 && P.distributed_optimizer)   // expert shards over the expert-DP group
      local = (rank_params_[r] - rank_experts) / dp_group + rank_experts / std::max(1, layer::expert_dp_group(s_).size);
    // (a bf16 gradient buffer: the gradient read is 2 bytes, not 4)
    const TaskId optim = add_adam_step(r, local, (layers_.shape().fp32_autocast ? 28.0 : 30.0) -
                                                     (4.0 - models::grad_bytes(s_.features.reduce_fp32,
                                                                               layers_.shape().fp32_autocast)));
    for (TaskId d : dp_tasks_[r]) g.depend(d, optim);
    if (norm_ar[r] >= 0) g.depend(norm_ar[r], optim);
    if (P.distributed_optimizer && dp_group > 1 && !s_.features.overlap_param_gather) {
      // (features.fp8_params: the rank's linear weights in fp8, rank_linear_params_)
      const double fp8_linear = s_.features.fp8_params ? rank_linear_params_[r] : 0.0;
      const double dense_bytes = (rank_params_[r] - rank_experts) * 2.0 - (fp8_linear > 0 ? fp8_linear - rank_experts : 0.0);
      out_.dp_gather_bytes[r] += dense_bytes;
      const double t = layers_.coll(Collective::all_gather, dense_bytes, layers_.placement().dp_cp);
      TaskId ag = add_task(r, dp_stream_[r], sim::checked_ns(t, "the DP parameter gather"), Category::dp_comm, "dp param gather", -1, -1, 'C', 0, 0, 0,
                           {layers_.placement().dp_cp.crosses_domains() ? nic_[r] : nvl_[r]});
      g.depend(optim, ag);
      const hardware::Group eg = layer::expert_dp_group(s_);
      if (rank_experts > 0 && eg.size > 1) {
        const double expert_bytes = rank_experts * (s_.features.fp8_params ? 1.0 : 2.0);
        out_.expert_dp_gather_bytes[r] += expert_bytes;
        const double te = layers_.coll(Collective::all_gather, expert_bytes, eg);
        TaskId eag = add_task(r, dp_stream_[r], sim::checked_ns(te, "the expert-DP parameter gather"), Category::dp_comm,
                              "expert dp param gather", -1, -1, 'C', 0, 0, 0, {eg.crosses_domains() ? nic_[r] : nvl_[r]});
        g.depend(optim, eag);
      }
    }
  }
}

}  // namespace mfusim::step
