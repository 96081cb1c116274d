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
// Layout.dp is the whole data-parallel size; EP is carved out of it as in
// Megatron-LM (ep divides dp): an EP group is ep consecutive DP ranks (stride
// tp*cp). Each group is the worst one of its kind on the topology: the most
// domains spanned, and per_domain the fewest of its ranks in any one domain.
struct Placement {
  Group tp, cp, ep, dp, pp_link;   // pp_link: the two ranks of a stage-to-stage hop
  // The data-parallel group with context parallelism folded in (dp x cp ranks, stride tp): the
  // ranks that hold the same weights, over which Megatron reduces gradients and shards the
  // distributed optimizer (its data-parallel-with-context-parallel group).
  Group dp_cp;
  // A stage's tensor- and context-parallel ranks, and its tensor-, data- and context-parallel ranks
  // (contiguous, stride 1): Megatron-Core's fp8 amax reduction groups (tp_only_amax_red, and its default).
  Group tp_cp, tp_dp_cp;
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

// Hierarchical all-reduce of a group that spans domains: reduce-scatter over
// NVLink inside each domain, all-reduce of each 1/per_domain shard across the
// domains on the shard owner's own NIC (rails; ring or tree, the faster),
// all-gather over NVLink. collective_time(auto_) picks it when it is fastest.
CollectiveTime hierarchical_all_reduce(double bytes, const Group&, const HardwareSpec&,
                                       const Calibration* = nullptr);

// Bus-bandwidth efficiency per link type (achieved nccl-tests bus bandwidth over
// the datasheet per-GPU bandwidth). Defaults (docs/cost-model.md): NVLink 0.80,
// NIC 0.90. With a calibration that has collectives and the hardware spec to
// divide by, the calibration's measured bus bandwidth over the datasheet.
double nvlink_efficiency(const Calibration* = nullptr, const HardwareSpec* = nullptr);
double nic_efficiency(const Calibration* = nullptr, const HardwareSpec* = nullptr);

// One link type as the alpha-beta model sees it: achieved bus bandwidth B
// (bytes/s) and per-step latency alpha (s).
struct Link { double bandwidth = 0, latency = 0; };
Link nvlink_link(const HardwareSpec&, const Calibration* = nullptr);
// The NVLink line for one operation: the calibration's own fit of that operation
// ([collectives.<op>], CollectiveFit::op) when present, else nvlink_link above.
// broadcast has no fit of its own (the probe does not measure it).
Link nvlink_link(const HardwareSpec&, const Calibration*, Collective);
Link nic_link(const HardwareSpec&, const Calibration* = nullptr);

}  // namespace mfusim::hardware
