// Communication-computation interference (interference.h): the measured
// slowdown curves and the footprints of NCCL and userbuffers kernels.
#include "hardware/interference.h"

#include <algorithm>
#include <cmath>

namespace mfusim::hardware {

namespace {
constexpr double kSmLogSlope = 0.094;     // a in S(k) = 1 + a ln(1 + k), fitted to results-14b (hold rows)
constexpr double kHbmQuadratic = 1.2;     // H(f) = 1 + 1.2 f^2, fitted to results-14b (copy / hold rows)
constexpr double kAttnShare = 0.51;       // A(k) = 1 + 0.51 k / (132 - k), run 29 (hold rows, 4 shapes x 4 k)
constexpr double kMemHbmBase = 0.213;     // c(u) = 0.213 + 0.504 u: least squares over run 26's three kernels'
constexpr double kMemHbmSlope = 0.504;    // c (copy 0.687, cast 0.492, transpose 0.295 at u 0.854, 0.667, 0.131)
constexpr int kNcclNvlinkChannels = 32;   // Hopper NVLink collectives (interference.h)
constexpr int kNcclNetChannels = 2;       // per NIC peer
constexpr int kNcclP2pNvlinkCtas = 16;    // send/recv, all-to-all over NVLink
}  // namespace

double sm_slowdown(int held_sms) {
  if (held_sms <= 0) return 1.0;
  const int k = std::min(held_sms, kMeasuredSms - 1);
  const double staircase = 1.0 + kSmLogSlope * std::log1p(static_cast<double>(k));
  const double share = static_cast<double>(kMeasuredSms) / static_cast<double>(kMeasuredSms - k);
  return std::max(staircase, share);
}

double hbm_slowdown(double f) {
  if (!(f > 0)) return 1.0;
  f = std::min(f, 1.0);
  return 1.0 + kHbmQuadratic * f * f;
}

double compute_slowdown(const CommFootprint& c, const HardwareSpec& hw) { return contention(c, hw).gemm; }

double attention_sm_slowdown(int held_sms) {
  if (held_sms <= 0) return 1.0;
  const int k = std::min(held_sms, kMeasuredSms - 1);
  return 1.0 + kAttnShare * static_cast<double>(k) / static_cast<double>(kMeasuredSms - k);
}

double memory_hbm_coefficient(double u) {
  if (!(u > 0)) u = 0;
  return kMemHbmBase + kMemHbmSlope * std::min(u, 1.0);
}

double sm_paced_comm_slowdown() { return 1.0 / kSmPacedCommBesideCompute; }

Contention contention(const CommFootprint& c, const HardwareSpec& hw) {
  Contention out;
  double f = hw.hbm_bandwidth > 0 ? c.hbm_bytes_per_s / hw.hbm_bandwidth : 0.0;
  if (!(f > 0)) f = 0;
  f = std::min(f, 1.0);
  out.gemm = sm_slowdown(c.sms) * hbm_slowdown(f);
  out.attention = attention_sm_slowdown(c.sms) * hbm_slowdown(f);
  out.hbm = f;
  return out;
}

CommFootprint nccl_footprint(Collective c, const Group& g, const HardwareSpec& hw, const Calibration* cal) {
  CommFootprint out;
  if (g.size <= 1) return out;
  const bool p2p = c == Collective::send_recv || c == Collective::all_to_all;
  const bool reducing = c == Collective::all_reduce || c == Collective::reduce_scatter;
  const bool nic_only = g.crosses_domains() && g.per_domain <= 1;
  if (nic_only) {
    out.sms = kNcclNetChannels;
    out.hbm_bytes_per_s = (reducing ? 3.0 : 2.0) * nic_link(hw, cal).bandwidth;
  } else {
    out.sms = p2p ? kNcclP2pNvlinkCtas : kNcclNvlinkChannels;
    out.hbm_bytes_per_s = (reducing ? 3.0 : 2.0) * nvlink_link(hw, cal, c).bandwidth;
  }
  return out;
}

CommFootprint userbuffers_footprint(TpOverlapSite site, const HardwareSpec& hw, const Calibration* cal) {
  CommFootprint out;
  switch (site) {
    case TpOverlapSite::forward_attention: out.sms = 24; break;
    case TpOverlapSite::forward_mlp: out.sms = 16; break;
    case TpOverlapSite::backward_attention: out.sms = 24; break;
    case TpOverlapSite::backward_mlp: out.sms = 4; break;
  }
  out.hbm_bytes_per_s = 3.0 * nvlink_link(hw, cal, Collective::reduce_scatter).bandwidth;
  return out;
}

double side_elementwise_slowdown() { return 1.0 / (1.0 - (1.0 - kSideElementwiseHidden) / kSideElementwiseStretch); }

}  // namespace mfusim::hardware
