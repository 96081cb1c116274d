#pragma once
// The step builder's state: one object per lower() call, shared by the files
// of step/, each of which owns one job (see the file named beside each
// method). Internal to step/; the public interface is step/lower.h.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "config/scenario.h"
#include "hardware/collectives.h"
#include "models/memory.h"
#include "layer/pass_cost.h"
#include "schedules/schedule.h"
#include "sim/engine.h"
#include "step/items.h"
#include "step/lower.h"
#include "step/replay.h"

namespace mfusim::step {

// The parameter all-gather's bytes for one layer's parameters on a rank (step/data_parallel.cpp).
struct GatherBytes {
  double dense = 0, expert = 0, all = 0;   // all: dense + expert, gathered together
};
GatherBytes layer_gather_bytes(const config::Scenario&, int layer, const layer::LayerCost&);

using schedules::Op;
using schedules::OpKind;
using sim::Category;
using sim::TaskId;

class Builder {
 public:
  Builder(const config::Scenario& s, const LowerOptions& o) : s_(s), opt_(o), layers_(s), replay_(*this) {
    // Activation offloading synchronises per layer (step/act_offload.cpp): the per-layer lowering.
    if (act_offload_on()) opt_.per_layer = true;
  }
  Lowered run();   // builder.cpp

 private:
  friend class Replay;

  // ---- builder.cpp: the step's skeleton and the emission order ----
  void plan();                 // schedule, stages, placement, the embedding's and head's costs
  schedules::StageCosts zb_auto_costs();   // the per-stage costs zb-auto plans from
  void add_streams();          // per rank: streams and links
  void assign_ranks();         // which stages each rank runs, gradient-finishing passes per layer
  void add_static_memory();    // params, grads and optimizer state per rank
  void emit_ops(const std::vector<std::vector<std::int64_t>>& gc_before);
  // The graph's contention class of a collective whose kernels do `c` to the compute beside them.
  std::uint8_t interference_class(const hardware::Contention& c);
  // The class of a full-grid memory-bound kernel on a side stream (hardware::side_elementwise_slowdown).
  std::uint8_t side_elementwise_class();
  void add_optimizer_sync();   // the global gradient-norm check before every rank's optimizer
  TaskId add_task(int rank, sim::StreamId stream, std::int64_t ns, sim::Category cat, Name name, int mb, int chunk,
                  char kind, std::int64_t launch_ns = 0, double flops = 0, std::int64_t mem = 0,
                  sim::ResourceList res = {}, std::uint8_t interferes = 0, std::int64_t host_ns = 0,
                  sim::ComputeMix mix = {}, std::int64_t release = 0);

  // ---- op_items.cpp: an op's items (segments of its layers' passes) ----
  std::vector<Item> op_items(int rank, const Op& op, bool forward_half);
  // op_items memoised: the items depend only on the pass (F, B, W), the stage
  // and whether W is split off, never on the micro-batch (Items point into the
  // layer cost cache, whose entries are stable).
  const std::vector<Item>& items_of(int rank, const Op& op, bool forward_half);
  std::size_t items_key(const Op& op, bool forward_half) const;
  // Tasks the per-layer emission will add (for reserving the graph up front).
  std::size_t estimate_tasks();
  static Name op_name(OpKind k) {   // label(op) of an F, B or W op
    return Name(k == OpKind::F ? sim::Label::forward : k == OpKind::B ? sim::Label::backward : sim::Label::weight_grad);
  }

  // ---- emit.cpp: ops to tasks, segment by segment ----
  void emit_op(int rank, const Op& op);
  // `gathers` (the overlapped parameter gathers of the op's layers, layer -> task): each layer's first
  // segment waits for its layer's, which is then taken from the map.
  void emit_items(int rank, Chain& ch, const std::vector<Item>& items, const Name& name, int mb, int chunk,
                  std::map<int, TaskId>* gathers = nullptr);
  // beside: the segment waits for none of the chain's pending collectives (F&B pair, fb_order).
  void emit_seg(int rank, Chain& ch, const layer::Seg& sg, sim::Category cat, const Name& name, int mb, int chunk,
                char kind, std::int64_t mem, bool beside = false, std::int64_t release = 0,
                int blocks = -1);

  // ---- coarse.cpp: one task per op (LowerOptions::per_layer = false) ----
  // Play one op's chains (one, or two for F&B) locally and emit a single
  // compute task holding the result.
  TaskId emit_merged(int rank, const std::vector<const std::vector<Item>*>& chains, std::vector<Chain*> ch,
                     const Name& name, int mb, int chunk, char kind, sim::Category cat);
  // What playing one op's chains gives: the merged task's duration and side
  // information, and the layers whose gradient-final items it met, in order.
  struct Merged {
    std::int64_t t = 0, launch = 0, mem = 0, host = 0;
    // The highest the op's running allocation reaches at an item that frees bytes it held only while it ran
    // (Item::release: the loss's transients), over the op's start; 0: none.
    std::int64_t transient_top = 0;
    double flops = 0;
    layer::Seg mix;   // the op's compute as one segment: its attention and memory-bound shares
    Parts parts{};
    std::vector<int> grad_layers;
    std::vector<int*> grad_counters;   // per grad_layers entry: grad_remaining_ of the rank, or null (not counted)
  };
  Merged play_merged(const std::vector<Item>* const* chains, std::size_t n) const;
  TaskId emit_merged_task(int rank, const Merged& m, Chain* const* ch, std::size_t n, const Name& name, int mb,
                          int chunk, char kind, sim::Category cat);

  // ---- sends.cpp: stage-to-stage sends ----
  void publish(int rank, OpKind kind, int mb, int stage, TaskId last);

  // ---- data_parallel.cpp: gradient buckets, parameter gathers, optimizer ----
  void add_param_gathers();
  void on_grad_final(int rank, int layer, TaskId t);
  void flush_bucket(int rank, TaskId after);
  void flush_expert_bucket(int rank, TaskId after);   // routed-expert gradients over the expert-DP group
  void add_grad_reduce_and_optimizer();
  // The rank's Adam step on its compute stream over `local` parameters at `fused_bytes` per parameter (the fused
  // kernel's traffic; features.optimizer_foreach adds the foreach passes), allocating foreach's temporary and
  // freeing it with the gradients the backward allocated (lazy_grads_). Shared by data_parallel.cpp and fsdp.cpp.
  TaskId add_adam_step(int rank, double local, double fused_bytes);
  // The per-step gradient-norm synchronisation (data_parallel.cpp, above add_adam_step), shared by
  // both paths: whether the step has it (more than one GPU); the rank's norm kernel over `params`
  // gradients of `bytes_per_param` each, after the rank's reductions (dp_tasks_); the all-reduce of
  // the scalar over every rank, after every rank's norm kernel (-1 for each rank when no sync).
  bool grad_norm_sync() const;
  TaskId add_grad_norm(int rank, double params, double bytes_per_param);
  std::vector<TaskId> add_grad_norm_allreduce(const std::vector<TaskId>& norm_task);
  // The MTP modules (model.mtp_depth) live on the last stage with the output head: whether the
  // rank holds that stage, and their parameters on one rank (all / routed experts).
  bool holds_mtp(int rank) const;
  double mtp_params() const;
  double mtp_expert_params() const;
  // Whether the rank holds pipeline stage `stage`; the embedding's parameters it holds (the first
  // stage), the final norm's and output head's (the last stage); step/data_parallel.cpp.
  bool holds_stage(int rank, int stage) const;
  double embedding_params(int rank) const;
  // With tied embeddings, the ranks of the first and the last stage when they differ (Megatron's
  // embedding group, whose gradients are all-reduced), {-1, -1} otherwise.
  std::pair<int, int> tied_embedding_ends() const;
  void add_tied_embedding_allreduce(const std::vector<TaskId>& norm_task);
  // Megatron's all-reduce over the TP group of the gradients sequence parallelism leaves partial (the
  // parameters every TP rank holds whole), after the rank's DP sync and before its gradient norm.
  void add_sequence_parallel_grad_allreduce(int rank);
  // The bytes a rank's finalize_model_grads all-reduce moves for `params` of its gradients (whole, or its fp32
  // shard on the sharded path).
  double finalize_grad_bytes(double params) const;
  double head_params(int rank) const;
  // The last stage's gradients beyond its layers (final norm and output head, MTP modules) into the
  // rank's filling DP buckets (overlap_grad_reduce).
  void fill_last_stage_end(int rank);
  // Those parameters on the rank (0 when it holds no last stage), routed experts included (the sharded
  // path's buckets, step/fsdp.cpp, take the MTP modules' experts apart with fill_last_stage_end).
  double last_stage_end_params(int rank) const;

  // ---- fsdp.cpp: ZeRO-2/3, FSDP units, HSDP, offload (docs/fsdp.md) ----
  bool zero_sharded() const;   // zero stage >= 2, HSDP or offload: fsdp.cpp takes the DP work over
  // Megatron's activation CPU offloading (features.activation_offload_layers; step/act_offload.cpp):
  // after forward item i of micro-batch mb, the offloads Transformer Engine starts and waits for there;
  // before backward item i, its reloads.
  bool act_offload_on() const { return s_.features.activation_offload_layers > 0; }
  void act_offload_plan();
  void act_offload_forward(int rank, Chain& ch, const std::vector<Item>& items, std::size_t i, int mb);
  void act_offload_backward(int rank, Chain& ch, const std::vector<Item>& items, std::size_t i, int mb);
  bool fsdp_active() const;    // zero stage 3 over more than one rank: per-unit gathers and reduce-scatters
  void add_sharded_param_gathers();
  void sharded_grad_final(int rank, int layer, TaskId t);
  void add_sharded_reduce_and_optimizer();
  void fsdp_emit(int rank, Chain& ch, const std::vector<Item>& items, const Name& name, const Op& op);
  // Reduce `params` gradients (routed experts' when `experts`: over fsdp_expert_shard_group()).
  TaskId fsdp_reduce(int rank, double params, TaskId after, std::int64_t grad_buffer, bool experts = false);
  hardware::Group fsdp_shard_group() const;
  // The members of the shard group that hold the same routed experts (ep > 1; the shard group otherwise):
  // shard x cp / ep of them, as models::sharded_static_memory shards the experts.
  hardware::Group fsdp_expert_shard_group() const;
  hardware::Group fsdp_replica_group() const;
  hardware::Group fsdp_expert_replica_group() const;   // HSDP: the same experts' holders in the other shard groups
  // The rank's routed-expert parameters (ep > 1; the MTP modules' included), 0 otherwise.
  double rank_expert_params(int rank);

  // ---- task_info.cpp: what the trace shows of an op's tasks (TaskInfo's layer, bytes, kernels) ----
  void describe_op(int rank, const Op& op, TaskId first);

  // ---- host_events.cpp: data loading and Python GC ----
  void add_data_loading();
  void add_gc_pauses(int rank, std::vector<std::int64_t>& pause_before_op);

  // ---- the scenario and the costs ----
  const config::Scenario& s_;
  LowerOptions opt_;
  layer::LayerCosts layers_;
  layer::LayerCost emb_cost_, head_cost_;
  // The head's forward and backward memory as blocks (models::HeadMemory) where the loss holds
  // transients: out_.mem_blocks[0] and [1]; none otherwise (the head's activations as one block).
  void head_mem_blocks();
  // zero_grad(set_to_none) gradients (Lowered::lazy_grads): the first op on a rank that produces a stage's
  // weight gradients allocates them (its last compute task; coarse: the op's one task); the optimizer frees them.
  bool lazy_grads_ = false;
  std::vector<std::vector<int>> grads_allocated_;   // per rank: the stages allocated so far, ascending (layer order)
  std::vector<double> lazy_grad_bytes_;              // per rank, allocated so far
  void allocate_lazy_grads(int rank, const Op& op);
  layer::LayerCost mtp_cost_;               // one MTP module on the last stage (model.mtp_depth > 0)
  // Per (virtual) stage: delayed scaling's amax all-reduce at the end of the chunk's forward and backward
  // (models::fp8_amax_group_ranks; Seg::wait); empty where none runs. Sized once in plan(): items point here.
  std::vector<layer::Seg> amax_f_, amax_b_;
  sim::Category amax_cat_ = sim::Category::tp_comm;
  void plan_amax_reduction();   // op_items.cpp
  // One amax all-reduce of `layers`' amaxes at a chunk's forward or backward end (0: none is priced).
  double amax_seconds(bool forward, double layers) const;
  std::vector<double> amax_layers() const;   // per stage: the layers one reduction carries
  Lowered out_;
  std::string sched_;                       // the schedule's name
  int S_ = 1, p_ = 1, m_ = 1;               // virtual stages, pipeline ranks, micro-batches
  bool split_w_ = false;
  std::vector<std::vector<int>> rank_stages_;   // per rank: the stages it runs
  std::vector<double> rank_params_;             // per rank: parameters held
  std::vector<double> rank_linear_params_;      // per rank: of which linear weights (fp8 under fp8 recipes)

  // ---- per rank: streams and links ----
  std::uint16_t tp_text_ = 0, a2a_text_ = 0, amax_text_ = 0;   // "tp collective", "all-to-all", "fp8 amax all-reduce"
  std::vector<sim::StreamId> tp_stream_, ep_stream_, pp_fwd_stream_, pp_bwd_stream_, dp_stream_;
  std::vector<sim::ResourceId> nvl_, nic_;
  std::vector<TaskId> last_compute_;

  // ---- op items (op_items.cpp, coarse.cpp, host_events.cpp) ----
  std::vector<std::vector<Item>> items_cache_;
  std::vector<char> items_cached_;
  // A single chain starts from an idle GPU: its play depends only on the item
  // list, so it is memoised per (item list, rank).
  std::vector<Merged> merged_cache_;
  std::vector<char> merged_built_;
  std::vector<double> busy_of_items_;      // per items_key: the GC time base's sum over the items (NaN: not yet)
  Replay replay_;

  // ---- routing (sends.cpp): (kind F/B, microbatch, stage) -> output task ----
  std::vector<TaskId> f_out_, b_out_;      // index mb * S + stage
  std::vector<int> f_runner_, b_runner_;   // index mb * S + stage: the rank that runs it
  std::map<TaskId, int> send_target_;      // stage-to-stage sends: receiving rank
  std::vector<std::vector<TaskId>> p2p_wait_;   // per rank: sends the next compute task waits for
  std::int64_t pp_send_ns_ = -1;           // one stage-to-stage send (-1: not computed yet)

  // ---- data parallelism (data_parallel.cpp) ----
  std::vector<double> bucket_fill_;        // per rank, parameters in the open bucket
  std::vector<double> expert_fill_;        // per rank, routed-expert parameters in the open expert bucket (ep > 1)
  std::vector<std::vector<TaskId>> dp_tasks_;   // per rank
  std::vector<std::map<int, int>> grad_remaining_;   // per rank: stage -> backward ops still to come
  std::vector<std::map<int, int>> stage_of_layer_rank_;
  // Activation offloading: the host-link streams per rank, TE's layer window of each offloaded layer,
  // and per rank and micro-batch the offload of each layer and the last reload with the layers left.
  std::vector<sim::StreamId> d2h_stream_, h2d_stream_;
  std::vector<int> offload_window_;
  struct OffloadMb {
    std::map<int, TaskId> d2h;   // layer -> its offload
    TaskId last_h2d = -1;
    int offloaded = -1;          // groups still on the host in the backward (-1: backward not started)
  };
  std::vector<std::map<int, OffloadMb>> offload_;
  std::vector<std::map<int, TaskId>> param_gather_;   // overlap_param_gather: per rank, layer -> task

  // ---- ZeRO-2/3 and FSDP (fsdp.cpp) ----
  std::vector<sim::StreamId> fsdp_ag_stream_, fsdp_rs_stream_;
  std::vector<std::map<int, std::int64_t>> unit_gathered_;   // per rank: unit -> gathered bytes held (absent: sharded)
  std::vector<std::map<int, std::int64_t>> unit_grad_;       // per rank: unit -> unsharded gradient bytes held
  std::vector<std::map<int, int>> unit_backwards_;           // per rank: unit -> backward passes seen this step
  double fsdp_emb_params_ = 0, fsdp_head_params_ = 0;        // parameters of the embedding and the head unit, per rank
  double fsdp_head_expert_params_ = 0;                        // the head unit's routed experts (the MTP modules', ep > 1)

  // ---- host events (host_events.cpp) ----
  std::vector<TaskId> data_task_;          // per microbatch
  std::int64_t data_cost_ns_ = 0;          // loading one micro-batch
};

// Megatron-LM DDP default bucket size: max(40M, 1M * dp) parameters
// (megatron/training/training.py, get_model: `bucket_size = max(40000000, 1000000 * dp_size)`).
inline double bucket_params(int dp) { return std::max(40e6, 1e6 * dp); }

}  // namespace mfusim::step
