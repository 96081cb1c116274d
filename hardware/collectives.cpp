// Alpha-beta collective times and Megatron rank placement; formulas,
// defaults and sources in docs/cost-model.md.
//
// n = group size, S = bytes per rank (nccl-tests convention), B = achieved
// bus bandwidth, alpha = per-step latency (nccl-tests doc/PERFORMANCE.md):
//   ring all-reduce        2(n-1)/n * S/B + 2(n-1) alpha
//   reduce-scatter / all-gather (n-1)/n * S/B + (n-1) alpha
//   tree all-reduce        2 S/B + 2 ceil(log2 n) alpha   (pipelined double binary tree)
//   all-to-all             (n-1)/n * S/B + (n-1) alpha
//   send/recv              S/B + alpha
//   broadcast (pipelined)  S/B + (n-1) alpha
#include "hardware/collectives.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

namespace mfusim::hardware {

// Calibration's per-operation fits are indexed in Collective order (calibration.h).
static_assert(static_cast<int>(Collective::all_reduce) == 0 && static_cast<int>(Collective::all_gather) == 1 &&
              static_cast<int>(Collective::reduce_scatter) == 2 && static_cast<int>(Collective::all_to_all) == 3 &&
              static_cast<int>(Collective::send_recv) == 4 && kCollectiveOps == 5);

namespace {

constexpr double kNvlinkEfficiency = 0.80;   // nccl-tests H100 8-GPU all-reduce busbw ~360 of 450 GB/s
constexpr double kNicEfficiency = 0.90;      // IB NDR 400 Gb/s: ~45 of 50 GB/s busbw

double steps_log2(int n) { return std::ceil(std::log2(static_cast<double>(n))); }

double ring_all_reduce(double s, int n, Link l) {
  return 2.0 * (n - 1) / n * s / l.bandwidth + 2.0 * (n - 1) * l.latency;
}
double ring_half(double s, int n, Link l) {   // reduce-scatter or all-gather
  return static_cast<double>(n - 1) / n * s / l.bandwidth + (n - 1) * l.latency;
}
double tree_all_reduce(double s, int n, Link l) {
  return 2.0 * s / l.bandwidth + 2.0 * steps_log2(n) * l.latency;
}

// The link a flat ring or tree sees when the group spans domains: every step
// waits for a NIC hop (alpha of the NIC); the per_domain ranks in each domain
// drive per_domain NICs in parallel (rail-optimised, one ring/tree channel per
// NIC), capped by NVLink.
Link crossing_link(const Group& g, Link nv, Link nic) {
  return {std::min(nv.bandwidth, g.per_domain * nic.bandwidth), std::max(nv.latency, nic.latency)};
}

}  // namespace

const char* to_string(Collective c) {
  switch (c) {
    case Collective::all_reduce: return "all-reduce";
    case Collective::all_gather: return "all-gather";
    case Collective::reduce_scatter: return "reduce-scatter";
    case Collective::all_to_all: return "all-to-all";
    case Collective::send_recv: return "send-recv";
    case Collective::broadcast: return "broadcast";
  }
  return "?";
}

const char* to_string(Algorithm a) {
  switch (a) {
    case Algorithm::ring: return "ring";
    case Algorithm::tree: return "tree";
    case Algorithm::hierarchical: return "hierarchical";
    case Algorithm::direct: return "direct";
  }
  return "?";
}

double nvlink_efficiency(const Calibration* cal, const HardwareSpec* hw) {
  if (cal && cal->has_collectives && cal->collectives.nvlink_bus_bandwidth > 0 && hw && hw->nvlink_bandwidth > 0)
    return cal->collectives.nvlink_bus_bandwidth / hw->nvlink_bandwidth;
  return kNvlinkEfficiency;
}

double nic_efficiency(const Calibration* cal, const HardwareSpec* hw) {
  if (cal && cal->has_collectives && cal->collectives.nic_bus_bandwidth > 0 && hw && hw->nic_bandwidth > 0)
    return cal->collectives.nic_bus_bandwidth / hw->nic_bandwidth;
  return kNicEfficiency;
}

Link nvlink_link(const HardwareSpec& hw, const Calibration* cal) {
  Link l{hw.nvlink_bandwidth * kNvlinkEfficiency, hw.nvlink_latency};
  if (cal && cal->has_collectives) {
    if (cal->collectives.nvlink_bus_bandwidth > 0) l.bandwidth = cal->collectives.nvlink_bus_bandwidth;
    if (cal->collectives.nvlink_latency_s > 0) l.latency = cal->collectives.nvlink_latency_s;
  }
  return l;
}

Link nvlink_link(const HardwareSpec& hw, const Calibration* cal, Collective c) {
  const int i = static_cast<int>(c);
  if (cal && cal->has_collectives && i < kCollectiveOps && cal->collectives.op[i].nvlink_bus_bandwidth > 0)
    return {cal->collectives.op[i].nvlink_bus_bandwidth, cal->collectives.op[i].nvlink_latency_s};
  return nvlink_link(hw, cal);
}

Link nic_link(const HardwareSpec& hw, const Calibration* cal) {
  Link l{hw.nic_bandwidth * kNicEfficiency, hw.nic_latency};
  if (cal && cal->has_collectives) {
    if (cal->collectives.nic_bus_bandwidth > 0) l.bandwidth = cal->collectives.nic_bus_bandwidth;
    if (cal->collectives.nic_latency_s > 0) l.latency = cal->collectives.nic_latency_s;
  }
  return l;
}

CollectiveTime hierarchical_all_reduce(double bytes, const Group& g, const HardwareSpec& hw, const Calibration* cal) {
  CollectiveTime out;
  out.algorithm = Algorithm::hierarchical;
  if (g.size <= 1 || !(bytes > 0)) return out;
  const Link nic = nic_link(hw, cal);
  // Inside a domain it runs a reduce-scatter and an all-gather: their own NVLink lines
  // when the calibration has them (else both are the overall line).
  Link rs = nvlink_link(hw, cal, Collective::reduce_scatter), ag = nvlink_link(hw, cal, Collective::all_gather);
  if (!(rs.bandwidth > 0)) rs = nic;
  if (!(ag.bandwidth > 0)) ag = nic;
  const int p = std::max(1, std::min(g.per_domain, g.size));
  const int d = std::max(1, g.domains);
  // Inside a domain: reduce-scatter then all-gather of S over p ranks.
  const double intra = p > 1 ? ring_half(bytes, p, rs) + ring_half(bytes, p, ag) : 0.0;
  // Across domains: each rank all-reduces its S/p shard with its d peers on its own NIC.
  const double inter = d > 1 ? std::min(ring_all_reduce(bytes / p, d, nic), tree_all_reduce(bytes / p, d, nic)) : 0.0;
  out.seconds = intra + inter;
  out.nvlink_bytes = 2.0 * (p - 1) / p * bytes;
  out.nic_bytes = 2.0 * (d - 1) / d * bytes / p;
  return out;
}

CollectiveTime collective_time(Collective c, double bytes, const Group& g, const HardwareSpec& hw,
                               AlgoChoice choice, const Calibration* cal) {
  CollectiveTime out;
  const int n = g.size;
  if (n <= 1 || !(bytes > 0)) {
    out.algorithm = (c == Collective::all_to_all || c == Collective::send_recv) ? Algorithm::direct : Algorithm::ring;
    return out;
  }
  const double s = bytes;
  const Link nic = nic_link(hw, cal);
  Link nv = nvlink_link(hw, cal, c);   // the operation's own NVLink line when calibrated
  if (!(nv.bandwidth > 0)) nv = nic;   // no NVLink: peers talk through the NIC
  const bool crossing = g.crosses_domains();
  const int p = std::max(1, std::min(g.per_domain, n));   // ranks per domain
  const Link flat = crossing ? crossing_link(g, nv, nic) : nv;
  // Share of a flat ring/tree's per-rank traffic that goes through the NIC:
  // each rank is the boundary of one of the p channels.
  const double nic_share = crossing ? 1.0 / p : 0.0;

  switch (c) {
    case Collective::all_reduce: {
      const double ring = ring_all_reduce(s, n, flat);
      const double tree = tree_all_reduce(s, n, flat);
      const double hier = crossing && p > 1 ? hierarchical_all_reduce(s, g, hw, cal).seconds : -1.0;
      Algorithm a = Algorithm::ring;
      if (choice == AlgoChoice::tree) a = Algorithm::tree;
      if (choice == AlgoChoice::auto_) {
        if (tree < ring) a = Algorithm::tree;
        if (hier >= 0 && hier < std::min(ring, tree)) a = Algorithm::hierarchical;
      }
      out.algorithm = a;
      if (a == Algorithm::ring) {
        const double traffic = 2.0 * (n - 1) / n * s;
        out.seconds = ring;
        out.nic_bytes = traffic * nic_share;
        out.nvlink_bytes = traffic - out.nic_bytes;
      } else if (a == Algorithm::tree) {
        out.seconds = tree;
        out.nic_bytes = 2.0 * s * nic_share;
        out.nvlink_bytes = 2.0 * s - out.nic_bytes;
      } else {
        out = hierarchical_all_reduce(s, g, hw, cal);
      }
      return out;
    }
    case Collective::all_gather:
    case Collective::reduce_scatter: {
      const double traffic = static_cast<double>(n - 1) / n * s;
      out.seconds = ring_half(s, n, flat);
      out.algorithm = Algorithm::ring;   // NCCL runs these as rings (tree is all-reduce only)
      out.nic_bytes = traffic * nic_share;
      out.nvlink_bytes = traffic - out.nic_bytes;
      return out;
    }
    case Collective::all_to_all: {
      out.algorithm = Algorithm::direct;
      if (!crossing) {
        out.seconds = static_cast<double>(n - 1) / n * s / nv.bandwidth + (n - 1) * nv.latency;
        out.nvlink_bytes = static_cast<double>(n - 1) / n * s;
        return out;
      }
      // Remote peers' shards leave on this rank's NIC, local peers' on NVLink,
      // both at once; every step waits for the slowest (NIC) latency.
      out.nic_bytes = static_cast<double>(n - p) / n * s;
      out.nvlink_bytes = static_cast<double>(p - 1) / n * s;
      out.seconds = std::max(out.nic_bytes / nic.bandwidth, out.nvlink_bytes / nv.bandwidth) +
                    (n - 1) * std::max(nic.latency, nv.latency);
      return out;
    }
    case Collective::send_recv: {
      out.algorithm = Algorithm::direct;
      const Link l = crossing ? nic : nv;
      out.seconds = s / l.bandwidth + l.latency;
      (crossing ? out.nic_bytes : out.nvlink_bytes) = s;
      return out;
    }
    case Collective::broadcast: {
      out.algorithm = Algorithm::ring;
      out.seconds = s / flat.bandwidth + (n - 1) * flat.latency;
      out.nic_bytes = s * nic_share;
      out.nvlink_bytes = s - out.nic_bytes;
      return out;
    }
  }
  return out;
}

namespace {

// The worst group of one parallel dimension: ranks base + i*stride, i < size,
// for every base whose coordinate along the dimension (extent `extent`) is a
// multiple of `size`.
Group analyse(std::int64_t ranks, std::int64_t stride, int extent, int size, int domain) {
  Group worst{size, 1, size};
  if (size <= 1) return worst;
  bool first = true;
  for (std::int64_t base = 0; base < ranks; ++base) {
    if (((base / stride) % extent) % size != 0) continue;
    int domains = 0, fewest = size, run = 0;
    std::int64_t current = -1;
    for (int i = 0; i < size; ++i) {
      const std::int64_t dom = (base + i * stride) / domain;
      if (dom != current) {
        if (run > 0) fewest = std::min(fewest, run);
        current = dom;
        ++domains;
        run = 0;
      }
      ++run;
    }
    fewest = std::min(fewest, run);
    if (first || domains > worst.domains || (domains == worst.domains && fewest < worst.per_domain)) {
      worst = {size, domains, fewest};
      first = false;
    }
  }
  return worst;
}

}  // namespace

Placement place(const Layout& l, const HardwareSpec& hw) {
  Placement out;
  const int domain = std::max(1, hw.gpus_per_node);
  const int tp = std::max(1, l.tp), cp = std::max(1, l.cp), dp = std::max(1, l.dp), pp = std::max(1, l.pp);
  int ep = std::max(1, l.ep);
  if (dp % ep != 0) {
    out.warnings.push_back("ep=" + std::to_string(ep) + " does not divide dp=" + std::to_string(dp) +
                           "; expert groups placed as ep consecutive data-parallel ranks");
    ep = std::min(ep, dp);
  }
  const std::int64_t ranks = static_cast<std::int64_t>(tp) * cp * dp * pp;
  out.tp = analyse(ranks, 1, tp, tp, domain);
  out.cp = analyse(ranks, tp, cp, cp, domain);
  out.dp = analyse(ranks, static_cast<std::int64_t>(tp) * cp, dp, dp, domain);
  out.ep = analyse(ranks, static_cast<std::int64_t>(tp) * cp, dp, ep, domain);
  out.dp_cp = analyse(ranks, tp, dp * cp, dp * cp, domain);
  out.tp_cp = analyse(ranks, 1, tp * cp, tp * cp, domain);
  out.tp_dp_cp = analyse(ranks, 1, tp * cp * dp, tp * cp * dp, domain);
  out.pp_link = analyse(ranks, static_cast<std::int64_t>(tp) * cp * dp, pp, std::min(pp, 2), domain);
  if (pp > 2) {   // any adjacent pair crossing makes the hop cross
    const std::int64_t stride = static_cast<std::int64_t>(tp) * cp * dp;
    for (std::int64_t r = 0; r + stride < ranks; ++r)
      if (r / domain != (r + stride) / domain) { out.pp_link = {2, 2, 1}; break; }
  }
  if (out.tp.crosses_domains())
    out.warnings.push_back("tp=" + std::to_string(tp) + " spans " + std::to_string(out.tp.domains) +
                           " NVLink domains of " + std::to_string(domain) +
                           " GPUs: tensor-parallel collectives run over the NIC");
  return out;
}

}  // namespace mfusim::hardware
