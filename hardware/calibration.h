#pragma once
// Measured kernel timings fitted by `mfusim calibrate` (hardware/calibration.cpp)
// from a probe output, and read back from hardware/calibration/*.toml.
// The cost model uses each family that is present in place of the datasheet
// roofline; absent families (has_* false) fall back to the defaults.
#include <string>
#include <vector>

namespace mfusim::hardware {

// GEMM efficiency model, fitted by least squares on the probe's samples:
//   time(m, n, k) = overhead + 2mnk / (peak * eff(m, n, k))
//   eff = eff_max * (1 - exp(-(m*n*k)^(1/3) / knee))   (smooth saturation in size)
// plus an optional table of exact shapes measured (looked up first).
struct GemmFit {
  double eff_max = 0;        // fraction of the datasheet peak
  double knee = 0;           // size scale (elements^(1/3)) where efficiency reaches 63% of eff_max
  double overhead_s = 0;     // fixed time per GEMM call
  double rms_rel_error = 0;  // fit quality, as printed by calibrate
};
struct GemmSample { long long m = 0, n = 0, k = 0; double seconds = 0; };

// Attention (per kernel call): time = a_flops * flops + a_bytes * bytes + overhead.
struct AttentionFit {
  double flash_fwd_eff = 0, flash_bwd_eff = 0;      // achieved fraction of peak on the score/context FLOPs
  double materialized_bw_eff = 0;                   // achieved fraction of HBM bandwidth on the s x s traffic
  double overhead_s = 0;
  double rms_rel_error = 0;
};

struct MemoryFit {
  double achieved_bandwidth = 0;   // bytes/s, read + written, for large copies / elementwise
  double launch_overhead_s = 0;    // per kernel, measured
  double rms_rel_error = 0;
};

// Collective bus bandwidth and latency (alpha-beta), per link type.
struct CollectiveFit {
  double nvlink_bus_bandwidth = 0; // bytes/s achieved bus bandwidth (nccl-tests definition)
  double nvlink_latency_s = 0;
  double nic_bus_bandwidth = 0;
  double nic_latency_s = 0;
  double rms_rel_error = 0;
};

struct Calibration {
  std::string source;      // path of the calibration file
  std::string gpu_name;    // provenance from the probe
  bool has_gemm = false, has_attention = false, has_memory = false, has_collectives = false;
  GemmFit gemm;
  std::vector<GemmSample> gemm_table;
  AttentionFit attention;
  MemoryFit memory;
  CollectiveFit collectives;
};

// Reading and writing calibration files (hardware/calibration/*.toml) and
// fitting a probe output into one (`mfusim calibrate`). Bad files throw
// std::runtime_error with "file:line:col: error: ..." text.
Calibration read_calibration(const std::string& path);
void write_calibration(const Calibration&, const std::string& path);
// Fit a probe output (probe/ TOML); `report` receives the fit error per family.
Calibration fit_probe(const std::string& probe_path, std::string* report = nullptr);

}  // namespace mfusim::hardware
