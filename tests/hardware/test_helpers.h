#pragma once
#include "hardware/hardware_spec.h"

namespace mfusim::hardware::testing {

// H100 SXM datasheet numbers (NVIDIA H100 Tensor Core GPU datasheet; DGX H100
// user guide for 8x ConnectX-7 400 Gb/s per node), as in hardware/h100-sxm.toml.
inline HardwareSpec h100() {
  HardwareSpec hw;
  hw.name = "H100 SXM";
  hw.peak_flops_bf16 = 989e12;
  hw.peak_flops_fp8 = 1979e12;
  hw.hbm_bytes = 80.0 * (1ull << 30);
  hw.hbm_bandwidth = 3.35e12;
  hw.gpus_per_node = 8;
  hw.nvlink_bandwidth = 450e9;
  hw.nvlink_latency = 1e-6;
  hw.nic_bandwidth = 50e9;
  hw.nic_latency = 5e-6;
  hw.launch_overhead = 4e-6;
  return hw;
}

}  // namespace mfusim::hardware::testing
