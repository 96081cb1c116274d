#pragma once
// Expert-parallel dispatch and combine of one MoE layer per micro-batch on one rank
// (moe.dispatcher, docs/moe-dualpipe.md):
//  * alltoall: Megatron's all-to-all token dispatcher: every token is sent once per
//    selected expert (bf16), one NCCL all-to-all over the EP group for the dispatch and
//    one for the combine (hardware::collective_time).
//  * deepep: DeepEP's normal kernels (github.com/deepseek-ai/DeepEP, docs/legacy.md
//    "Normal kernels with NVLink and RDMA forwarding"; DeepSeek-V3 report §3.2.2):
//    node-limited routing sends each token to at most moe.max_nodes_per_token nodes,
//    once per destination node over IB, then fans it out over NVLink to the GPUs of that
//    node holding its experts (the combine is the reverse); fp8 dispatch (1 byte per
//    element + one fp32 scale per 128) and bf16 combine; IB and NVLink run pipelined, so a
//    transfer takes the longer of the two at the achieved bandwidths DeepEP publishes.
// moe.imbalance (max over mean tokens per EP rank) scales the slowest rank's bytes.
#include <algorithm>
#include <vector>

#include "config/scenario.h"
#include "hardware/collectives.h"
#include "models/layer_comm.h"
#include "models/rank_shape.h"

namespace mfusim::layer {

// Bytes one rank moves for one dispatch or combine (deepep), per link.
struct EpTraffic {
  double ib_bytes = 0;      // logical RDMA bytes (one copy per destination node, the local node included)
  double nvlink_bytes = 0;  // NVLink bytes (intranode EP, or the fan-out inside the destination node)
  double nodes_per_token = 0;
  double token_bytes = 0;   // bytes of one token on the wire
  bool internode = false;
};
// DeepEP traffic of one dispatch (combine = false) or combine, for `tokens` local tokens.
EpTraffic deepep_traffic(const config::Scenario&, const hardware::Group& ep, double tokens, bool combine);

// DeepEP's achieved bandwidths (bytes/s): the scenario's moe.nvlink_gbs / moe.rdma_gbs, else
// DeepEP's published H800 figures as fractions of the H800 datasheet links applied to this
// hardware's links (moe_dispatch.cpp).
double deepep_nvlink_bandwidth(const config::Scenario&, bool combine);
double deepep_rdma_bandwidth(const config::Scenario&, int ep, bool combine);

struct EpTimes {
  double dispatch_s = 0, combine_s = 0;
  bool nic = false;         // the transfer uses the NIC
};
// One dispatch and one combine of a MoE layer per micro-batch on one rank (0 when ep = 1).
// `all_to_all` prices Megatron's dispatcher (LayerCosts::coll).
template <class AllToAll>
EpTimes ep_times(const config::Scenario& s, const models::LayerComm& lc, const models::RankShape& r,
                 const hardware::Group& ep, AllToAll all_to_all);

// SMs the EP dispatch/combine kernels hold while they run: deepep's fixed moe.comm_sms
// (DeepSeek-V3 §3.2.2: 20 of the H800's 132); 0 for Megatron's all-to-all (NCCL's P2P
// footprint applies there) or when the setting leaves no SMs for compute. The compute beside
// them slows by the measured held-SM curves (hardware::contention, runs 14 and 29).
int deepep_sms(const config::Scenario&);

// The slowest EP rank's load over the mean that the step runs at: moe.imbalance for an MoE model with
// expert parallelism, 1 otherwise (at ep = 1 the one rank holds every expert and T x top_k rows however they
// route: nothing waits for a slowest rank).
double expert_load_imbalance(const config::Scenario&);

// Expert GEMMs of the slowest EP rank: the kernels' tokens scaled by expert_load_imbalance (unchanged at 1).
void scale_expert_kernels(const config::Scenario&, std::vector<hardware::Kernel>& ks, std::size_t from, std::size_t to);

// The same for the weight-gradient pass: the kernels named expert_*.
void scale_expert_wgrads(const config::Scenario&, std::vector<hardware::Kernel>& ks);

// Under DeepEP the token permutation is the receiver's: it expands the tokens the rank received into its
// experts' rows and reduces the rows back before the combine (DeepSeek's profile: expand_to_fused and
// reduce_fused, their grids following the rows), so the slowest rank's are scaled too (moe_permute,
// moe_unpermute and their gradients). Megatron's all-to-all dispatcher permutes the rank's own tokens before
// the transfer: unchanged.
void scale_expert_permutes(const config::Scenario&, std::vector<hardware::Kernel>& ks);

// Grouped expert GEMMs: with a calibration that has [gemm_grouped], each expert GEMM of the
// rank's `count` experts becomes one grouped call, priced as one dense GEMM of the group's total
// size (tokens of all experts for the forward and input gradient, the reduction over them for
// the weight gradient) at the measured grouped/dense rate for its tokens per expert
// (hardware::grouped_gemm_efficiency). Without it (or with one expert per rank) unchanged: count
// separate GEMMs. f/b: the kernels [from, to); wgrad: the kernels named expert_*.
void group_expert_gemms(const config::Scenario&, std::vector<hardware::Kernel>& ks, std::size_t from, std::size_t to,
                        bool wgrad);

// moe.recompute_norm_up_proj: the forward's RMSNorms and MLA up-projections (q_up, kv_up)
// run again in the backward, appended to its last (attention) segment; an fp8 up-projection
// with the quantisation of its input (the fp8 kernels just before it in the forward); with MLA the
// rotary embeddings and the dense K and V copies the attention core reads, built from them again.
void add_norm_up_proj_recompute(std::vector<hardware::Kernel>& f, std::vector<hardware::Kernel>& b);

// The expert-data-parallel group (Megatron: dp * cp * tp / (ep * etp), etp = 1), which
// reduces the expert gradients: ranks with the same EP coordinate, stride tp*cp*ep.
hardware::Group expert_dp_group(const config::Scenario&);

double tokens_per_rank(const models::RankShape&);

// ---- template implementation
template <class AllToAll>
EpTimes ep_times(const config::Scenario& s, const models::LayerComm& lc, const models::RankShape& r,
                 const hardware::Group& ep, AllToAll all_to_all) {
  EpTimes t;
  if (ep.size <= 1 || lc.ep_all_to_all_bytes <= 0) return t;
  t.nic = ep.crosses_domains();
  if (s.moe.dispatcher == config::MoeDispatcher::alltoall) {
    // The slowest rank receives imbalance x the mean; at 1.0 the bytes are unchanged.
    const double im = expert_load_imbalance(s);
    const double bytes = im == 1.0 ? lc.ep_all_to_all_bytes : lc.ep_all_to_all_bytes * im;
    t.dispatch_s = t.combine_s = all_to_all(bytes);
    return t;
  }
  const double T = tokens_per_rank(r);
  const hardware::HardwareSpec& hw = s.hardware;
  for (int c = 0; c < 2; ++c) {
    const bool combine = c == 1;
    const EpTraffic tr = deepep_traffic(s, ep, T, combine);
    const double nv = deepep_nvlink_bandwidth(s, combine);
    double sec = tr.nvlink_bytes / nv;
    double lat = hw.nvlink_latency;
    if (tr.internode) {
      sec = std::max(sec, tr.ib_bytes / deepep_rdma_bandwidth(s, ep.size, combine));
      lat = std::max(lat, hw.nic_latency);
    }
    (combine ? t.combine_s : t.dispatch_s) = sec + lat;
  }
  return t;
}

}  // namespace mfusim::layer
