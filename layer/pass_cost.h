#pragma once
// The cost of one layer's passes on one GPU of a pipeline rank: each pass (F,
// B, W, recompute) is a chain of compute segments, a segment possibly followed
// by a collective (TP all-reduce, or reduce-scatter + all-gather with sequence
// parallelism; EP all-to-all) that the next segment waits for. With
// tp_comm_overlap the collective runs beside the chunked GEMMs it is
// pipelined with (overlap_ns). Inputs: the scenario, the model's kernels and
// communication volumes (models/), and the hardware cost model (hardware/).
// The step builder (step/) turns these segments into tasks.
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "config/scenario.h"
#include "hardware/collectives.h"
#include "hardware/cost_model.h"
#include "hardware/interference.h"
#include "models/accounting.h"
#include "sim/engine.h"

namespace mfusim::layer {

// Contention: compute kernels slow down while a collective runs beside them on
// the same GPU (the SMs its kernels hold, the HBM bandwidth they stream): the
// factor of each kind of communication comes from its kernels' footprint
// (hardware/interference.h, measured on the H200), carried by the segment
// whose collective it is (Seg::comm) and by the DP collectives
// (LayerCosts::comm_contention); each kind of compute kernel slows by its own
// curve, so a segment carries the attention and memory-bound shares of its time
// (Seg::attn_share, mem_share; seg_slowdown).

struct Seg {
  std::int64_t ns = 0;          // compute time on the GPU (execution + per-kernel gaps)
  std::int64_t launch_ns = 0;   // of which per-kernel gaps
  std::int64_t host_ns = 0;     // host issue of its kernels (TaskSpec::host_ns: the GPU waits only when the host is behind)
  double flops = 0;
  // communication after this segment (0 ns = none)
  std::int64_t comm_ns = 0;
  sim::Category comm_cat = sim::Category::other;
  bool comm_nic = false;        // over the NIC (else NVLink)
  bool comm_overlappable = false;
  // tp_comm_overlap: compute the collective can run beside (the chunks of the GEMMs it is
  // pipelined with, see pass_cost); 0 = none.
  std::int64_t overlap_ns = 0;
  // What this collective does to compute beside it (its kernels' footprint, hardware::contention):
  // the time multipliers of GEMMs and attention and its HBM share. Used where the collective
  // overlaps compute (tp_comm_overlap windows, EP all-to-all under another chain's compute).
  hardware::Contention comm{};
  // What this segment's own time is made of (for its slowdown beside a collective): its GPU time in
  // attention kernels and in memory-bound kernels (ns; the rest of `ns` GEMMs and launch gaps), and
  // c of its memory-bound part (hardware::memory_hbm_coefficient of each kernel's HBM use,
  // time-weighted). Shares are taken of `ns` when used (attn_share(), mem_share()), so time added to
  // the segment later counts as GEMM work unless it says otherwise.
  double attn_ns = 0, mem_ns = 0, mem_coef = 0;
  double attn_share() const;
  double mem_share() const;
  // What the trace shows of it (not part of its cost): the minimum HBM bytes its kernels read
  // and write (Kernel::bytes x count) and its longest-running kernel (a string literal of
  // models/; null: no kernels).
  double bytes = 0;
  const char* kernel = nullptr;
  // DualPipe's F&B pair only (step/emit.cpp, fb_order): the segment needs nothing from its
  // chain's last collective (a weight gradient, the shared expert), so it may run beside it.
  bool beside = false;
  // Not compute: the compute stream waits `ns` for a blocking collective (delayed scaling's amax all-reduce,
  // step/op_items.cpp). Nothing beside it slows it (sim::ComputeMix::host_only), it slows nothing, and its
  // time counts under its item's category.
  bool wait = false;
};

// The time multiplier of segment `sg`'s compute beside a collective of contention `c` (its GEMM,
// attention and memory-bound shares, each at its own curve: sim::mix_slowdown).
double seg_slowdown(const Seg& sg, const hardware::Contention& c);
// The engine's form of the segment's shares (sim::ComputeMix, in 1/255).
sim::ComputeMix mix_of(const Seg& sg);

// A segment whose collective runs beside the chunked GEMMs it is pipelined with (tp_comm_overlap,
// overlap_ns, see tp_overlap_windows), placed at the end: its part before the collective (head) and
// the part beside it (tail), with the launch gaps, host issue and FLOPs shared in proportion; the
// tail is GEMM chunks only, so the attention and memory-bound work stays in the head.
std::pair<Seg, Seg> split_overlap(const Seg& sg);

// The time ring attention (context parallelism, P2P) adds to an attention core of `core`
// seconds: cp steps of core / cp each, the first cp-1 beside a K/V transfer of `step_comm`
// seconds during which compute runs `slowdown` times slower (see pass_cost).
double cp_ring_extra(double core, double step_comm, int cp, double slowdown);
// The ring's length from each step's compute (`steps`, in ring order): every step but the last
// runs beside the next step's K/V transfer of `step_comm` seconds (compute `slowdown` times slower
// while it runs) and lasts as long as the slower of the two; the last step has no transfer.
double cp_ring_time(const std::vector<double>& steps, double step_comm, double slowdown);
// Context parallelism as Transformer Engine runs it (ring P2P, load-balanced causal chunks): the
// device time of each of the cp ring steps of a rank's flash attention kernel `k` (queries S/cp,
// keys S; forward or backward), each step's calls and merge passes priced by `cost` at their own
// shapes; `elem_bytes` the bytes of one Q/K/V/O element (2 bf16, 1 fp8 attention). See pass_cost.cpp.
std::vector<double> cp_step_times(const hardware::CostModel& cost, const hardware::Kernel& k, int cp, double elem_bytes);

struct PassCost {
  std::vector<Seg> segs;
};

struct LayerCost {
  PassCost f, b, w, r;
  double act_bytes = 0, stash_bytes = 0, recompute_bytes = 0;
  double params = 0;            // parameters held by this rank for the layer
  double expert_params = 0;     // of which routed-expert parameters (reduced over the expert-DP group)
  // DualPipe's F&B pair (DeepSeek-V3 §3.2.1, Figure 4), MoE layers with an EP transfer only
  // (fb = true): the forward as attention | router + permute (dispatch) | shared expert |
  // experts (combine) | unpermute; the full backward as unpermute's gradient (combine's
  // gradient) | shared expert | experts (dispatch's gradient) | MLP weight gradients | router |
  // attention | attention weight gradients. Segments marked `beside` wait for no transfer.
  // fb_b_free: the segment after which the layer's activations are freed (the attention's).
  bool fb = false;
  PassCost fb_f, fb_b;
  std::size_t fb_b_free = 0;
};

// A cost model set up for one of a scenario's ranks as the lowering prices its layers: the GEMM clock of
// its kernel mix (models::settle_gemm_duty) and the pace of the slowest of the ranks it waits for every
// micro-batch (CostModel::set_sync_group, models::sync_group_ranks). LayerCosts::place and plan's
// step-time bound use it; tools that price one GPU's kernels alone do not.
void configure_cost_model(const config::Scenario&, const models::RankShape&, hardware::CostModel&);

// The costs of one scenario's layers, memoised per layer kind (dense, MoE).
class LayerCosts {
 public:
  explicit LayerCosts(const config::Scenario& s);

  // The placement of the parallel groups and the per-rank shape; call once
  // before any cost below but the collectives' and seg_of's.
  void place();
  const hardware::Placement& placement() const { return place_; }
  const models::RankShape& shape() const { return shape_; }
  double sync_pace() const { return cost_.sync_pace(); }   // configure_cost_model's pace

  // One collective over a group (0 for a group of one or no bytes).
  double coll(hardware::Collective c, double bytes, const hardware::Group& g) const;
  // What NCCL running this collective over g does to compute beside it (none for a group of one).
  hardware::Contention comm_contention(hardware::Collective c, const hardware::Group& g) const;
  // A segment's kernels run back to back on the GPU while the host issues them
  // asynchronously (host_time per launch, docs/fidelity.md): the segment's task carries its
  // GPU time (execution + per-kernel gaps) and its host issue time; the engine lets the host
  // run ahead over the stream's tasks and makes a task wait only for a host that has fallen
  // behind (TaskSpec::host_ns). The GPU's wait for the host is launch overhead.
  // extra_host: host seconds beyond the kernels' issue (a checkpointed region's own work).
  Seg seg_of(const std::vector<const hardware::Kernel*>& ks, double extra_host = 0) const;

  const LayerCost& layer_cost(int layer);
  LayerCost end_cost(bool embedding) const;   // the embedding's, or the LM head's and loss
  // One multi-token prediction module (model.mtp_depth, DeepSeek-V3 §2.2) on the last stage:
  // its norms, projection and block (the shared head it runs again is end_cost(false)).
  LayerCost mtp_cost() const;

 private:
  struct Bounds { std::size_t mlp = 0, attn = 0, ex0 = 0, ex1 = 0; };
  hardware::AlgoChoice algo() const;
  const hardware::Calibration* cal() const { return s_.calibration ? &*s_.calibration : nullptr; }
  // extra_host: host seconds of the pass beyond its kernels (a checkpointed region's wrapper
  // and hooks, or its recomputation's), shared among its segments by their kernels' host time.
  PassCost pass_cost(const std::vector<hardware::Kernel>& ks, bool backward, bool moe_layer,
                     const models::LayerComm& lc, const Bounds&, double extra_host = 0) const;
  // The cost of a block of layer `layer`'s kind from its kernels (layer_cost, mtp_cost).
  // `shape`: the rank's shape with this block's recompute (features.recompute_every).
  LayerCost cost_of(int layer, models::LayerKernels ks, const models::RankShape& shape) const;
  // LayerCost::fb_f / fb_b of a MoE layer from its kernels and its ordinary passes (pass_cost.cpp).
  void fb_passes(const models::LayerKernels& ks, LayerCost& lc) const;
  void tp_overlap_windows(const std::vector<hardware::Kernel>& ks,
                          const std::vector<std::pair<std::size_t, std::size_t>>& spans, PassCost& pc) const;

  const config::Scenario& s_;
  hardware::CostModel cost_;
  hardware::Placement place_;
  models::RankShape shape_;
  std::map<int, LayerCost> layer_cache_;   // keyed by layer kind (0 dense, 1 moe)
};

}  // namespace mfusim::layer
