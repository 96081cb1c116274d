// validation_gemm_sustained CSV [--calibration FILE] [--hardware FILE]
// The cost model's time for each GEMM of a run-15 style CSV (model,gemm,m,n,k,mode,variant,median_us,...)
// against the measured median: the model side of validation/runs/run15-sustained (docs/cost-model.md §2d).
// The GEMM is x[m,k] @ W[k,n] with a bf16 output, as the cost model's linear layers are.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "config/loader.h"
#include "hardware/calibration.h"
#include "hardware/cost_model.h"
#include "hardware/kernel.h"

using namespace mfusim;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CSV [--calibration FILE] [--hardware FILE]\n", argv[0]);
    return 2;
  }
  const std::string src = MFUSIM_SOURCE_DIR;
  std::string cal_path = src + "/hardware/calibration/h200.toml", hw_path = src + "/hardware/h200.toml";
  for (int i = 2; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--calibration") cal_path = argv[i + 1];
    if (std::string(argv[i]) == "--hardware") hw_path = argv[i + 1];
  }
  try {
    const hardware::HardwareSpec hw = config::load_hardware(hw_path);
    const hardware::Calibration cal = hardware::read_calibration(cal_path);
    const hardware::CostModel cm(hw, hardware::Precision::bf16, &cal, false);
    std::ifstream in(argv[1]);
    if (!in) throw std::runtime_error("cannot read " + std::string(argv[1]));
    std::string line;
    std::getline(in, line);
    std::printf("%-26s %-12s %6s %6s %6s %-9s %-7s %10s %10s %7s\n", "model", "gemm", "m", "n", "k", "mode", "variant",
                "measured", "model", "ratio");
    while (std::getline(in, line)) {
      std::stringstream ss(line);
      std::vector<std::string> f;
      for (std::string c; std::getline(ss, c, ',');) f.push_back(c);
      if (f.size() < 8) continue;
      hardware::Kernel k;
      k.kind = hardware::KernelKind::gemm;
      k.m = std::stoll(f[2]);
      k.n = std::stoll(f[3]);
      k.k = std::stoll(f[4]);
      k.flops = 2.0 * k.m * k.n * k.k;
      k.bytes = 2.0 * (static_cast<double>(k.m) * k.k + static_cast<double>(k.k) * k.n + static_cast<double>(k.m) * k.n);
      k.count = 1;
      const double model_us = (cm.time(k) - cm.launch_time(k)) * 1e6;
      const double meas = std::stod(f[7]);
      std::printf("%-26s %-12s %6s %6s %6s %-9s %-7s %10.1f %10.1f %7.3f\n", f[0].c_str(), f[1].c_str(), f[2].c_str(),
                  f[3].c_str(), f[4].c_str(), f[5].c_str(), f[6].c_str(), meas, model_us, meas / model_us);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  return 0;
}
