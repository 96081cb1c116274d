#pragma once
// Kernel time = max(FLOPs / (peak * efficiency(shape)), bytes / HBM bandwidth)
// + launch overhead (dropped under CUDA graphs). Efficiency curves default to
// documented datasheet-relative values and are replaced by a Calibration
// when one is given.
#include "hardware/calibration.h"
#include "hardware/hardware_spec.h"
#include "hardware/kernel.h"

namespace mfusim::hardware {

class CostModel {
 public:
  CostModel(const HardwareSpec&, Precision, const Calibration* = nullptr, bool cuda_graphs = false);
  // Seconds for all `count` kernels, launch overhead included.
  double time(const Kernel&) const;
  // Seconds of the above that are launch overhead (for the breakdown).
  double launch_time(const Kernel&) const;
  double gemm_efficiency(std::int64_t m, std::int64_t n, std::int64_t k) const;   // fraction of peak
  double memory_bandwidth() const;      // achieved bytes/s for memory-bound kernels
  double launch_overhead() const;       // seconds per kernel (0 under CUDA graphs)
  double peak_flops() const;
  const HardwareSpec& hardware() const { return hw_; }
 private:
  HardwareSpec hw_;
  Precision precision_;
  const Calibration* cal_;
  bool cuda_graphs_;
};

}  // namespace mfusim::hardware
