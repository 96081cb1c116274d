// The cost of one layer's passes (see pass_cost.h for the contract).
#include "layer/pass_cost.h"

#include <algorithm>
#include <cmath>

#include "layer/moe_dispatch.h"
#include "models/kernel_builders.h"
#include "models/params.h"
#include "sim/time.h"

namespace mfusim::layer {

using config::Scenario;
using hardware::Collective;
using hardware::Kernel;
using sim::Category;

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
  head.bytes = sg.bytes * share;
  tail.bytes = sg.bytes * (1 - share);
  head.comm = tail.comm = sg.comm;
  // The tail is the chunked GEMMs (tp_overlap_windows): the attention and memory-bound kernels run
  // in the head (at most the head's time).
  head.attn_ns = std::min(sg.attn_ns, static_cast<double>(head.ns));
  head.mem_ns = std::min(sg.mem_ns, static_cast<double>(head.ns) - head.attn_ns);
  head.mem_coef = sg.mem_coef;
  return {head, tail};
}

double Seg::attn_share() const { return ns > 0 ? std::clamp(attn_ns / static_cast<double>(ns), 0.0, 1.0) : 0.0; }
double Seg::mem_share() const {
  return ns > 0 ? std::clamp(mem_ns / static_cast<double>(ns), 0.0, 1.0 - attn_share()) : 0.0;
}

double seg_slowdown(const Seg& sg, const hardware::Contention& c) {
  if (sg.wait) return 1.0;
  return sim::mix_slowdown(sg.attn_share(), sg.mem_share(), sg.mem_coef, c.gemm, c.attention, c.hbm);
}

sim::ComputeMix mix_of(const Seg& sg) {
  auto q = [](double x) { return static_cast<std::uint8_t>(std::lround(std::clamp(x, 0.0, 1.0) * 255.0)); };
  sim::ComputeMix m;
  if (sg.wait) {
    m.host_only = 1;
    return m;
  }
  m.attention = q(sg.attn_share());
  m.memory = std::min<std::uint8_t>(q(sg.mem_share()), static_cast<std::uint8_t>(255 - m.attention));
  m.memory_coef = q(sg.mem_coef);
  return m;
}

LayerCosts::LayerCosts(const Scenario& s)
    : s_(s), cost_(s.hardware, s.training.precision, s.calibration ? &*s.calibration : nullptr, s.features.cuda_graphs) {}

void configure_cost_model(const Scenario& s, const models::RankShape& sh, hardware::CostModel& cost) {
  models::settle_gemm_duty(s.model, sh, cost);       // the clock of the kernel mix (Calibration::gemm_clock)
  // the pace of the slowest of its group (run 40) and of the job's boards (run 46)
  cost.set_sync_group(models::sync_group_ranks(s), s.gpus, s.board_spread);
}

void LayerCosts::place() {
  place_ = hardware::place(models::layout_of(s_), s_.hardware);
  shape_ = models::rank_shape(s_);
  configure_cost_model(s_, shape_, cost_);
}

hardware::AlgoChoice LayerCosts::algo() const {
  switch (s_.features.nccl_algo) {
    case config::NcclAlgo::ring: return hardware::AlgoChoice::ring;
    case config::NcclAlgo::tree: return hardware::AlgoChoice::tree;
    default: return hardware::AlgoChoice::auto_;
  }
}

double LayerCosts::coll(Collective c, double bytes, const hardware::Group& g) const {
  if (g.size <= 1 || bytes <= 0) return 0;
  return hardware::collective_time(c, bytes, g, s_.hardware, algo(), cal()).seconds;
}

double cp_ring_time(const std::vector<double>& steps, double step_comm, double slowdown) {
  double ring = 0;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const double c = steps[i];
    if (i + 1 < steps.size() && step_comm > 0)
      ring += c * slowdown <= step_comm ? step_comm : step_comm + (c - step_comm / slowdown);
    else
      ring += c;   // the last step: no transfer left
  }
  return ring;
}

double cp_ring_extra(double core, double step_comm, int cp, double slowdown) {
  if (cp <= 1 || !(step_comm > 0)) return 0;
  return std::max(0.0, cp_ring_time(std::vector<double>(static_cast<std::size_t>(cp), core / cp), step_comm, slowdown) - core);
}

// Transformer Engine's ring attention (transformer_engine/pytorch/attention/dot_product_attention/
// context_parallel.py, AttnFuncWithCPAndKVP2P, NVIDIA/TransformerEngine @d0067d0): with load-balanced
// causal chunks a rank holds the chunks r and 2cp-1-r of S/(2cp) tokens. Step 0 runs its own K/V,
// one causal call of S/cp queries on S/cp keys ("diagonal"); in each later step the rank whose K/V
// source is an earlier rank runs all its queries on the first half of those keys ("lower-triangle":
// S/cp x S/(2cp)), the others their second-half queries on all the keys ("upper-triangle":
// S/(2cp) x S/cp), both without a mask: the same FLOPs, different shapes. Every step after the first
// has ranks of both kinds and the ring is synchronous (each waits for the K/V its neighbour sends), so
// a step lasts as long as its slower kind. Beside the calls, the forward merges the partial results:
// per step the log-sum-exp correction ([b, heads, S/cp] fp32: two reads, one write) and after the loop
// one output correction per step ([b, S/cp, heads, d]: the step's output and the running output read,
// the output written; the first a scaled copy); the backward adds each step's dQ and dK/dV into the
// accumulated gradients (read both, write one: dQ whole and dK/dV of the first half in the lower
// kind, dQ of the second half and dK/dV whole in the upper). A bidirectional model runs all its
// queries on all the keys in every step ("all"). Each call and each pass is priced by the cost model
// at its own shape.
std::vector<double> cp_step_times(const hardware::CostModel& cost, const Kernel& k, int cp, double e) {
  const bool bwd = k.kind == hardware::KernelKind::attention_bwd;
  const std::int64_t local = k.seq_q, half = std::max<std::int64_t>(1, k.seq_q / 2);
  const double b = static_cast<double>(k.batch), h = static_cast<double>(k.heads), kvh = static_cast<double>(k.kv_heads),
               d = static_cast<double>(k.head_dim), dv = k.v_dim();
  auto device = [&](const Kernel& x) { return cost.time(x) - cost.launch_time(x); };
  auto call = [&](std::int64_t sq, std::int64_t skv, bool causal) {
    // The step's flash call as models/ builds one (its bytes and FLOPs at this shape), with the
    // rank kernel's other properties (precision, keep_bf16).
    std::vector<Kernel> f, bk;
    models::detail::attention_kernels(models::ModelSpec{}, {b, h, kvh, static_cast<double>(sq), static_cast<double>(skv), d, dv},
                                      static_cast<int>(e), config::Attention::flash, f, bk);
    const Kernel& built = bwd ? bk.front() : f.front();
    Kernel x = k;
    x.seq_q = sq;
    x.seq_kv = skv;
    x.causal = causal;
    x.bytes = built.bytes;
    x.flops = built.flops;
    return device(x);
  };
  auto pass = [&](const char* name, double read, double write) {
    return device(models::detail::memk(name, read, write, write / e));
  };
  // Elements of Q (and dQ), of K and V together (and dK, dV), of the output O, and of the lse.
  const double q_el = b * local * h * d, kv_el = b * local * kvh * (d + dv), o_el = b * local * h * dv,
               lse_el = b * h * local;
  std::vector<double> steps;
  steps.reserve(static_cast<std::size_t>(cp));
  if (!k.causal) {
    for (int i = 0; i < cp; ++i) {
      double c = call(local, local, false);
      if (i > 0) c += bwd ? pass("cp_dq_add", 2 * e * q_el, e * q_el) + pass("cp_dkv_add", 2 * e * kv_el, e * kv_el)
                          : pass("cp_lse_correction", 8 * lse_el, 4 * lse_el);
      steps.push_back(c);
    }
  } else {
    steps.push_back(call(local, local, true));
    for (int i = 1; i < cp; ++i) {
      double lower = call(local, half, false), upper = call(half, local, false);
      if (bwd) {
        lower += pass("cp_dq_add", 2 * e * q_el, e * q_el) + pass("cp_dkv_add", e * kv_el, e * kv_el / 2);
        upper += pass("cp_dq_add", e * q_el, e * q_el / 2) + pass("cp_dkv_add", 2 * e * kv_el, e * kv_el);
      } else {
        lower += pass("cp_lse_correction", 8 * lse_el, 4 * lse_el);
        upper += pass("cp_lse_correction", 4 * lse_el, 2 * lse_el);
      }
      steps.push_back(std::max(lower, upper));
    }
  }
  if (!bwd) {   // the output corrections after the loop, on the rank with whole-chunk corrections
    double corr = pass("cp_out_correction_init", e * o_el + 8 * lse_el, e * o_el);
    for (int i = 1; i < cp; ++i) corr += pass("cp_out_correction", 2 * e * o_el + 8 * lse_el, e * o_el);
    steps.back() += corr;
  }
  return steps;
}

hardware::Contention LayerCosts::comm_contention(Collective c, const hardware::Group& g) const {
  if (g.size <= 1) return {};
  return hardware::contention(hardware::nccl_footprint(c, g, s_.hardware, cal()), s_.hardware);
}

Seg LayerCosts::seg_of(const std::vector<const Kernel*>& ks, double extra_host) const {
  Seg sg;
  double longest = -1;
  double attn = 0, mem = 0, mem_coef = 0;   // execution seconds by kind; memory: c-weighted
  for (const Kernel* k : ks) {
    sg.flops += k->flops * k->count;
    sg.bytes += k->bytes * k->count;
    const double t = cost_.time(*k) - cost_.launch_time(*k);
    if (t > longest) {
      longest = t;
      sg.kernel = k->name;
    }
    if (!(t > 0)) continue;
    if (hardware::is_attention(k->kind)) {
      attn += t;
    } else if (k->kind == hardware::KernelKind::memory) {
      // Its own HBM use at its own rate (not at the group's pace: a kernel waited for streams as fast).
      const double use =
          s_.hardware.hbm_bandwidth > 0 ? k->bytes * k->count * cost_.sync_pace() / t / s_.hardware.hbm_bandwidth : 0.0;
      mem += t;
      mem_coef += t * hardware::memory_hbm_coefficient(use);
    }
  }
  const hardware::StreamTime st = cost_.stream_time(ks, extra_host);
  sg.attn_ns = attn * 1e9;
  sg.mem_ns = mem * 1e9;
  if (mem > 0) sg.mem_coef = mem_coef / mem;
  sg.ns = sim::checked_ns(st.gpu_seconds, "a compute segment's GPU time");
  sg.launch_ns = sim::checked_ns(std::max(0.0, st.gpu_seconds - st.exec_seconds), "a compute segment's launch time");
  sg.host_ns = sim::checked_ns(st.host_seconds, "a compute segment's host time");
  return sg;
}

PassCost LayerCosts::pass_cost(const std::vector<Kernel>& ks, bool backward, bool moe_layer,
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
  // (Korthikanti et al. 2022 §4.2.2: the same bandwidth as the all-reduce); the all-gather in fp8 where the
  // fp8 recipe gathers the quantised tensor (LayerComm::tp_gather_bytes).
  double tp_s = 0;
  if (s_.parallel.tp > 1 && lc.tp_collectives > 0) {
    tp_s = sp ? coll(Collective::reduce_scatter, lc.tp_bytes, place_.tp) + coll(Collective::all_gather, lc.tp_gather_bytes, place_.tp)
              : coll(Collective::all_reduce, lc.tp_bytes, place_.tp);
  }
  // EP dispatch (after the router segment) and combine (after the experts), layer/moe_dispatch.h.
  const EpTimes ep = moe_layer ? ep_times(s_, lc, shape_, place_.ep, [&](double bytes) {
    return coll(Collective::all_to_all, bytes, place_.ep);
  }) : EpTimes{};
  // The userbuffers kernels of an overlapped TP collective hold SMs and stream HBM beside the
  // chunked GEMMs (hardware::userbuffers_footprint); without sequence parallelism the overlapped
  // all-reduce is NCCL's.
  using hardware::TpOverlapSite;
  auto with_tp = [&](Seg sg, TpOverlapSite site) {
    sg.comm_ns = sim::checked_ns(tp_s, "a TP collective");
    sg.comm_cat = Category::tp_comm;
    sg.comm_nic = place_.tp.crosses_domains();
    sg.comm_overlappable = true;
    if (tp_s > 0)
      sg.comm = sp ? hardware::contention(hardware::userbuffers_footprint(site, s_.hardware, cal()), s_.hardware)
                   : comm_contention(Collective::all_reduce, place_.tp);
    return sg;
  };
  // The backward runs the combine's gradient first (token home -> experts, the dispatch's
  // direction; DeepSeek-V3 §3.3.3 sends these gradients in fp8 too) and the dispatch's gradient
  // second (experts -> token home, the combine's direction, bf16): each priced as the forward
  // transfer of its direction.
  auto with_a2a = [&](Seg sg, bool dispatch) {
    sg.comm_ns = sim::checked_ns(dispatch ? ep.dispatch_s : ep.combine_s, "an EP all-to-all");
    sg.comm_cat = Category::ep_comm;
    sg.comm_nic = ep.nic;
    // Beside compute the dispatch kernels hold SMs: DeepEP its fixed moe.comm_sms (the measured
    // held-SM curves, hardware::contention), Megatron's all-to-all NCCL's P2P footprint.
    // DeepEP's kernels are paced by their SMs: beside compute they run at the clock it holds the
    // GPU at (hardware::sm_paced_comm_slowdown; their published bandwidths are measured alone).
    if (sg.comm_ns > 0) {
      if (deepep_sms(s_) > 0) {
        sg.comm = hardware::contention({deepep_sms(s_), 0.0}, s_.hardware);
        sg.comm.self = hardware::sm_paced_comm_slowdown();
      } else {
        sg.comm = comm_contention(Collective::all_to_all, place_.ep);
      }
    }
    return sg;
  };
  // Context parallelism as Transformer Engine runs it (ring attention, P2P): the rank's queries
  // meet the K/V chunks of the cp ranks in cp steps; in each of the first cp-1 steps the next
  // chunk's send/recv runs beside the step's attention (in the backward K/V and their gradients
  // travel: twice the bytes). Flash attention runs each step as its own calls at their shapes
  // (cp_step_times: load-balanced causal chunks, each rank holding chunks i and 2cp-1-i); a
  // materialised core has no such lowering, its steps are core / cp each. A step lasts as long as
  // its transfer or its compute, the compute slowed by the NCCL kernels beside it
  // (the attention curve of hardware::contention of the P2P footprint) while the transfer runs. What the ring adds
  // to the attention core is exposed in the attention segment.
  const int cp = s_.parallel.cp;
  const double cp_step_s = cp > 1 ? coll(Collective::send_recv, lc.cp_bytes * (backward ? 2.0 : 1.0), place_.cp) : 0;
  // The ring's compute is attention: its own curve beside the P2P kernels (hardware::contention).
  const double cp_slow = cp > 1 ? comm_contention(Collective::send_recv, place_.cp).attention : 1.0;
  auto attn_seg = [&](const std::vector<const Kernel*>& v) {
    Seg sg = with_tp(seg(v), backward ? TpOverlapSite::backward_attention : TpOverlapSite::forward_attention);
    if (cp_step_s > 0) {
      // A flash call runs as the ring's steps (cp_step_times): what the ring takes beyond the call
      // priced whole is exposed in the attention segment. The materialised pieces (QK^T, AV and their
      // gradients: several attention kernels of one ring) share one ring of core / cp steps.
      double extra = 0, materialised_core = 0;
      for (const Kernel* k : v) {
        if (!hardware::is_attention(k->kind)) continue;
        const double core = cost_.time(*k) - cost_.launch_time(*k);
        const bool ring_shape = k->flash && k->seq_q > 1 && k->seq_kv > 0 && k->batch > 0 && k->heads > 0 && k->head_dim > 0;
        if (!ring_shape) {
          materialised_core += core;
          continue;
        }
        const double e = s_.training.precision == config::Precision::fp8 && !k->keep_bf16 ? 1.0 : 2.0;   // fp8 attention or bf16
        extra += std::max(0.0, cp_ring_time(cp_step_times(cost_, *k, cp, e), cp_step_s, cp_slow) - core);
      }
      if (materialised_core > 0) extra += cp_ring_extra(materialised_core, cp_step_s, cp, cp_slow);
      const std::int64_t add = sim::checked_ns(extra, "the CP ring exchange");
      sg.ns += add;
      sg.attn_ns += static_cast<double>(add);   // the ring's attention steps (slowed, or waiting for K/V)
    }
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
      add(with_tp(seg(range(bd.mlp, n)), TpOverlapSite::forward_mlp), bd.mlp, n);
    } else {
      add(with_a2a(seg(range(bd.mlp, bd.ex0)), true), bd.mlp, bd.ex0);
      add(with_a2a(seg(range(bd.ex0, bd.ex1)), false), bd.ex0, bd.ex1);
      add(seg(range(bd.ex1, n)), bd.ex1, n);
    }
  } else {
    if (!moe_layer) {
      add(with_tp(seg(range(0, bd.attn)), TpOverlapSite::backward_mlp), 0, bd.attn);
    } else {
      add(with_a2a(seg(range(0, bd.ex0)), true), 0, bd.ex0);
      add(with_a2a(seg(range(bd.ex0, bd.ex1)), false), bd.ex0, bd.ex1);
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
//  * while the collective runs the GEMM shares SMs and HBM with it (Seg::comm,
//    the userbuffers kernels' footprint, hardware/interference.h).
// The next segment's first GEMM is this layer's own (the next layer's is the same
// shape); the window runs at the end of segment i on the timeline, so its length,
// not its position, is what the model keeps.
void LayerCosts::tp_overlap_windows(const std::vector<Kernel>& ks,
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
    sg.overlap_ns = sim::checked_ns(window, "a TP-overlap window");
    last_chunked[i] = true;
    first_chunked[nx] = true;
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!ends[i].any) continue;
    double extra = 0;
    if (last_chunked[i]) extra += ends[i].last - exec(ks[ends[i].last_i]);
    if (first_chunked[i] && ends[i].first_i != ends[i].last_i) extra += ends[i].first - exec(ks[ends[i].first_i]);
    pc.segs[i].ns += sim::checked_ns(std::max(0.0, extra), "a TP-overlap segment's exposed communication");
  }
}

const LayerCost& LayerCosts::layer_cost(int layer) {
  const bool moe = s_.model.is_moe_layer(layer);
  // A block that is not checkpointed runs as without recompute (models::layer_shape).
  const int key = (moe ? 1 : 0) + (models::checkpointed(shape_, layer) ? 2 : 0);
  auto it = layer_cache_.find(key);
  if (it != layer_cache_.end()) return it->second;
  const models::RankShape shape = models::layer_shape(shape_, layer);
  return layer_cache_.emplace(key, cost_of(layer, models::layer_kernels(s_.model, layer, shape), shape)).first->second;
}

LayerCost LayerCosts::mtp_cost() const {
  // One MTP module: a block of the last layer's kind behind its norms and projection
  // (models::mtp_kernels); the shared head it runs again is the head's own cost (end_cost).
  const int last = std::max(0, s_.model.layers - 1);
  LayerCost lc = cost_of(last, models::mtp_kernels(s_.model, shape_), shape_);
  const double extra = models::mtp_extra_activation_bytes(s_.model, shape_);
  lc.act_bytes += extra;
  lc.stash_bytes += extra;   // the projection's input, kept for its weight gradient
  const auto& P = s_.parallel;
  const double h = static_cast<double>(s_.model.hidden);
  lc.params += 2 * h * h / P.tp + 2 * h;
  return lc;
}

LayerCost LayerCosts::cost_of(int layer, models::LayerKernels ks, const models::RankShape& shape) const {
  const bool moe = s_.model.is_moe_layer(layer);
  LayerCost lc;
  if (moe) {   // the slowest EP rank's expert GEMMs (moe.imbalance; unchanged at 1.0)
    scale_expert_kernels(s_, ks.f, ks.f_experts, ks.f_experts_end);
    scale_expert_kernels(s_, ks.b, ks.b_experts, ks.b_experts_end);
    scale_expert_wgrads(s_, ks.w);
    scale_expert_permutes(s_, ks.f);
    scale_expert_permutes(s_, ks.b);
    group_expert_gemms(s_, ks.f, ks.f_experts, ks.f_experts_end, false);   // one grouped call ([gemm_grouped])
    group_expert_gemms(s_, ks.b, ks.b_experts, ks.b_experts_end, false);
    group_expert_gemms(s_, ks.w, 0, ks.w.size(), true);
  }
  if (s_.moe.recompute_norm_up_proj) add_norm_up_proj_recompute(ks.f, ks.b);
  const auto comm = models::layer_comm(s_.model, layer, shape_);
  const Bounds fb{ks.f_mlp, 0, ks.f_experts, ks.f_experts_end};
  // A checkpointed layer (recompute on) costs the host its wrapper in the forward and the
  // recomputation's trigger in the backward, beyond the ops (CostModel::checkpoint_host).
  const bool ckpt = shape.recompute != config::Recompute::none;
  lc.f = pass_cost(ks.f, false, moe, comm, fb, ckpt ? cost_.checkpoint_host() : 0);
  lc.b = pass_cost(ks.b, true, moe, comm, Bounds{0, ks.b_attn, ks.b_experts, ks.b_experts_end});
  lc.w = PassCost{};
  if (!ks.w.empty()) {
    std::vector<const Kernel*> all;
    for (const auto& k : ks.w) all.push_back(&k);
    lc.w.segs.push_back(seg_of(all));
    lc.w.segs.back().beside = true;   // a weight gradient waits for no collective (F&B pair only)
  }
  if (moe) fb_passes(ks, lc);
  if (shape.recompute == config::Recompute::full) {
    lc.r = pass_cost(ks.r, false, moe, comm, fb, cost_.recompute_host());
  } else if (!ks.r.empty()) {
    std::vector<const Kernel*> all;
    for (const auto& k : ks.r) all.push_back(&k);
    lc.r.segs.push_back(seg_of(all, cost_.recompute_host()));
  }
  lc.act_bytes = models::activation_bytes(s_.model, layer, shape);
  lc.stash_bytes = std::min(lc.act_bytes, models::w_stash_bytes(s_.model, layer, shape));
  if (shape.recompute != config::Recompute::none) {
    models::RankShape full = shape;
    full.recompute = config::Recompute::none;
    lc.recompute_bytes = std::max(0.0, models::activation_bytes(s_.model, layer, full) - lc.act_bytes);
  }
  // Parameters of the layer held by this rank (sharded by tp, experts by ep), for DP buckets.
  const auto& P = s_.parallel;
  const auto sm = models::static_memory(s_.model, {layer}, false, false, P.tp, P.ep, P.dp, P.distributed_optimizer);
  lc.params = sm.params / models::param_bytes(false);   // bf16 static_memory: 2 bytes per parameter
  lc.expert_params = models::detail::layer_parts(s_.model, layer).experts / (static_cast<double>(P.tp) * P.ep);
  return lc;
}

LayerCost LayerCosts::end_cost(bool embedding) const {
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
  for (Seg& sg : lc.w.segs) sg.beside = true;   // a weight gradient waits for no collective (F&B pair only)
  lc.act_bytes = embedding ? models::embedding_activation_bytes(s_.model, shape_)
                           : models::head_activation_bytes(s_.model, shape_);
  return lc;
}

// DualPipe's F&B pair (DeepSeek-V3 §3.2.1, Figure 4): the report splits each chunk into
// attention, all-to-all dispatch, MLP and all-to-all combine, the backward's attention and MLP
// further into their input-gradient and weight-gradient parts, and places the shared expert
// beside the dispatch. Here the layer's ordinary passes are cut at the same places: the
// shared expert and the weight gradients become segments of their own (marked `beside`: they
// wait for no transfer), the other segments are the ordinary ones. The emission order of the
// pair is step/emit.cpp's fb_order.
void LayerCosts::fb_passes(const models::LayerKernels& ks, LayerCost& lc) const {
  if (shape_.fp32_autocast) return;   // the cast kernels move the block boundaries
  const auto& F = lc.f.segs;
  const auto& B = lc.b.segs;
  auto ep = [](const Seg& x) { return x.comm_ns > 0 && x.comm_cat == Category::ep_comm; };
  // The shape pass_cost gives a MoE layer with an EP transfer: F = attention | router (dispatch)
  // | experts (combine) | unpermute + shared; B = unpermute's gradient + shared (the combine's
  // gradient) | experts (the dispatch's gradient) | router | attention.
  if (F.size() != 4 || B.size() != 4 || !ep(F[1]) || !ep(F[2]) || !ep(B[0]) || !ep(B[1]) || ks.w.empty()) return;
  auto pick = [](const std::vector<Kernel>& v, std::size_t from, std::size_t to, std::size_t skip0,
                 std::size_t skip1) {
    std::vector<const Kernel*> out;
    for (std::size_t i = std::min(from, v.size()); i < std::min(to, v.size()); ++i)
      if (i < skip0 || i >= skip1) out.push_back(&v[i]);
    return out;
  };
  // `whole` cut into the segments of two kernel sets: each keeps its kernels' own time; the
  // host work `whole` carried beyond its kernels' issue (a checkpoint's) is shared by host time.
  auto cut = [&](const Seg& whole, const std::vector<const Kernel*>& a, const std::vector<const Kernel*>& b) {
    Seg x = seg_of(a), y = seg_of(b);
    const std::int64_t extra = whole.host_ns - x.host_ns - y.host_ns;
    if (extra > 0 && x.host_ns + y.host_ns > 0) {
      const std::int64_t ex = extra * x.host_ns / (x.host_ns + y.host_ns);
      x.host_ns += ex;
      y.host_ns += extra - ex;
    }
    // x keeps the collective of `whole`
    x.comm_ns = whole.comm_ns;
    x.comm_cat = whole.comm_cat;
    x.comm_nic = whole.comm_nic;
    x.comm_overlappable = whole.comm_overlappable;
    x.overlap_ns = whole.overlap_ns;
    x.comm = whole.comm;
    y.beside = true;
    return std::pair<Seg, Seg>{x, y};
  };
  const bool shared = ks.f_shared_end > ks.f_shared && ks.b_shared_end > ks.b_shared;
  LayerCost& o = lc;
  o.fb_f.segs = {F[0], F[1]};
  o.fb_b.segs.clear();
  if (shared) {
    const auto [post, sh] = cut(F[3], pick(ks.f, ks.f_experts_end, ks.f.size(), ks.f_shared, ks.f_shared_end),
                                pick(ks.f, ks.f_shared, ks.f_shared_end, 0, 0));
    o.fb_f.segs.push_back(sh);
    o.fb_f.segs.push_back(F[2]);
    o.fb_f.segs.push_back(post);
    const auto [head, shb] = cut(B[0], pick(ks.b, 0, ks.b_experts, ks.b_shared, ks.b_shared_end),
                                 pick(ks.b, ks.b_shared, ks.b_shared_end, 0, 0));
    o.fb_b.segs = {head, shb};
  } else {
    o.fb_f.segs.push_back(F[2]);
    o.fb_f.segs.push_back(F[3]);
    o.fb_b.segs = {B[0]};
  }
  const auto [w_attn, w_mlp] = cut(lc.w.segs.front(), pick(ks.w, 0, ks.w_mlp, 0, 0), pick(ks.w, ks.w_mlp, ks.w.size(), 0, 0));
  Seg wa = w_attn;
  wa.beside = true;
  o.fb_b.segs.push_back(B[1]);
  o.fb_b.segs.push_back(w_mlp);
  o.fb_b.segs.push_back(B[2]);
  o.fb_b.segs.push_back(B[3]);
  o.fb_b_free = o.fb_b.segs.size() - 1;
  o.fb_b.segs.push_back(wa);
  o.fb = true;
}

}  // namespace mfusim::layer
