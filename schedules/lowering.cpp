// Lowering a scenario to a task graph (see lowering.h for the contract).
//
// A layer's pass (F, B, W, recompute) is a chain of compute segments; a
// segment may be followed by a collective (TP all-reduce, or all-gather +
// reduce-scatter with sequence parallelism; EP all-to-all) on the rank's
// communication stream, which the next segment waits for. With
// tp_comm_overlap the collective starts after the first GEMM chunk of its
// segment and runs beside the rest (Megatron's userbuffer pipelining), slowing
// compute by the contention factor. DualPipe's F&B interleaves the segments
// of a forward and a backward chain so each chain's communication runs
// under the other's compute.
#include "schedules/lowering.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <stdexcept>
#include <tuple>

#include "hardware/collectives.h"
#include "hardware/cost_model.h"
#include "models/accounting.h"
#include "sim/process_memory.h"

namespace mfusim::schedules {

namespace {

using config::Scenario;
using hardware::Collective;
using hardware::Kernel;
using sim::Category;
using sim::TaskId;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::int64_t to_ns(double seconds) { return static_cast<std::int64_t>(std::llround(seconds * 1e9)); }

// Megatron-LM DDP default bucket size: max(40M, 1M * dp) parameters
// (megatron/training/training.py, get_model: `bucket_size = max(40000000, 1000000 * dp_size)`).
double bucket_params(int dp) { return std::max(40e6, 1e6 * dp); }

// Contention: compute kernels slow down while a collective runs on the same
// GPU (SMs and HBM shared with NCCL kernels). 10% is the order reported for
// NCCL-kernel interference on H100 in Megatron's TP-comm-overlap work
// (Wang et al. 2023, "Overlap communication with dependent computation via
// decomposition", reports 5–15%); documented in docs/cost-model.md.
constexpr double kDefaultContention = 0.10;

struct Seg {
  std::int64_t ns = 0;          // compute time on the GPU (execution + per-kernel gaps)
  std::int64_t launch_ns = 0;   // of which per-kernel gaps
  std::int64_t host_ns = 0;     // host issue of its kernels (TaskSpec::host_ns: the GPU waits only when the host is behind)
  double flops = 0;
  // communication after this segment (0 ns = none)
  std::int64_t comm_ns = 0;
  Category comm_cat = Category::other;
  bool comm_nic = false;        // over the NIC (else NVLink)
  bool comm_overlappable = false;
  // tp_comm_overlap: compute the collective can run beside (the chunks of the GEMMs it is
  // pipelined with, see pass_cost); 0 = none.
  std::int64_t overlap_ns = 0;
};

// A segment whose collective runs beside the chunked GEMMs it is pipelined with (tp_comm_overlap,
// overlap_ns, see tp_overlap_windows), placed at the end: its part before the collective (head) and
// the part beside it (tail), with the launch gaps, host issue and FLOPs shared in proportion.
std::pair<Seg, Seg> split_overlap(const Seg& sg) {
  Seg head, tail;
  head.ns = sg.ns - std::min(sg.ns, sg.overlap_ns);
  const double share = static_cast<double>(head.ns) / static_cast<double>(sg.ns);
  head.launch_ns = static_cast<std::int64_t>(std::llround(sg.launch_ns * share));
  head.host_ns = static_cast<std::int64_t>(std::llround(sg.host_ns * share));
  head.flops = sg.flops * share;
  tail.ns = sg.ns - head.ns;
  tail.launch_ns = sg.launch_ns - head.launch_ns;
  tail.host_ns = sg.host_ns - head.host_ns;
  tail.flops = sg.flops * (1 - share);
  return {head, tail};
}

struct PassCost {
  std::vector<Seg> segs;
};

struct LayerCost {
  PassCost f, b, w, r;
  double act_bytes = 0, stash_bytes = 0, recompute_bytes = 0;
  double params = 0;            // parameters held by this rank for the layer
};

class Lowerer {
 public:
  Lowerer(const Scenario& s, const LowerOptions& o)
      : s_(s), opt_(o), cost_(s.hardware, s.training.precision,
                              s.calibration ? &*s.calibration : nullptr, s.features.cuda_graphs) {}

  Lowered run();

 private:
  // ---- costs ----
  hardware::AlgoChoice algo() const {
    switch (s_.features.nccl_algo) {
      case config::NcclAlgo::ring: return hardware::AlgoChoice::ring;
      case config::NcclAlgo::tree: return hardware::AlgoChoice::tree;
      default: return hardware::AlgoChoice::auto_;
    }
  }
  const hardware::Calibration* cal() const { return s_.calibration ? &*s_.calibration : nullptr; }
  double coll(Collective c, double bytes, const hardware::Group& g) const {
    if (g.size <= 1 || bytes <= 0) return 0;
    return hardware::collective_time(c, bytes, g, s_.hardware, algo(), cal()).seconds;
  }
  // A segment's kernels run back to back on the GPU while the host issues them
  // asynchronously (host_time per launch, docs/fidelity.md): the segment's task carries its
  // GPU time (execution + per-kernel gaps) and its host issue time; the engine lets the host
  // run ahead over the stream's tasks and makes a task wait only for a host that has fallen
  // behind (TaskSpec::host_ns). The GPU's wait for the host is launch overhead.
  // extra_host: host seconds beyond the kernels' issue (a checkpointed region's own work).
  Seg seg_of(const std::vector<const Kernel*>& ks, double extra_host = 0) const {
    Seg sg;
    for (const Kernel* k : ks) sg.flops += k->flops * k->count;
    const hardware::StreamTime st = cost_.stream_time(ks, extra_host);
    sg.ns = to_ns(st.gpu_seconds);
    sg.launch_ns = to_ns(st.gpu_seconds - st.exec_seconds);
    sg.host_ns = to_ns(st.host_seconds);
    return sg;
  }
  struct Bounds { std::size_t mlp = 0, attn = 0, ex0 = 0, ex1 = 0; };
  // extra_host: host seconds of the pass beyond its kernels (a checkpointed region's wrapper
  // and hooks, or its recomputation's), shared among its segments by their kernels' host time.
  PassCost pass_cost(const std::vector<Kernel>& ks, bool backward, bool moe_layer, const models::LayerComm& lc,
                     const Bounds&, double extra_host = 0) const;
  void tp_overlap_windows(const std::vector<Kernel>& ks, const std::vector<std::pair<std::size_t, std::size_t>>& spans,
                          PassCost& pc) const;
  const LayerCost& layer_cost(int layer);
  LayerCost end_cost(bool embedding);

  // ---- emission ----
  struct Chain {
    std::vector<TaskId> pending;   // what the next segment must wait for
    TaskId last = -1;              // last task of the chain (its output)
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
  static Name op_name(OpKind k) {   // label(op) of an F, B or W op
    return Name(k == OpKind::F ? sim::Label::forward : k == OpKind::B ? sim::Label::backward : sim::Label::weight_grad);
  }
  std::uint16_t tp_text_ = 0, a2a_text_ = 0;   // "tp collective", "all-to-all"
  TaskId add_task(int rank, sim::StreamId stream, std::int64_t ns, Category cat, Name name, int mb, int chunk,
                  char kind, std::int64_t launch_ns = 0, double flops = 0, std::int64_t mem = 0,
                  sim::ResourceList res = {}, bool interferes = false, std::int64_t host_ns = 0);
  void emit_seg(int rank, Chain& ch, const Seg& sg, Category cat, const Name& name, int mb, int chunk, char kind,
                std::int64_t mem);
  void emit_pass_layer(int rank, Chain& ch, const PassCost& pc, Category cat, const std::string& name, int mb,
                       int chunk, char kind, std::int64_t mem_first, std::int64_t mem_last);
  // Segments of one op as a list of closures is overkill: ops are emitted as
  // flat lists of (segment, category, memory) items, interleaved for F&B.
  struct Item {
    const Seg* seg;
    Category cat;
    char kind;
    std::int64_t mem;
    int layer;          // -1 for embedding/head
    bool grad_final;    // this item finishes the layer's weight gradient for the step
  };
  std::vector<Item> op_items(int rank, const Op& op, bool forward_half);
  // op_items memoised: the items depend only on the pass (F, B, W), the stage
  // and whether W is split off, never on the micro-batch (Items point into the
  // layer cost cache, whose entries are stable).
  const std::vector<Item>& items_of(int rank, const Op& op, bool forward_half);
  std::vector<std::vector<Item>> items_cache_;
  std::vector<char> items_cached_;
  std::size_t items_key(const Op& op, bool forward_half) const;
  // The tasks and edges that emit_items adds for one item list on one rank,
  // recorded once (ids relative to the first task) and replayed per
  // micro-batch: the same tasks, in the same order, with the same edges in
  // the same order as emit_seg would add them. Used when nothing can come in
  // between (no parameter gather to wait for, no gradient bucket that could
  // be flushed inside the op).
  struct Program {
    std::vector<sim::TaskSpec> tasks;            // microbatch, chunk and the first name patched per use
    std::vector<TaskInfo> info;
    std::vector<std::pair<TaskId, TaskId>> edges;   // relative; kExternal = the chain's pending tasks
    std::vector<TaskId> pending;                 // relative: the chain's pending tasks at the end
    TaskId last = -1, last_compute = -1;         // relative
    // F&B programs (two chains): the B chain's pending tasks and last task at
    // the end, its first task, and per task whether it is on the B chain.
    std::vector<TaskId> pending_b;
    TaskId last_b = -1, first_b = -1;
    std::vector<char> in_b;
    std::vector<int*> grad_counters;             // grad_remaining_ of each grad-final item's layer, in order
    bool grad_free = true;                       // no grad-final item reaches on_grad_final's bucket logic
    sim::TaskGraph::Block block;                 // `tasks` checked once (at the first use; size 0: not yet)
  };
  static constexpr TaskId kExternal = -1, kExternalB = -2;   // the (F) chain's, the B chain's pending inputs
  void record_item(Program& pr, int rank, const Item& it, std::vector<TaskId>& pending, TaskId& last, bool chain_b,
                   std::vector<int>& layers_seen);
  Program& program_of(int rank, const Op& op);
  bool emit_program(int rank, Chain& ch, const Op& op);
  bool emit_fb_program(int rank, Chain& cf, Chain& cb, const Op& op, const std::string& name);
  std::map<std::tuple<std::size_t, std::size_t, int>, Program> fb_programs_;   // (F list, B list, rank)
  std::vector<Program> programs_;
  std::vector<char> program_built_;
  std::vector<std::pair<TaskId, TaskId>> edge_scratch_;
  // Tasks the per-layer emission will add (for reserving the graph up front).
  std::size_t estimate_tasks();
  void emit_op(int rank, const Op& op);
  void emit_items(int rank, Chain& ch, const std::vector<Item>& items, const Name& name, int mb, int chunk);
  // Coarse lowering: play one op's chains (one, or two for F&B) locally and
  // emit a single compute task holding the result.
  TaskId emit_merged(int rank, const std::vector<const std::vector<Item>*>& chains, std::vector<Chain*> ch,
                     const Name& name, int mb, int chunk, char kind, Category cat);
  // What playing one op's chains gives: the merged task's duration and side
  // information, and the layers whose gradient-final items it met, in order.
  struct Merged {
    std::int64_t t = 0, launch = 0, mem = 0, host = 0;
    double flops = 0;
    Parts parts{};
    std::vector<int> grad_layers;
    std::vector<int*> grad_counters;   // per grad_layers entry: grad_remaining_ of the rank, or null (not counted)
  };
  Merged play_merged(const std::vector<Item>* const* chains, std::size_t n) const;
  TaskId emit_merged_task(int rank, const Merged& m, Chain* const* ch, std::size_t n, const Name& name, int mb,
                          int chunk, char kind, Category cat);
  // A single chain starts from an idle GPU: its play depends only on the item
  // list, so it is memoised per (item list, rank).
  std::vector<Merged> merged_cache_;
  std::vector<char> merged_built_;
  void on_grad_final(int rank, int layer, TaskId t);
  void flush_bucket(int rank, TaskId after);
  void publish(int rank, OpKind kind, int mb, int stage, TaskId last);

  const Scenario& s_;
  LowerOptions opt_;
  hardware::CostModel cost_;
  hardware::Placement place_;
  models::RankShape shape_;
  Lowered out_;
  int S_ = 1, p_ = 1, m_ = 1;
  bool split_w_ = false;
  std::map<int, LayerCost> layer_cache_;   // keyed by layer kind (0 dense, 1 moe)
  LayerCost emb_cost_, head_cost_;
  // per rank
  std::vector<sim::StreamId> tp_stream_, ep_stream_, pp_fwd_stream_, pp_bwd_stream_, dp_stream_;
  std::vector<std::vector<sim::StreamId>> data_streams_;
  std::vector<sim::ResourceId> nvl_, nic_;
  // routing: (kind F/B, microbatch, stage) -> output task
  std::vector<TaskId> f_out_, b_out_;      // index mb * S + stage
  std::vector<int> f_runner_, b_runner_;  // index mb * S + stage: the rank that runs it
  std::vector<TaskId> data_task_;          // per microbatch
  // DP gradient buckets
  std::vector<double> bucket_fill_;        // per rank, parameters in the open bucket
  std::vector<std::vector<TaskId>> dp_tasks_;   // per rank
  std::vector<std::map<int, int>> grad_remaining_;   // per rank: stage -> backward ops still to come
  std::vector<std::map<int, int>> stage_of_layer_rank_;
  // parameter all-gather buckets (overlap_param_gather): per rank, layer -> task
  std::vector<std::map<int, TaskId>> param_gather_;
  std::vector<TaskId> last_compute_;
  std::map<TaskId, int> send_target_;      // stage-to-stage sends: receiving rank
  std::vector<std::vector<TaskId>> p2p_wait_;   // per rank: sends the next compute task waits for
  std::int64_t data_cost_ns_ = 0;          // loading one micro-batch
  std::int64_t pp_send_ns_ = -1;           // one stage-to-stage send (-1: not computed yet)
  std::vector<double> busy_of_items_;      // per items_key: the GC time base's sum over the items (NaN: not yet)
  void add_gc_pauses(int rank, std::vector<std::int64_t>& pause_before_op);
 public:
  const std::map<TaskId, int>& send_targets() const { return send_target_; }
};

// The TaskSpec of one lowered task. add_task and the recorded op programs
// (record_item) both build it here, so a replayed program adds exactly the
// tasks add_task would have added.
sim::TaskSpec spec_of(sim::StreamId stream, std::int64_t ns, Category cat, std::uint16_t text, char kind,
                      std::int64_t mem, sim::ResourceList res, bool interferes, std::int64_t host_ns = 0) {
  sim::TaskSpec t;
  t.host_ns = std::max<std::int64_t>(0, host_ns);
  t.stream = stream;
  t.duration_ns = std::max<std::int64_t>(0, ns);
  t.category = cat;
  t.text = text;
  t.kind = kind;
  t.resources = res;
  t.interferes = interferes;
  t.memory_delta = mem;
  return t;
}

TaskId Lowerer::add_task(int rank, sim::StreamId stream, std::int64_t ns, Category cat, Name name, int mb,
                         int chunk, char kind, std::int64_t launch_ns, double flops, std::int64_t mem,
                         sim::ResourceList res, bool interferes, std::int64_t host_ns) {
  sim::TaskSpec t = spec_of(stream, ns, cat, name.id, kind, mem, res, interferes, host_ns);
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

PassCost Lowerer::pass_cost(const std::vector<Kernel>& ks, bool backward, bool moe_layer,
                            const models::LayerComm& lc, const Bounds& bd, double extra_host) const {
  PassCost pc;
  if (ks.empty()) return pc;
  auto range = [&](std::size_t from, std::size_t to) {
    std::vector<const Kernel*> v;
    for (std::size_t i = std::min(from, ks.size()); i < std::min(to, ks.size()); ++i) v.push_back(&ks[i]);
    return v;
  };
  // The region's own host work (extra_host) runs along its ops (a pack or unpack hook per saved
  // tensor): each segment takes the share of it that its kernels have of the pass's host issue.
  double host_all = 0;
  if (extra_host > 0)
    for (const Kernel& k : ks) host_all += cost_.host_time(k);
  auto seg = [&](const std::vector<const Kernel*>& v) {
    double h = 0;
    if (extra_host > 0 && host_all > 0)
      for (const Kernel* k : v) h += cost_.host_time(*k);
    return seg_of(v, host_all > 0 ? extra_host * h / host_all : 0);
  };
  const bool sp = s_.parallel.sequence_parallel;
  // One TP collective point per block: all-reduce, or reduce-scatter + all-gather with SP
  // (Korthikanti et al. 2022 §4.2.2: the same bandwidth as the all-reduce).
  double tp_s = 0;
  if (s_.parallel.tp > 1 && lc.tp_collectives > 0) {
    tp_s = sp ? coll(Collective::reduce_scatter, lc.tp_bytes, place_.tp) + coll(Collective::all_gather, lc.tp_bytes, place_.tp)
              : coll(Collective::all_reduce, lc.tp_bytes, place_.tp);
  }
  const double a2a_s = moe_layer && s_.parallel.ep > 1 ? coll(Collective::all_to_all, lc.ep_all_to_all_bytes, place_.ep) : 0;
  auto with_tp = [&](Seg sg) {
    sg.comm_ns = to_ns(tp_s);
    sg.comm_cat = Category::tp_comm;
    sg.comm_nic = place_.tp.crosses_domains();
    sg.comm_overlappable = true;
    return sg;
  };
  auto with_a2a = [&](Seg sg) {
    sg.comm_ns = to_ns(a2a_s);
    sg.comm_cat = Category::ep_comm;
    sg.comm_nic = place_.ep.crosses_domains();
    return sg;
  };
  // Context parallelism: ring attention passes K/V cp-1 times, overlapped with attention compute;
  // what exceeds the attention block's compute is exposed.
  const double cp_s = s_.parallel.cp > 1 ? (s_.parallel.cp - 1) * coll(Collective::send_recv, lc.cp_bytes, place_.cp) : 0;
  auto attn_seg = [&](const std::vector<const Kernel*>& v) {
    Seg sg = with_tp(seg(v));
    if (cp_s > 0) sg.ns += std::max<std::int64_t>(0, to_ns(cp_s) - sg.ns);
    return sg;
  };
  const std::size_t n = ks.size();
  std::vector<std::pair<std::size_t, std::size_t>> spans;   // kernel range of each segment
  auto add = [&](Seg sg, std::size_t from, std::size_t to) {
    pc.segs.push_back(sg);
    spans.emplace_back(std::min(from, n), std::min(to, n));
  };
  if (!backward) {
    add(attn_seg(range(0, bd.mlp)), 0, bd.mlp);
    if (!moe_layer) {
      add(with_tp(seg(range(bd.mlp, n))), bd.mlp, n);
    } else {
      add(with_a2a(seg(range(bd.mlp, bd.ex0))), bd.mlp, bd.ex0);
      add(with_a2a(seg(range(bd.ex0, bd.ex1))), bd.ex0, bd.ex1);
      add(seg(range(bd.ex1, n)), bd.ex1, n);
    }
  } else {
    if (!moe_layer) {
      add(with_tp(seg(range(0, bd.attn))), 0, bd.attn);
    } else {
      add(with_a2a(seg(range(0, bd.ex0))), 0, bd.ex0);
      add(with_a2a(seg(range(bd.ex0, bd.ex1))), bd.ex0, bd.ex1);
      add(seg(range(bd.ex1, bd.attn)), bd.ex1, bd.attn);
    }
    add(attn_seg(range(bd.attn, n)), bd.attn, n);
  }
  if (s_.features.tp_comm_overlap && s_.parallel.tp > 1) tp_overlap_windows(ks, spans, pc);
  // Drop empty segments without communication.
  pc.segs.erase(std::remove_if(pc.segs.begin(), pc.segs.end(), [](const Seg& x) { return x.ns == 0 && x.comm_ns == 0; }),
                pc.segs.end());
  return pc;
}

// TP communication overlap (Megatron-LM --tp-comm-overlap, Transformer Engine
// userbuffers). With sequence parallelism the collective point after segment i is
// the reduce-scatter of its last GEMM's output (attn_out, fc2; fc1/qkv dgrad in B)
// and the all-gather feeding the first GEMM of the next segment (fc1, qkv of the
// next layer; attn_out/fc2 dgrad in B). TE splits each of those two GEMMs into tp
// chunks along the token dimension and pipelines the collective with them
// (ring-exchange all-gather: chunk j's shard arrives while chunk j-1 computes;
// pipelined reduce-scatter: chunk j's partial sums leave while chunk j+1
// computes). So:
//  * only (tp-1)/tp of those two GEMMs can hide the collective, not the norms,
//    RoPE or attention core around them; what is left is exposed;
//  * the chunked GEMMs run slower than whole ones (tp GEMMs of m/tp rows), a cost
//    paid whether or not there was communication to hide;
//  * while the collective runs the GEMM shares SMs and HBM with it (the engine's
//    contention factor, kDefaultContention).
// The next segment's first GEMM is this layer's own (the next layer's is the same
// shape); the window runs at the end of segment i on the timeline, so its length,
// not its position, is what the model keeps.
void Lowerer::tp_overlap_windows(const std::vector<Kernel>& ks,
                                 const std::vector<std::pair<std::size_t, std::size_t>>& spans, PassCost& pc) const {
  const int chunks = s_.parallel.tp;
  struct Ends { double first = 0, last = 0; std::size_t first_i = 0, last_i = 0; bool any = false; };
  auto exec = [&](const Kernel& k) { return cost_.time(k) - cost_.launch_time(k); };
  auto chunked = [&](const Kernel& k) {
    Kernel c = k;
    c.m = std::max<std::int64_t>(1, (k.m + chunks - 1) / chunks);
    c.flops = 0;   // recomputed from the shape
    c.bytes = 0;
    return chunks * exec(c);
  };
  std::vector<Ends> ends(spans.size());
  for (std::size_t i = 0; i < spans.size(); ++i)
    for (std::size_t j = spans[i].first; j < spans[i].second; ++j)
      if (ks[j].kind == hardware::KernelKind::gemm) {
        if (!ends[i].any) ends[i].first_i = j;
        ends[i].last_i = j;
        ends[i].any = true;
      }
  for (auto& e : ends)
    if (e.any) {
      e.first = chunked(ks[e.first_i]);
      e.last = chunked(ks[e.last_i]);
    }
  const std::size_t n = pc.segs.size();
  std::vector<bool> first_chunked(n, false), last_chunked(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    Seg& sg = pc.segs[i];
    if (!(sg.comm_ns > 0 && sg.comm_overlappable) || !ends[i].any) continue;
    std::size_t nx = (i + 1) % n;
    while (nx != i && !ends[nx].any) nx = (nx + 1) % n;
    const double window = (ends[i].last + ends[nx].first) * (chunks - 1) / chunks;
    sg.overlap_ns = to_ns(window);
    last_chunked[i] = true;
    first_chunked[nx] = true;
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!ends[i].any) continue;
    double extra = 0;
    if (last_chunked[i]) extra += ends[i].last - exec(ks[ends[i].last_i]);
    if (first_chunked[i] && ends[i].first_i != ends[i].last_i) extra += ends[i].first - exec(ks[ends[i].first_i]);
    pc.segs[i].ns += std::max<std::int64_t>(0, to_ns(extra));
  }
}

const LayerCost& Lowerer::layer_cost(int layer) {
  const bool moe = s_.model.is_moe_layer(layer);
  const int key = moe ? 1 : 0;
  auto it = layer_cache_.find(key);
  if (it != layer_cache_.end()) return it->second;
  LayerCost lc;
  const auto ks = models::layer_kernels(s_.model, layer, shape_);
  const auto comm = models::layer_comm(s_.model, layer, shape_);
  const Bounds fb{ks.f_mlp, 0, ks.f_experts, ks.f_experts_end};
  // A checkpointed layer (recompute on) costs the host its wrapper in the forward and the
  // recomputation's trigger in the backward, beyond the ops (CostModel::checkpoint_host).
  const bool ckpt = s_.features.recompute != config::Recompute::none;
  lc.f = pass_cost(ks.f, false, moe, comm, fb, ckpt ? cost_.checkpoint_host() : 0);
  lc.b = pass_cost(ks.b, true, moe, comm, Bounds{0, ks.b_attn, ks.b_experts, ks.b_experts_end});
  lc.w = PassCost{};
  if (!ks.w.empty()) {
    std::vector<const Kernel*> all;
    for (const auto& k : ks.w) all.push_back(&k);
    lc.w.segs.push_back(seg_of(all));
  }
  if (s_.features.recompute == config::Recompute::full) {
    lc.r = pass_cost(ks.r, false, moe, comm, fb, cost_.recompute_host());
  } else if (!ks.r.empty()) {
    std::vector<const Kernel*> all;
    for (const auto& k : ks.r) all.push_back(&k);
    lc.r.segs.push_back(seg_of(all, cost_.recompute_host()));
  }
  lc.act_bytes = models::activation_bytes(s_.model, layer, shape_);
  lc.stash_bytes = std::min(lc.act_bytes, models::w_stash_bytes(s_.model, layer, shape_));
  if (s_.features.recompute != config::Recompute::none) {
    models::RankShape full = shape_;
    full.recompute = config::Recompute::none;
    lc.recompute_bytes = std::max(0.0, models::activation_bytes(s_.model, layer, full) - lc.act_bytes);
  }
  // Parameters of the layer held by this rank (sharded by tp, experts by ep), for DP buckets.
  const auto& P = s_.parallel;
  const auto sm = models::static_memory(s_.model, {layer}, false, false, P.tp, P.ep, P.dp, P.distributed_optimizer);
  lc.params = sm.params / models::param_bytes(false);   // bf16 static_memory: 2 bytes per parameter
  return layer_cache_.emplace(key, std::move(lc)).first->second;
}

LayerCost Lowerer::end_cost(bool embedding) {
  LayerCost lc;
  const auto ks = embedding ? models::embedding_kernels(s_.model, shape_) : models::head_kernels(s_.model, shape_);
  auto one = [&](const std::vector<Kernel>& v) {
    PassCost pc;
    if (v.empty()) return pc;
    std::vector<const Kernel*> all;
    for (const auto& k : v) all.push_back(&k);
    pc.segs.push_back(seg_of(all));
    // The vocab-parallel LM head and its loss need one all-reduce of b*s*h over TP.
    return pc;
  };
  lc.f = one(ks.f);
  lc.b = one(ks.b);
  lc.w = one(ks.w);
  lc.act_bytes = embedding ? models::embedding_activation_bytes(s_.model, shape_)
                           : models::head_activation_bytes(s_.model, shape_);
  return lc;
}

void Lowerer::emit_seg(int rank, Chain& ch, const Seg& sg, Category cat, const Name& name, int mb, int chunk,
                       char kind, std::int64_t mem) {
  const sim::StreamId cs = out_.compute_stream[rank];
  const bool overlap = sg.comm_ns > 0 && sg.comm_overlappable && s_.features.tp_comm_overlap;
  TaskId head = -1, tail = -1;
  if (overlap && sg.ns > 0) {
    const auto [h, t] = split_overlap(sg);
    head = add_task(rank, cs, h.ns, cat, name, mb, chunk, kind, h.launch_ns, h.flops, mem, {}, false, h.host_ns);
    tail = add_task(rank, cs, t.ns, cat, Name(), mb, chunk, kind, t.launch_ns, t.flops, 0, {}, false, t.host_ns);
  } else {
    head = tail = add_task(rank, cs, sg.ns, cat, name, mb, chunk, kind, sg.launch_ns, sg.flops, mem, {}, false,
                           sg.host_ns);
  }
  for (TaskId d : ch.pending) out_.graph.depend(d, head);
  ch.pending.clear();
  last_compute_[rank] = tail;
  ch.last = tail;
  if (sg.comm_ns > 0) {
    const bool ep = sg.comm_cat == Category::ep_comm;
    const sim::StreamId st = ep ? ep_stream_[rank] : tp_stream_[rank];
    const sim::ResourceId res = sg.comm_nic ? nic_[rank] : nvl_[rank];
    TaskId c = add_task(rank, st, sg.comm_ns, sg.comm_cat, Name(sim::Label::text, ep ? a2a_text_ : tp_text_), mb, chunk, 'C', 0, 0, 0,
                        {res}, overlap || ep);
    out_.graph.depend(overlap ? head : tail, c);
    ch.pending.push_back(c);
    if (overlap) ch.pending.push_back(tail);
    ch.last = c;
  }
}

std::size_t Lowerer::items_key(const Op& op, bool forward_half) const {
  const bool fb = op.kind == OpKind::FB;
  const OpKind kind = fb ? (forward_half ? OpKind::F : OpKind::B) : op.kind;
  const int stage = fb && !forward_half ? op.stage_b : op.stage;
  const bool split = fb && forward_half ? false : op.split_w;
  const int k = kind == OpKind::F ? 0 : kind == OpKind::B ? 1 : 2;
  return (static_cast<std::size_t>(stage) * 3 + k) * 2 + (split ? 1 : 0);
}

const std::vector<Lowerer::Item>& Lowerer::items_of(int rank, const Op& op, bool forward_half) {
  const std::size_t key = items_key(op, forward_half);
  const int stage = op.kind == OpKind::FB && !forward_half ? op.stage_b : op.stage;
  if (items_cache_.empty()) {   // sized once: references handed out stay valid
    items_cache_.resize(static_cast<std::size_t>(S_) * 6);
    items_cached_.assign(items_cache_.size(), 0);
  }
  if (key >= items_cache_.size()) throw std::logic_error("lowering: stage " + std::to_string(stage) + " out of range");
  if (!items_cached_[key]) {
    items_cache_[key] = op_items(rank, op, forward_half);
    items_cached_[key] = 1;
  }
  return items_cache_[key];
}

void Lowerer::record_item(Program& pr, int rank, const Item& it, std::vector<TaskId>& pending, TaskId& last,
                          bool chain_b, std::vector<int>& layers_seen) {
  // emit_seg, with task ids relative to the op's first task.
  const sim::StreamId cs = out_.compute_stream[rank];
  auto add = [&](sim::StreamId stream, std::int64_t ns, Category cat, std::uint16_t text, char kind, std::int64_t launch_ns,
                 double flops, std::int64_t mem, sim::ResourceList res, bool interferes, std::int64_t host_ns = 0) {
    pr.tasks.push_back(spec_of(stream, ns, cat, text, kind, mem, res, interferes, host_ns));
    pr.in_b.push_back(chain_b ? 1 : 0);
    TaskInfo info;
    info.launch_ns = launch_ns;
    info.flops = flops;
    pr.info.push_back(info);
    return static_cast<TaskId>(pr.tasks.size() - 1);
  };
  const Seg& sg = *it.seg;
  const bool overlap = sg.comm_ns > 0 && sg.comm_overlappable && s_.features.tp_comm_overlap;
  TaskId head = -1, tail = -1;
  if (overlap && sg.ns > 0) {
    const auto [h, t] = split_overlap(sg);
    head = add(cs, h.ns, it.cat, 0, it.kind, h.launch_ns, h.flops, it.mem, {}, false, h.host_ns);
    tail = add(cs, t.ns, it.cat, 0, it.kind, t.launch_ns, t.flops, 0, {}, false, t.host_ns);
  } else {
    head = tail = add(cs, sg.ns, it.cat, 0, it.kind, sg.launch_ns, sg.flops, it.mem, {}, false, sg.host_ns);
  }
  for (TaskId d : pending) pr.edges.emplace_back(d, head);
  pending.clear();
  pr.last_compute = tail;
  last = tail;
  if (sg.comm_ns > 0) {
    const bool ep = sg.comm_cat == Category::ep_comm;
    const sim::StreamId st = ep ? ep_stream_[rank] : tp_stream_[rank];
    const sim::ResourceId res = sg.comm_nic ? nic_[rank] : nvl_[rank];
    const TaskId c = add(st, sg.comm_ns, sg.comm_cat, ep ? a2a_text_ : tp_text_, 'C', 0, 0, 0, {res},
                         overlap || ep);
    pr.edges.emplace_back(overlap ? head : tail, c);
    pending.push_back(c);
    if (overlap) pending.push_back(tail);
    last = c;
  }
  if (it.grad_final) {
    // on_grad_final: only a layer of a stage this rank finishes gradients of counts.
    auto sit = stage_of_layer_rank_[rank].find(it.layer);
    if (sit == stage_of_layer_rank_[rank].end()) return;
    auto rit = grad_remaining_[rank].find(it.layer);
    if (rit == grad_remaining_[rank].end() ||
        std::find(layers_seen.begin(), layers_seen.end(), it.layer) != layers_seen.end()) {
      pr.grad_free = false;   // not the usual shape: always emit item by item
      return;
    }
    layers_seen.push_back(it.layer);
    pr.grad_counters.push_back(&rit->second);
  }
}

Lowerer::Program& Lowerer::program_of(int rank, const Op& op) {
  const std::size_t idx = items_key(op, true) * static_cast<std::size_t>(p_) + static_cast<std::size_t>(rank);
  if (programs_.empty()) {   // sized once: references handed out stay valid
    programs_.resize(static_cast<std::size_t>(S_) * 6 * static_cast<std::size_t>(p_));
    program_built_.assign(programs_.size(), 0);
  }
  if (idx >= programs_.size()) throw std::logic_error("lowering: stage " + std::to_string(op.stage) + " out of range");
  Program& pr = programs_[idx];
  if (program_built_[idx]) return pr;
  program_built_[idx] = 1;
  std::vector<TaskId> pending{kExternal};
  std::vector<int> layers_seen;
  for (const Item& it : items_of(rank, op, true)) record_item(pr, rank, it, pending, pr.last, false, layers_seen);
  pr.pending = pending;
  if (!pr.tasks.empty() && (pr.edges.empty() || pr.edges.front() != std::pair<TaskId, TaskId>{kExternal, 0}))
    throw std::logic_error("lowering: op program does not start at its first task");
  for (std::size_t i = 1; i < pr.edges.size(); ++i)
    if (pr.edges[i].first == kExternal) throw std::logic_error("lowering: op program waits for its inputs twice");
  return pr;
}

bool Lowerer::emit_fb_program(int rank, Chain& cf, Chain& cb, const Op& op, const std::string& name) {
  const auto& fi = items_of(rank, op, true);
  const auto& bi = items_of(rank, op, false);
  if (fi.empty() || bi.empty()) return false;
  Program& pr = fb_programs_[{items_key(op, true), items_key(op, false), rank}];
  if (pr.tasks.empty()) {
    // The F&B loop of emit_op: one F item, then one B item, until both are done.
    std::vector<TaskId> pf{kExternal}, pb{kExternalB};
    std::vector<int> layers_seen;
    for (std::size_t i = 0, j = 0; i < fi.size() || j < bi.size();) {
      if (i < fi.size()) record_item(pr, rank, fi[i++], pf, pr.last, false, layers_seen);
      if (j < bi.size()) {
        if (j == 0) pr.first_b = static_cast<TaskId>(pr.tasks.size());
        record_item(pr, rank, bi[j++], pb, pr.last_b, true, layers_seen);
      }
    }
    pr.pending = pf;
    pr.pending_b = pb;
  }
  if (!pr.grad_free) return false;
  for (const int* c : pr.grad_counters)
    if (*c <= 1) return false;
  for (int* c : pr.grad_counters) --*c;
  auto& g = out_.graph;
  for (std::size_t k = 0; k < pr.tasks.size(); ++k) {
    pr.tasks[k].microbatch = pr.in_b[k] ? op.microbatch_b : op.microbatch;
    pr.tasks[k].chunk = pr.in_b[k] ? op.chunk_b : op.chunk;
  }
  pr.tasks[static_cast<std::size_t>(pr.first_b)].label = sim::Label::backward_mb;   // "B mb<microbatch_b>"
  if (pr.block.size != pr.tasks.size()) pr.block = g.check_block(pr.tasks.data(), pr.tasks.size());
  const TaskId base = g.add_block(pr.tasks.data(), pr.block);
  g.set_name(base, name);   // the F chain's first task is the op's first
  out_.info.insert(out_.info.end(), pr.info.begin(), pr.info.end());
  auto& edges = edge_scratch_;
  edges.clear();
  auto& wait = p2p_wait_[static_cast<std::size_t>(rank)];
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
  last_compute_[static_cast<std::size_t>(rank)] = base + pr.last_compute;
  return true;
}

bool Lowerer::emit_program(int rank, Chain& ch, const Op& op) {
  Program& pr = program_of(rank, op);
  if (pr.tasks.empty()) return true;   // no items: nothing to emit
  if (!pr.grad_free) return false;
  // A counter at 1 reaches 0 in this op: on_grad_final may flush a bucket (a
  // task in the middle of the op), so the op is emitted item by item.
  for (const int* c : pr.grad_counters)
    if (*c <= 1) return false;
  for (int* c : pr.grad_counters) --*c;
  auto& g = out_.graph;
  // The recorded tasks, with this op's micro-batch, chunk and label.
  if (pr.tasks.front().microbatch != op.microbatch || pr.tasks.front().chunk != op.chunk)
    for (sim::TaskSpec& t : pr.tasks) {
      t.microbatch = op.microbatch;
      t.chunk = op.chunk;
    }
  pr.tasks.front().label = op_name(op.kind).label;
  if (pr.block.size != pr.tasks.size()) pr.block = g.check_block(pr.tasks.data(), pr.tasks.size());
  const TaskId base = g.add_block(pr.tasks.data(), pr.block);
  out_.info.insert(out_.info.end(), pr.info.begin(), pr.info.end());
  // The edges in emit_seg's order. Blocking pipeline P2P first: the first task
  // is on the compute stream (see add_task).
  // The first recorded edge is (kExternal, 0): the chain's pending tasks to the first task.
  auto& edges = edge_scratch_;
  auto& wait = p2p_wait_[static_cast<std::size_t>(rank)];
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
  last_compute_[static_cast<std::size_t>(rank)] = base + pr.last_compute;
  return true;
}

std::size_t Lowerer::estimate_tasks() {
  std::size_t n = 0;
  const bool overlap = s_.features.tp_comm_overlap;
  std::vector<std::size_t> per_list;   // per items_key: tasks of one item list (0: not counted yet)
  for (int r = 0; r < p_; ++r)
    for (const Op& op : out_.schedule.order[r]) {
      n += 3;   // stage-to-stage sends, data loading, GC
      for (bool half : {true, false}) {
        if (!half && op.kind != OpKind::FB) break;
        const std::size_t key = items_key(op, half);
        if (per_list.size() <= key) per_list.resize(key + 1, 0);
        if (per_list[key] == 0) {
          std::size_t k = 1;   // counted from 1 so that an empty list is not counted again
          for (const Item& it : items_of(r, op, half))
            k += 1 + (it.seg->comm_ns > 0 ? 1 : 0) + (overlap && it.seg->comm_overlappable && it.seg->ns > 0 ? 1 : 0);
          per_list[key] = k;
        }
        n += per_list[key] - 1;
      }
    }
  return n + static_cast<std::size_t>(4 * p_);
}

std::vector<Lowerer::Item> Lowerer::op_items(int rank, const Op& op, bool forward_half) {
  std::vector<Item> items;
  const OpKind kind = op.kind == OpKind::FB ? (forward_half ? OpKind::F : OpKind::B) : op.kind;
  const int stage = op.kind == OpKind::FB && !forward_half ? op.stage_b : op.stage;
  const bool has_emb = stage == 0, has_head = stage == S_ - 1;
  const auto& layers = out_.stage_layers[stage];
  const bool recompute = s_.features.recompute != config::Recompute::none;
  const bool split = op.kind == OpKind::FB ? (forward_half ? false : op.split_w) : op.split_w;
  auto add_pass = [&](const PassCost& pc, Category cat, char k, std::int64_t mem_first, std::int64_t mem_last,
                      int layer, bool grad_final) {
    for (std::size_t i = 0; i < pc.segs.size(); ++i) {
      const bool first = i == 0, last = i + 1 == pc.segs.size();
      std::int64_t mem = 0;
      if (first) mem += mem_first;
      if (last) mem += mem_last;
      items.push_back(Item{&pc.segs[i], cat, k, mem, layer, last && grad_final});
    }
    if (pc.segs.empty() && (mem_first != 0 || mem_last != 0 || grad_final)) {
      static const Seg empty{};
      items.push_back(Item{&empty, cat, k, mem_first + mem_last, layer, grad_final});
    }
  };
  if (kind == OpKind::F) {
    if (has_emb) add_pass(emb_cost_.f, Category::forward, 'F', to_ns(0) + static_cast<std::int64_t>(emb_cost_.act_bytes), 0, -1, false);
    for (int l : layers) {
      const LayerCost& lc = layer_cost(l);
      add_pass(lc.f, Category::forward, 'F', static_cast<std::int64_t>(lc.act_bytes), 0, l, false);
    }
    if (has_head) add_pass(head_cost_.f, Category::forward, 'F', static_cast<std::int64_t>(head_cost_.act_bytes), 0, -1, false);
  } else if (kind == OpKind::B) {
    if (has_head) {
      add_pass(head_cost_.b, Category::backward, 'B', 0, -static_cast<std::int64_t>(head_cost_.act_bytes), -1, false);
      if (!split) add_pass(head_cost_.w, Category::backward, 'B', 0, 0, -1, false);
    }
    for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
      const LayerCost& lc = layer_cost(*it);
      if (recompute) add_pass(lc.r, Category::recompute, 'R', static_cast<std::int64_t>(lc.recompute_bytes), 0, *it, false);
      const std::int64_t freed = static_cast<std::int64_t>(lc.act_bytes + lc.recompute_bytes - (split ? lc.stash_bytes : 0));
      add_pass(lc.b, Category::backward, 'B', 0, -freed, *it, !split);
      if (!split) add_pass(lc.w, Category::backward, 'B', 0, 0, *it, false);
    }
    if (has_emb) {
      add_pass(emb_cost_.b, Category::backward, 'B', 0, -static_cast<std::int64_t>(emb_cost_.act_bytes), -1, false);
      if (!split) add_pass(emb_cost_.w, Category::backward, 'B', 0, 0, -1, false);
    }
    // Without a split, the last pass of each layer finishes its weight gradient:
    // mark the W pass (or B when W is empty) as grad-final.
    if (!split) {
      for (auto& it : items) it.grad_final = false;
      int prev_layer = -2;
      for (std::size_t i = items.size(); i-- > 0;) {
        if (items[i].layer >= 0 && items[i].layer != prev_layer) {
          items[i].grad_final = true;
          prev_layer = items[i].layer;
        }
      }
    }
  } else if (kind == OpKind::W) {
    if (has_head) add_pass(head_cost_.w, Category::weight_grad, 'W', 0, 0, -1, false);
    for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
      const LayerCost& lc = layer_cost(*it);
      add_pass(lc.w, Category::weight_grad, 'W', 0, -static_cast<std::int64_t>(lc.stash_bytes), *it, true);
    }
    if (has_emb) add_pass(emb_cost_.w, Category::weight_grad, 'W', 0, 0, -1, false);
  }
  (void)rank;
  return items;
}


Lowerer::Merged Lowerer::play_merged(const std::vector<Item>* const* chains, std::size_t n) const {
  // The same rules as the per-layer lowering, played on one GPU without
  // other traffic: segments run in order on the compute stream; a segment
  // waits for its chain's previous collective; overlapped TP collectives start
  // after the first GEMM chunk and slow the rest by the contention factor;
  // the two chains of F&B alternate segment by segment.
  if (n > 2) throw std::logic_error("emit_merged: one or two chains");
  Merged m;
  Parts& parts = m.parts;
  std::int64_t t = 0, launch = 0, mem = 0, host = 0;
  double flops = 0;
  std::int64_t ready[2] = {0, 0};
  Category ready_cat[2] = {Category::other, Category::other};
  std::size_t pos[2] = {0, 0};
  std::int64_t comm_free[2] = {0, 0};   // tp, ep streams
  const double k = kDefaultContention;
  const bool tp_overlap = s_.features.tp_comm_overlap;
  bool more = true;
  while (more) {
    more = false;
    for (std::size_t c = 0; c < n; ++c) {
      if (pos[c] >= chains[c]->size()) continue;
      more = true;
      const Item& it = (*chains[c])[pos[c]++];
      const Seg& sg = *it.seg;
      mem += it.mem;
      if (ready[c] > t) {
        parts[static_cast<std::size_t>(ready_cat[c])] += ready[c] - t;
        t = ready[c];
      }
      launch += sg.launch_ns;
      host += sg.host_ns;
      flops += sg.flops;
      const auto ci = static_cast<std::size_t>(it.cat);
      if (sg.comm_ns <= 0) {
        parts[ci] += sg.ns;
        t += sg.ns;
        continue;
      }
      const bool overlap = sg.comm_overlappable && tp_overlap && sg.ns > 0;
      const int stream = sg.comm_cat == Category::ep_comm ? 1 : 0;
      if (overlap) {
        const std::int64_t head = sg.ns - std::min(sg.ns, sg.overlap_ns), tail = sg.ns - head;
        const std::int64_t cs = std::max(t + head, comm_free[stream]), ce = cs + sg.comm_ns;
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
        comm_free[stream] = ce;
        ready[c] = ce;
      } else {
        t += sg.ns;
        parts[ci] += sg.ns;
        const std::int64_t cs = std::max(t, comm_free[stream]), ce = cs + sg.comm_ns;
        comm_free[stream] = ce;
        ready[c] = ce;
      }
      ready_cat[c] = sg.comm_cat;
    }
  }
  for (std::size_t c = 0; c < n; ++c)
    if (ready[c] > t) {
      parts[static_cast<std::size_t>(ready_cat[c])] += ready[c] - t;
      t = ready[c];
    }
  m.t = t;
  m.launch = launch;
  m.host = host;
  m.mem = mem;
  m.flops = flops;
  // Gradient-final items in the order the loop above met them (round-robin over chains).
  for (std::size_t c = 0; c < n; ++c) pos[c] = 0;
  for (bool left = true; left;) {
    left = false;
    for (std::size_t c = 0; c < n; ++c) {
      if (pos[c] >= chains[c]->size()) continue;
      left = true;
      const Item& it = (*chains[c])[pos[c]++];
      if (it.grad_final) m.grad_layers.push_back(it.layer);
    }
  }
  return m;
}

TaskId Lowerer::emit_merged_task(int rank, const Merged& m, Chain* const* ch, std::size_t n, const Name& name,
                                 int mb, int chunk, char kind, Category cat) {
  const sim::StreamId cs = out_.compute_stream[rank];
  TaskId id = add_task(rank, cs, m.t, cat, name, mb, chunk, kind, m.launch, m.flops, m.mem, {}, false, m.host);
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

TaskId Lowerer::emit_merged(int rank, const std::vector<const std::vector<Item>*>& chains, std::vector<Chain*> ch,
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

void Lowerer::emit_items(int rank, Chain& ch, const std::vector<Item>& items, const Name& name, int mb,
                         int chunk) {
  bool first = true;
  for (const Item& it : items) {
    emit_seg(rank, ch, *it.seg, it.cat, first ? name : Name(), mb, chunk, it.kind, it.mem);
    first = false;
    if (it.grad_final) on_grad_final(rank, it.layer, ch.last);
  }
}

void Lowerer::on_grad_final(int rank, int layer, TaskId t) {
  // Called once per (rank, stage, layer, backward op); the layer's gradient is
  // final when the stage's last backward op on this rank runs.
  auto& stages = stage_of_layer_rank_[rank];
  auto sit = stages.find(layer);
  if (sit == stages.end()) return;
  auto& rem = grad_remaining_[rank][layer];
  if (--rem > 0) return;
  if (!s_.features.overlap_grad_reduce || s_.parallel.dp * s_.parallel.cp <= 1) return;
  bucket_fill_[rank] += layer_cost(layer).params;
  if (bucket_fill_[rank] >= bucket_params(s_.parallel.dp)) flush_bucket(rank, t);
}

void Lowerer::flush_bucket(int rank, TaskId after) {
  if (bucket_fill_[rank] <= 0) return;
  hardware::Group g = place_.dp;
  const double bytes = bucket_fill_[rank] * 4.0;   // fp32 main gradients (Megatron default)
  const Collective c = s_.parallel.distributed_optimizer ? Collective::reduce_scatter : Collective::all_reduce;
  const double t = coll(c, bytes, g);
  TaskId d = add_task(rank, dp_stream_[rank], to_ns(t), Category::dp_comm, "dp grad reduce", -1, -1, 'C', 0, 0, 0,
                      {g.crosses_domains() ? nic_[rank] : nvl_[rank]}, true);
  if (after >= 0) out_.graph.depend(after, d);
  dp_tasks_[rank].push_back(d);
  bucket_fill_[rank] = 0;
}

void Lowerer::emit_op(int rank, const Op& op) {
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
  auto gather_before = [&](const Item& it, Chain& ch) {
    if (gathers.empty()) return;
    auto f = gathers.find(it.layer);
    if (f == gathers.end()) return;
    ch.pending.push_back(f->second);
    gathers.erase(f);
  };
  if (op.kind == OpKind::F || op.kind == OpKind::B || op.kind == OpKind::W) {
    Chain ch;
    if (op.kind != OpKind::W) ch.pending = deps_for(op.kind, op.microbatch, op.stage);
    if (op.kind == OpKind::F && s_.features.dataloader_workers == 0 && op.stage == 0 &&
        op.microbatch < static_cast<int>(data_task_.size()) && data_cost_ns_ > 0) {
      // Loading on the training thread: on the critical path, just before the micro-batch's forward.
      TaskId d = add_task(rank, out_.compute_stream[rank], data_cost_ns_, Category::dataloader, "load batch", op.microbatch,
                          -1, 'D');
      for (TaskId x : ch.pending) out_.graph.depend(x, d);
      ch.pending = {d};
    }
    const auto& items = items_of(rank, op, true);
    if (op.kind == OpKind::F) param_deps(items, ch);
    if (opt_.per_layer) {
      if (!gathers.empty()) {
        bool first = true;
        for (const Item& it : items) {
          gather_before(it, ch);
          emit_seg(rank, ch, *it.seg, it.cat, first ? name : Name(), op.microbatch, op.chunk, it.kind, it.mem);
          first = false;
          if (it.grad_final) on_grad_final(rank, it.layer, ch.last);
        }
      } else if (!emit_program(rank, ch, op)) {
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
  if (gathers.empty() && emit_fb_program(rank, cf, cb, op, name.text)) {
    publish(rank, OpKind::F, op.microbatch, op.stage, cf.last);
    publish(rank, OpKind::B, op.microbatch_b, op.stage_b, cb.last);
    return;
  }
  std::size_t i = 0, j = 0;
  bool first_f = true, first_b = true;
  while (i < fi.size() || j < bi.size()) {
    if (i < fi.size()) {
      gather_before(fi[i], cf);
      emit_seg(rank, cf, *fi[i].seg, fi[i].cat, first_f ? name : Name(), op.microbatch, op.chunk, fi[i].kind, fi[i].mem);
      first_f = false;
      ++i;
    }
    if (j < bi.size()) {
      emit_seg(rank, cb, *bi[j].seg, bi[j].cat, first_b ? Name(sim::Label::backward_mb) : Name(),
               op.microbatch_b, op.chunk_b, bi[j].kind, bi[j].mem);
      if (bi[j].grad_final) on_grad_final(rank, bi[j].layer, cb.last);
      first_b = false;
      ++j;
    }
  }
  publish(rank, OpKind::F, op.microbatch, op.stage, cf.last);
  publish(rank, OpKind::B, op.microbatch_b, op.stage_b, cb.last);
}

// An op's output as its consumer sees it. When the consumer (F of the next
// stage, B of the previous one) runs on another rank, the stage-to-stage send
// is emitted here, right after the producing op, so each rank's send stream
// holds its sends in the order its compute stream produces them (Megatron and
// DualPipe post the P2P send right after the step that produced it). Emitting
// it when the receiver's op was lowered instead queued sends in the
// receivers' order: with two directions (DualPipe) or two peers a send could
// wait behind one whose input was not computed yet.
void Lowerer::publish(int rank, OpKind kind, int mb, int stage, TaskId last) {
  const bool fwd = kind == OpKind::F;
  const int next = fwd ? stage + 1 : stage - 1;
  TaskId out = last;
  if (next >= 0 && next < S_) {
    const int dst = fwd ? f_runner_[mb * S_ + next] : b_runner_[mb * S_ + next];
    if (dst >= 0 && dst != rank) {
      if (pp_send_ns_ < 0) {   // the same for every send: computed once
        const double bytes = models::layer_comm(s_.model, 0, shape_).pp_bytes;
        pp_send_ns_ = to_ns(coll(Collective::send_recv, bytes, place_.pp_link));
      }
      out = add_task(rank, fwd ? pp_fwd_stream_[rank] : pp_bwd_stream_[rank], pp_send_ns_, Category::pp_comm,
                     Name(fwd ? sim::Label::send_forward : sim::Label::send_backward), mb, -1, 'S', 0, 0, 0,
                     {place_.pp_link.crosses_domains() ? nic_[rank] : nvl_[rank]});
      out_.graph.depend(last, out);
      send_target_.emplace_hint(send_target_.end(), out, dst);   // ids only grow: appended at the end
      if (!s_.features.overlap_p2p_comm) p2p_wait_[rank].push_back(out);
    }
  }
  (fwd ? f_out_ : b_out_)[mb * S_ + stage] = out;
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

void Lowerer::add_gc_pauses(int rank, std::vector<std::int64_t>& pause_before_op) {
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
    pause_before_op[op] += to_ns(len);
  }
}

Lowered Lowerer::run() {
  const auto& P = s_.parallel;
  p_ = P.pp;
  m_ = s_.microbatches();
  const std::string sched = config::to_string(s_.schedule.name);
  out_.schedule = generate(sched, PipelineShape{p_, m_, chunks_for(sched, P.vpp)});
  S_ = out_.schedule.stages;
  out_.ranks = p_;
  split_w_ = out_.schedule.split_w;
  out_.stage_layers = split_layers(s_, S_);
  place_ = hardware::place(hardware::Layout{P.tp, P.cp, P.ep, P.dp, P.pp}, s_.hardware);
  out_.warnings = place_.warnings;
  shape_ = models::rank_shape(s_);
  emb_cost_ = end_cost(true);
  head_cost_ = end_cost(false);
  // Loading one micro-batch: features.dataloader_ms_per_sample per sequence, or by default
  // tokenising seq_len tokens at 1M tokens/s on one core plus 1 ms to collate and copy
  // (docs/levers.md: Hugging Face tokenizers, "less than 20 seconds to tokenize a GB of text").
  const double per_sample = s_.features.dataloader_ms_per_sample >= 0
                                ? s_.features.dataloader_ms_per_sample * 1e-3
                                : s_.training.seq_len / 1e6 + 1e-3;
  data_cost_ns_ = to_ns(per_sample * s_.training.micro_batch);

  auto& g = out_.graph;
  g.set_contention(kDefaultContention);
  tp_text_ = g.text("tp collective");
  a2a_text_ = g.text("all-to-all");
  tp_stream_.resize(p_); ep_stream_.resize(p_); pp_fwd_stream_.resize(p_); pp_bwd_stream_.resize(p_);
  dp_stream_.resize(p_); data_streams_.resize(p_); nvl_.resize(p_); nic_.resize(p_);
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
  f_out_.assign(static_cast<std::size_t>(m_) * S_, -1);
  b_out_.assign(static_cast<std::size_t>(m_) * S_, -1);
  f_runner_.assign(static_cast<std::size_t>(m_) * S_, -1);
  b_runner_.assign(static_cast<std::size_t>(m_) * S_, -1);
  bucket_fill_.assign(p_, 0);
  dp_tasks_.assign(p_, {});
  grad_remaining_.assign(p_, {});
  stage_of_layer_rank_.assign(p_, {});
  param_gather_.assign(p_, {});
  last_compute_.assign(p_, -1);

  // Which layers each rank holds, and how many gradient-finishing passes each gets per step.
  const auto& order = out_.schedule.order;
  std::vector<std::vector<int>> rank_stages(p_);
  std::vector<int> grad_passes(static_cast<std::size_t>(S_));   // of the rank, per stage
  for (int r = 0; r < p_; ++r) {
    std::fill(grad_passes.begin(), grad_passes.end(), 0);
    for (const Op& op : order[r]) {
      auto note = [&](int stage, bool grad) {
        if (std::find(rank_stages[r].begin(), rank_stages[r].end(), stage) == rank_stages[r].end())
          rank_stages[r].push_back(stage);
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
  // Static memory per rank, and the parameters per layer for DP buckets.
  out_.static_bytes.assign(p_, 0);
  out_.params_bytes.assign(p_, 0);
  out_.grads_bytes.assign(p_, 0);
  out_.optimizer_bytes.assign(p_, 0);
  std::vector<double> rank_params(p_, 0);
  for (int r = 0; r < p_; ++r) {
    std::vector<int> layers;
    bool emb = false, head = false;
    for (int st : rank_stages[r]) {
      layers.insert(layers.end(), out_.stage_layers[st].begin(), out_.stage_layers[st].end());
      emb = emb || st == 0;
      head = head || st == S_ - 1;
    }
    const auto sm = models::static_memory(s_.model, layers, emb, head, P.tp, P.ep, P.dp, P.distributed_optimizer,
                                          shape_.fp32_autocast);
    out_.params_bytes[r] = sm.params;
    out_.grads_bytes[r] = sm.grads;
    out_.optimizer_bytes[r] = sm.optimizer;
    out_.static_bytes[r] = sm.params + sm.grads + sm.optimizer;
    rank_params[r] = sm.params / models::param_bytes(shape_.fp32_autocast);
  }

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

  // Distributed optimizer with overlapped parameter all-gather: the gather of
  // each bucket runs at the start of the step; a layer's first forward waits for it.
  const int dp_group = P.dp * P.cp;
  if (P.distributed_optimizer && s_.features.overlap_param_gather && dp_group > 1) {
    for (int r = 0; r < p_; ++r) {
      std::vector<int> layers;
      for (int st : rank_stages[r]) layers.insert(layers.end(), out_.stage_layers[st].begin(), out_.stage_layers[st].end());
      std::sort(layers.begin(), layers.end());
      double fill = 0;
      std::vector<int> members;
      auto flush = [&] {
        if (members.empty()) return;
        const double t = coll(Collective::all_gather, fill * 2.0, place_.dp);
        TaskId ag = add_task(r, dp_stream_[r], to_ns(t), Category::dp_comm, "dp param gather", -1, -1, 'C', 0, 0, 0,
                             {place_.dp.crosses_domains() ? nic_[r] : nvl_[r]}, true);
        for (int l : members) param_gather_[r][l] = ag;
        members.clear();
        fill = 0;
      };
      for (int l : layers) {
        fill += layer_cost(l).params;
        members.push_back(l);
        if (fill >= bucket_params(P.dp)) flush();
      }
      flush();
    }
  }

  // GC pauses, per rank, inserted before ops.
  std::vector<std::vector<std::int64_t>> gc_before(p_);
  if (s_.features.python_gc)
    for (int r = 0; r < p_; ++r) add_gc_pauses(r, gc_before[r]);

  if (opt_.per_layer) {
    const std::size_t n = g.size() + estimate_tasks();
    g.reserve(n);
    out_.info.reserve(n);
    sim::advise_huge_storage(out_.info);
  }

  // Emit ops in an order that respects cross-rank inputs: round-robin over
  // ranks, each emitting ops while their inputs exist.
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
          TaskId gc = add_task(r, out_.compute_stream[r], gc_before[r][k], Category::gc, "python gc", -1, -1, 'G');
          last_compute_[r] = gc;
        }
        emit_op(r, order[r][k]);
        ++next[r];
        --remaining;
        progress = true;
      }
    }
    if (!progress) {
      std::string msg = "schedule '" + sched + "' cannot proceed; waiting ops:";
      for (int r = 0; r < p_; ++r)
        if (next[r] < order[r].size()) msg += "\n  rank " + std::to_string(r) + ": " + label(order[r][next[r]]);
      throw sim::Deadlock(msg);
    }
  }

  // Gradient reduction and the optimizer step.
  for (int r = 0; r < p_; ++r) {
    if (dp_group > 1) {
      if (s_.features.overlap_grad_reduce) {
        flush_bucket(r, last_compute_[r]);
      } else {
        bucket_fill_[r] = rank_params[r];
        flush_bucket(r, last_compute_[r]);
      }
    }
    // Adam step over the local shard: read fp32 grad, master, m, v; write master, m, v and the bf16
    // weight: 30 bytes per parameter, memory-bound (multi-tensor apply, a handful of launches).
    // fp32-autocast (torch AdamW fused over fp32 params): read p, g, m, v; write p, m, v: 28 bytes.
    const double local = rank_params[r] / (P.distributed_optimizer ? dp_group : 1);
    hardware::Kernel k;
    k.kind = hardware::KernelKind::memory;
    k.name = "adam";
    k.bytes = (shape_.fp32_autocast ? 28.0 : 30.0) * local;
    if (shape_.fp32_autocast) k.family = hardware::MemFamily::adamw;   // torch's fused AdamW (kernel_bw.py)
    k.flops = 12.0 * local;
    k.count = 1;
    const Seg opt_seg = seg_of({&k});
    TaskId optim = add_task(r, out_.compute_stream[r], opt_seg.ns, Category::optimizer, "optimizer step",
                            -1, -1, 'O', opt_seg.launch_ns, 0, 0, {}, false, opt_seg.host_ns);
    for (TaskId d : dp_tasks_[r]) g.depend(d, optim);
    if (P.distributed_optimizer && dp_group > 1 && !s_.features.overlap_param_gather) {
      const double t = coll(Collective::all_gather, rank_params[r] * 2.0, place_.dp);
      TaskId ag = add_task(r, dp_stream_[r], to_ns(t), Category::dp_comm, "dp param gather", -1, -1, 'C', 0, 0, 0,
                           {place_.dp.crosses_domains() ? nic_[r] : nvl_[r]});
      g.depend(optim, ag);
    }
  }
  out_.send_target = send_target_;
  return std::move(out_);
}

}  // namespace

std::vector<std::vector<int>> split_layers(const Scenario& s, int stages) {
  const int L = s.model.layers;
  std::vector<int> counts(stages, 0);
  const auto& P = s.parallel;
  if (!P.stage_layers.empty() && static_cast<int>(P.stage_layers.size()) == stages) {
    counts = P.stage_layers;
  } else {
    int first = P.first_stage_layers, last = P.last_stage_layers;
    int rest = L, lo = 0, hi = stages;
    if (stages > 1 && first > 0) { counts[0] = first; rest -= first; lo = 1; }
    if (stages > 1 && last > 0) { counts[stages - 1] = last; rest -= last; hi = stages - 1; }
    const int n = hi - lo;
    for (int i = lo; i < hi; ++i) counts[i] = n > 0 ? rest / n + (i - lo < rest % n ? 1 : 0) : 0;
  }
  std::vector<std::vector<int>> out(stages);
  int l = 0;
  for (int st = 0; st < stages; ++st)
    for (int k = 0; k < counts[st] && l < L; ++k) out[st].push_back(l++);
  return out;
}

Lowered lower(const Scenario& s, const LowerOptions& o) { return Lowerer(s, o).run(); }

}  // namespace mfusim::schedules
