#pragma once
// Collective communication times (alpha-beta per algorithm, NCCL-like
// choice) and rank placement on the cluster topology.
//
// Topology: NVLink domains of hardware.gpus_per_node GPUs (8 for HGX, 72 for
// NVL72) with per-GPU NVLink bandwidth; one NIC per GPU on a rail-optimised
// fat tree between domains. Ranks are placed in Megatron's order: TP
// innermost, then CP, EP, DP, PP.
#include <string>
#include <vector>

#include "hardware/calibration.h"
#include "hardware/hardware_spec.h"

namespace mfusim::hardware {

enum class Collective { all_reduce, all_gather, reduce_scatter, all_to_all, send_recv, broadcast };
enum class Algorithm { ring, tree, hierarchical, direct };
enum class AlgoChoice { auto_, ring, tree };

const char* to_string(Collective);
const char* to_string(Algorithm);

// A communication group as placed on the topology.
struct Group {
  int size = 1;              // ranks in the group
  int domains = 1;           // NVLink domains it spans
  int per_domain = 1;        // ranks of the group inside each domain
  bool crosses_domains() const { return domains > 1; }
};

// Parallel layout, for placement.
struct Layout { int tp = 1, cp = 1, ep = 1, dp = 1, pp = 1; };

// Groups of the layout in Megatron order (TP innermost, then CP, EP, DP, PP).
// `warnings` receives e.g. "tp=16 spans 2 NVLink domains of 8 GPUs".
struct Placement {
  Group tp, cp, ep, dp, pp_link;   // pp_link: the two ranks of a stage-to-stage hop
  std::vector<std::string> warnings;
};
Placement place(const Layout&, const HardwareSpec&);

struct CollectiveTime {
  double seconds = 0;
  Algorithm algorithm = Algorithm::ring;
  double nic_bytes = 0;      // bytes each rank puts on its NIC (for link sharing)
  double nvlink_bytes = 0;   // bytes each rank puts on NVLink
};

// `bytes` is the full buffer size S per rank (nccl-tests convention).
CollectiveTime collective_time(Collective, double bytes, const Group&, const HardwareSpec&,
                               AlgoChoice = AlgoChoice::auto_, const Calibration* = nullptr);

// Default bus-bandwidth efficiencies per link type (fraction of datasheet), documented in collectives.cpp.
double nvlink_efficiency(const Calibration* = nullptr);
double nic_efficiency(const Calibration* = nullptr);

}  // namespace mfusim::hardware
