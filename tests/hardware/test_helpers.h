#pragma once
#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

#include "config/loader.h"
#include "hardware/calibration.h"
#include "hardware/cost_model.h"
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

// A calibration with only the overall collective lines (alpha-beta): NVLink 300 GB/s bus bandwidth,
// 2 us per step; NIC 40 GB/s, 8 us.
inline Calibration overall_collectives() {
  Calibration cal;
  cal.has_collectives = true;
  cal.collectives.nvlink_bus_bandwidth = 300e9;
  cal.collectives.nvlink_latency_s = 2e-6;
  cal.collectives.nic_bus_bandwidth = 40e9;
  cal.collectives.nic_latency_s = 8e-6;
  return cal;
}

// Calibration-file test helpers: write a file, read one back, the error read_calibration throws
// for it ("" when none), a number as the writer prints it (%.12g).
inline void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }
inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}
inline std::string error_of(const std::string& path) {
  try {
    read_calibration(path);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}
// The shipped H200 profile with its shipped calibration (hardware/h200.toml,
// hardware/calibration/h200.toml), bf16, read once: the cost model the measured evidence is checked against.
inline const CostModel& shipped_h200_cost_model() {
  static const HardwareSpec hw = config::load_hardware(std::string(MFUSIM_TEST_DIR) + "/../hardware/h200.toml");
  static const Calibration cal = read_calibration(std::string(MFUSIM_TEST_DIR) + "/../hardware/calibration/h200.toml");
  static const CostModel cm(hw, Precision::bf16, &cal, false);
  return cm;
}
inline std::string g12(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.12g", v);
  return b;
}
// A probe output on an H200 with a GEMM fit's worth of [[gemm]] samples (six shapes at 700 TFLOP/s plus
// 5 us), then `samples` (the tables a test fits beside them).
inline std::string probe_with_gemm(const std::string& samples) {
  std::string p = "format = \"mfusim-probe-1\"\n[provenance]\ngpu = \"NVIDIA H200\"\n";
  for (long long m : {1024, 4096, 16384})
    for (long long n : {1024, 8192})
      p += "[[gemm]]\ndtype = \"bf16\"\nm = " + std::to_string(m) + "\nn = " + std::to_string(n) +
           "\nk = 4096\nseconds = " + g12(2.0 * m * n * 4096 / 700e12 + 5e-6) + "\n";
  return p + samples;
}
// The error fit_probe throws for a probe file ("" when none).
inline std::string error_of_fit(const std::string& path) {
  try {
    fit_probe(path);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace mfusim::hardware::testing
