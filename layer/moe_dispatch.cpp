// Expert-parallel dispatch and combine (see moe_dispatch.h for the contract).
#include "layer/moe_dispatch.h"

#include <cmath>
#include <string_view>

#include "hardware/cost_model.h"

namespace mfusim::layer {

namespace {

// DeepEP's published achieved bandwidths of its normal (training) kernels, measured on H800
// (github.com/deepseek-ai/DeepEP, docs/legacy.md, "Normal kernels with NVLink and RDMA
// forwarding": H800, CX7 InfiniBand 400 Gb/s, 4096 tokens per batch, 7168 hidden, top-4
// groups, top-8 experts, fp8 dispatch, bf16 combine; bandwidths are logical, per GPU):
//   intranode EP 8:  dispatch 153 GB/s, combine 158 GB/s (NVLink)
//   internode EP 16: dispatch  43 GB/s, combine  43 GB/s (RDMA)
//   internode EP 32: dispatch  58 GB/s, combine  57 GB/s (RDMA)
//   internode EP 64: dispatch  51 GB/s, combine  50 GB/s (RDMA)
// They are applied as fractions of the H800's datasheet links (hardware/h800-sxm.toml:
// NVLink 200 GB/s per direction; NIC 50 GB/s, CX7 400 Gb/s) to the scenario's hardware.
constexpr double kDeepEpH800Nvlink = 200e9;
constexpr double kDeepEpH800Nic = 50e9;
constexpr double kDeepEpNvlinkDispatch = 153e9, kDeepEpNvlinkCombine = 158e9;
struct RdmaRow { int ep; double dispatch, combine; };
constexpr RdmaRow kDeepEpRdma[] = {{16, 43e9, 43e9}, {32, 58e9, 57e9}, {64, 51e9, 50e9}};

// Probability that a group holding `held` of `experts` experts gets none of a token's `k`
// distinct experts, chosen uniformly (hypergeometric); k may be fractional (an average
// number of experts per node), then the power form of the same probability.
double none_of(double experts, double held, double k) {
  if (held >= experts) return 0;
  if (std::floor(k) == k) {
    double p = 1;
    for (int i = 0; i < static_cast<int>(k); ++i) p *= std::max(0.0, (experts - held - i) / (experts - i));
    return p;
  }
  return std::pow(1.0 - held / experts, k);
}

}  // namespace

double tokens_per_rank(const models::RankShape& r) {
  const double T = static_cast<double>(r.micro_batch) * static_cast<double>(r.seq_len) / r.cp;
  return r.sequence_parallel ? T / r.tp : T;
}

double deepep_nvlink_bandwidth(const config::Scenario& s, bool combine) {
  if (s.moe.nvlink_gbs > 0) return s.moe.nvlink_gbs * 1e9;
  return (combine ? kDeepEpNvlinkCombine : kDeepEpNvlinkDispatch) / kDeepEpH800Nvlink * s.hardware.nvlink_bandwidth;
}

double deepep_rdma_bandwidth(const config::Scenario& s, int ep, bool combine) {
  if (s.moe.rdma_gbs > 0) return s.moe.rdma_gbs * 1e9;
  // The row of the largest measured EP size not above this one (EP 16 below 16).
  const RdmaRow* row = &kDeepEpRdma[0];
  for (const RdmaRow& r : kDeepEpRdma)
    if (r.ep <= ep) row = &r;
  return (combine ? row->combine : row->dispatch) / kDeepEpH800Nic * s.hardware.nic_bandwidth;
}

EpTraffic deepep_traffic(const config::Scenario& s, const hardware::Group& ep, double tokens, bool combine) {
  EpTraffic t;
  const auto& mo = *s.model.moe;
  const double h = static_cast<double>(s.model.hidden);
  t.token_bytes = !combine && s.moe.fp8_dispatch ? h + 4.0 * std::ceil(h / 128.0) : 2.0 * h;
  const double im = expert_load_imbalance(s);
  const double E = mo.experts, k = mo.top_k;
  const double p = std::max(1, ep.per_domain);   // EP ranks in one node
  const double N = std::max(1, ep.domains);      // nodes of the EP group
  if (!ep.crosses_domains()) {
    // Intranode: one copy per destination GPU holding any of the token's experts.
    const double ranks = ep.size * (1.0 - none_of(E, E / ep.size, k));
    t.nvlink_bytes = tokens * ranks * t.token_bytes * im;
    t.nodes_per_token = 1;
    return t;
  }
  t.internode = true;
  // Node-limited routing: a token's experts lie on at most M nodes; without the limit, as
  // many nodes as its k experts hit on average.
  const double unlimited = N * (1.0 - none_of(E, E / N, k));
  t.nodes_per_token = std::min(static_cast<double>(s.moe.max_nodes_per_token), unlimited);
  t.ib_bytes = tokens * t.nodes_per_token * t.token_bytes * im;
  // NVLink fan-out in each destination node: the token's k / nodes experts there lie on
  // this many of the node's p GPUs.
  const double per_node = k / t.nodes_per_token;
  const double gpus = p * (1.0 - none_of(E / N, E / (N * p), per_node));
  t.nvlink_bytes = tokens * t.nodes_per_token * gpus * t.token_bytes * im;
  return t;
}

int deepep_sms(const config::Scenario& s) {
  if (s.moe.dispatcher != config::MoeDispatcher::deepep || !s.model.is_moe() || s.parallel.ep <= 1) return 0;
  const int sms = hardware::sm_count_for(s.hardware);
  if (s.moe.comm_sms <= 0 || sms <= s.moe.comm_sms) return 0;
  return s.moe.comm_sms;
}

namespace {
// One expert kernel of the slowest EP rank: a GEMM's tokens (the rows of the forward and input-gradient
// GEMMs, the reduction of the weight gradient's, as in group_expert_gemms: the weight itself does not
// grow) and every kernel's FLOPs by the imbalance; the transposed fp8 copy of the weights unchanged.
void scale_expert_kernel(hardware::Kernel& k, double im, bool wgrad) {
  if (std::string_view(k.name) == "fp8_weight_transpose") return;   // the experts' weights: no more of them
  if (k.kind == hardware::KernelKind::gemm) {
    std::int64_t& tokens = wgrad ? k.k : k.m;
    tokens = std::max<std::int64_t>(1, std::llround(static_cast<double>(tokens) * im));
    k.flops *= im;
    k.bytes = 0;   // recomputed from the shape
  } else {
    k.flops *= im;
    k.bytes *= im;
  }
}
}  // namespace

double expert_load_imbalance(const config::Scenario& s) {
  return s.model.is_moe() && s.parallel.ep > 1 ? s.moe.imbalance : 1.0;
}

void scale_expert_kernels(const config::Scenario& s, std::vector<hardware::Kernel>& ks, std::size_t from,
                          std::size_t to) {
  const double im = expert_load_imbalance(s);
  if (im == 1.0) return;
  for (std::size_t i = std::min(from, ks.size()); i < std::min(to, ks.size()); ++i) scale_expert_kernel(ks[i], im, false);
}

void scale_expert_wgrads(const config::Scenario& s, std::vector<hardware::Kernel>& ks) {
  const double im = expert_load_imbalance(s);
  if (im == 1.0) return;
  for (hardware::Kernel& k : ks)
    if (std::string_view(k.name).rfind("expert_", 0) == 0) scale_expert_kernel(k, im, true);
}

void scale_expert_permutes(const config::Scenario& s, std::vector<hardware::Kernel>& ks) {
  const double im = expert_load_imbalance(s);
  if (im == 1.0 || s.moe.dispatcher != config::MoeDispatcher::deepep) return;
  for (hardware::Kernel& k : ks) {
    const std::string_view n(k.name);
    if (n == "moe_permute" || n == "moe_unpermute" || n == "moe_permute_grad" || n == "moe_unpermute_grad")
      scale_expert_kernel(k, im, false);
  }
}

void group_expert_gemms(const config::Scenario& s, std::vector<hardware::Kernel>& ks, std::size_t from, std::size_t to,
                        bool wgrad) {
  if (!s.calibration || !(s.calibration->has_gemm_grouped || s.calibration->has_gemm_grouped_fp8)) return;
  for (std::size_t i = std::min(from, ks.size()); i < std::min(to, ks.size()); ++i) {
    hardware::Kernel& k = ks[i];
    if (k.kind != hardware::KernelKind::gemm || k.count <= 1) continue;
    // fp8 expert GEMMs at the fp8 per-expert fraction where the calibration has one (runs 44-45: 0.42 of one
    // fp8 GEMM at 128 tokens per expert where bf16's grouped call keeps 0.59), bf16's otherwise
    const bool fp8 = s.training.precision == config::Precision::fp8 && !k.keep_bf16 && s.calibration->has_gemm_grouped_fp8;
    if (!fp8 && !s.calibration->has_gemm_grouped) continue;   // an fp8-only fit leaves bf16 expert GEMMs separate
    const hardware::GroupedGemmFit& fit = fp8 ? s.calibration->gemm_grouped_fp8 : s.calibration->gemm_grouped;
    if (wgrad && std::string_view(k.name).rfind("expert_", 0) != 0) continue;
    const double per_flops = k.flops > 0 ? k.flops : 2.0 * static_cast<double>(k.m) * k.n * k.k;
    const double per_bytes = k.bytes > 0 ? k.bytes
                                         : 2.0 * (static_cast<double>(k.m) * k.k + static_cast<double>(k.k) * k.n +
                                                  static_cast<double>(k.m) * k.n);
    // Tokens per expert: the rows of the forward and input-gradient GEMMs, the reduction of the weight gradient's.
    std::int64_t& tokens = wgrad ? k.k : k.m;
    k.grouped_eff = hardware::grouped_gemm_efficiency(fit, static_cast<double>(tokens));
    tokens *= k.count;
    if (wgrad) k.accumulate_outputs = k.count;   // each expert's main_grad (the epilogue, CostModel::gemm_seconds)
    k.flops = per_flops * k.count;
    k.bytes = per_bytes * k.count;   // every expert's own weights
    k.count = 1;
  }
}

void add_norm_up_proj_recompute(std::vector<hardware::Kernel>& f, std::vector<hardware::Kernel>& b) {
  std::vector<hardware::Kernel> again;
  const bool mla = std::any_of(f.begin(), f.end(), [](const hardware::Kernel& k) { return std::string_view(k.name) == "kv_up"; });
  for (std::size_t i = 0; i < f.size(); ++i) {
    const std::string_view n(f[i].name);
    if (n == "q_up" || n == "kv_up") {
      // an fp8 up-projection quantises its recomputed input again (the kernels just before it:
      // profile-data train.json, attn(B): per_token_cast_to_fp8 and the scales' transpose before
      // each recomputed up-projection GEMM)
      std::size_t j = i;
      while (j > 0) {
        const std::string_view p(f[j - 1].name);
        if (p != "fp8_quant_x" && p != "fp8_scale_transpose" && p != "fp8_cast_x" && p != "fp8_amax_x") break;
        --j;
      }
      again.insert(again.end(), f.begin() + static_cast<std::ptrdiff_t>(j), f.begin() + static_cast<std::ptrdiff_t>(i));
    }
    // with MLA, the rotary embeddings and the dense K and V built from the recomputed projections
    // (profile-data train.json, attn(B): rotary, _copy_tensor_kernel, direct_copy, rotary again
    // before the flash backward)
    const bool mla_core = mla && (n == "rope_q" || n == "rope_k" || n == "mla_k_concat" || n == "mla_v_copy");
    if (n == "rmsnorm" || n == "layernorm" || n == "q_norm" || n == "kv_norm" || n == "q_up" || n == "kv_up" || mla_core)
      again.push_back(f[i]);
  }
  b.insert(b.end(), again.begin(), again.end());
}

hardware::Group expert_dp_group(const config::Scenario& s) {
  const auto& P = s.parallel;
  hardware::Group g;
  const int ep = std::max(1, P.ep);
  g.size = std::max(1, P.dp * P.cp / ep);
  if (g.size <= 1) return g;
  const int stride = P.tp * P.cp * ep;      // ranks with the same EP coordinate
  const int G = std::max(1, s.hardware.gpus_per_node);
  g.per_domain = stride >= G ? 1 : std::min(g.size, G / stride);
  g.domains = (g.size + g.per_domain - 1) / g.per_domain;
  return g;
}

}  // namespace mfusim::layer
