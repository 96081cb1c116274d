// cuDNN frontend's published normalisation benchmark on the H200, GB200 and GB300 (validation/cudnn_norms,
// SOURCES.md): the same kernels' achieved bandwidth on each GPU carries the shipped H200 calibration's
// memory-bound fits to the Blackwell calibrations (validation::xla::carried_memory, docs/cost-model.md §1).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "hardware/calibration.h"
#include "hardware/cost_model.h"
#include "validation/xla/xla_tables.h"

using namespace mfusim;
namespace vx = mfusim::validation::xla;

TEST_CASE("cudnn norms: the three tables read as published (one software stack, the same calls on each GPU)") {
  for (const char* t : {"h200", "gb200", "gb300"}) {
    CAPTURE(t);
    const auto rows = vx::read_norms(t);
    CHECK(rows.size() == 43);   // 45 published, two of PyTorch's without a result (out of memory)
    int large = 0;
    for (const auto& r : rows) {
      CHECK(r.fwd_gbps > 0);
      CHECK(r.bwd_gbps > 0);
      large += r.tensor_bytes >= vx::kNormRatioMinBytes;
    }
    CHECK(large == 9);   // Llama 3 8B, Llama 3 70B, Llama 3.1 405B (134 MB) x cuDNN, PyTorch, torch.compile
  }
}

TEST_CASE("cudnn norms: the same kernels gain 1.50x (GB200) and 1.53x (GB300) over the H200, below the datasheets' 1.67x") {
  int n200 = 0, n300 = 0;
  const double gb200 = vx::norm_bandwidth_ratio("GB200", &n200), gb300 = vx::norm_bandwidth_ratio("GB300", &n300);
  CHECK(n200 == 18);
  CHECK(n300 == 18);
  CHECK(gb200 == doctest::Approx(1.5044).epsilon(1e-3));
  CHECK(gb300 == doctest::Approx(1.5298).epsilon(1e-3));
  const double datasheet = vx::hardware_of("GB200").hbm_bandwidth / vx::hardware_of("H200").hbm_bandwidth;
  CHECK(datasheet == doctest::Approx(8.0 / 4.8));
  CHECK(gb200 < datasheet);
  CHECK(gb300 < datasheet);
  // The B200 takes the GB200's table (the same die and HBM3e); the H200 and others none.
  CHECK(vx::norm_bandwidth_ratio("B200") == doctest::Approx(gb200));
  CHECK(vx::norm_bandwidth_ratio("H200") == 0);
  CHECK(vx::norm_bandwidth_ratio("H100") == 0);
}

TEST_CASE("cudnn norms: each shipped Blackwell calibration's [memory] is the H200's fits times its ratio") {
  const auto h200 = hardware::read_calibration(vx::source_path("hardware/calibration/h200.toml"));
  REQUIRE(h200.has_memory);
  const struct { const char* gpu; const char* file; } files[] = {
      {"B200", "hardware/calibration/b200-xla.toml"},
      {"GB200", "hardware/calibration/gb200-cudnn.toml"},
      {"GB300", "hardware/calibration/gb300-cudnn.toml"}};
  for (const auto& f : files) {
    CAPTURE(f.gpu);
    const auto cal = hardware::read_calibration(vx::source_path(f.file));
    REQUIRE(cal.has_memory);
    // The ratio as a fraction of each part's datasheet bandwidth: 1 but for the B200 (7.7 TB/s against the
    // GB200's 8 TB/s, whose table it takes).
    const double datasheet = vx::hardware_of(f.gpu).hbm_bandwidth /
                             vx::hardware_of(vx::norm_table_gpu(vx::norm_table_of(f.gpu))).hbm_bandwidth;
    CHECK(datasheet == doctest::Approx(std::string(f.gpu) == "B200" ? 7.7 / 8.0 : 1.0));
    const double r = vx::norm_bandwidth_ratio(f.gpu) * datasheet;
    CHECK(cal.memory.achieved_bandwidth == doctest::Approx(h200.memory.achieved_bandwidth * r).epsilon(1e-6));
    CHECK(cal.memory.rms_rel_error == 0);   // no fit made for it
    CHECK(cal.memory.fixed_overhead_s == 0);
    // Host launch costs are the GPU profile's, not carried.
    CHECK(cal.memory.launch_overhead_s == 0);
    CHECK(cal.memory.graph_launch_overhead_s == 0);
    for (int i = 1; i < hardware::kMemFamilies; ++i) {
      CAPTURE(hardware::kMemFamilyNames[i]);
      const double scale = i == static_cast<int>(hardware::MemFamily::topk) ? 1.0 : r;   // top-k: by SMs, in the cost model
      CHECK(cal.memory.family_bandwidth[i] == doctest::Approx(h200.memory.family_bandwidth[i] * scale).epsilon(1e-6));
    }
    // The cost model uses it as it stands on the GPU's own profile (the calibration's reference is that GPU);
    // the launch cost stays the profile's; the top-k keeps the H200's rate (the Blackwell profiles give no
    // `sms` to scale it by).
    const hardware::HardwareSpec hw = vx::hardware_of(f.gpu);
    const hardware::CostModel cm(hw, hardware::Precision::bf16, &cal, false);
    CHECK(cm.memory_bandwidth() == doctest::Approx(cal.memory.achieved_bandwidth).epsilon(1e-9));
    CHECK(cm.launch_overhead() == doctest::Approx(hw.launch_overhead));
    CHECK(hw.sms == 0);
    hardware::Kernel topk;
    topk.kind = hardware::KernelKind::memory;
    topk.family = hardware::MemFamily::topk;
    topk.bytes = 1e9;
    CHECK(cm.time(topk) - cm.launch_time(topk) ==
          doctest::Approx(1e9 / h200.memory.family_bandwidth[static_cast<int>(hardware::MemFamily::topk)]).epsilon(1e-6));
    hardware::Kernel copy = topk;
    copy.family = hardware::MemFamily::generic;
    CHECK(cm.time(copy) - cm.launch_time(copy) == doctest::Approx(1e9 / cal.memory.achieved_bandwidth).epsilon(1e-6));
  }
}

TEST_CASE("cudnn norms: the datasheet default sat above every large published GB200 norm kernel; the carried rate within them") {
  double lo = 1e18, hi = 0;
  for (const auto& r : vx::read_norms("gb200")) {
    if (r.tensor_bytes < vx::kNormRatioMinBytes) continue;
    lo = std::min({lo, r.fwd_gbps, r.bwd_gbps});
    hi = std::max({hi, r.fwd_gbps, r.bwd_gbps});
  }
  const hardware::CostModel datasheet(vx::hardware_of("GB200"), hardware::Precision::bf16, nullptr, false);
  MESSAGE("GB200 norm kernels >= 100 MB: " << lo << " .. " << hi << " GB/s; datasheet default " << datasheet.memory_bandwidth() * 1e-9);
  CHECK(datasheet.memory_bandwidth() * 1e-9 > hi);   // 0.89 x 8,000 = 7,120 GB/s
  const auto cal = hardware::read_calibration(vx::source_path("hardware/calibration/gb200-cudnn.toml"));
  CHECK(cal.memory.achieved_bandwidth * 1e-9 > lo);
  CHECK(cal.memory.achieved_bandwidth * 1e-9 < hi);
}

TEST_CASE("cudnn norms: a call pairs only with the same norm, backend and shape; a table without shared calls is an error") {
  // Every large H200 call has its GB200 twin at the same N and C (the 18 pairs above); a threshold on the H200's
  // size is a threshold on both.
  const auto h200 = vx::read_norms("h200"), gb200 = vx::read_norms("gb200");
  int twins = 0;
  for (const auto& a : h200) {
    if (a.tensor_bytes < vx::kNormRatioMinBytes) continue;
    for (const auto& b : gb200) twins += a.name == b.name && a.backend == b.backend && a.n == b.n && a.c == b.c;
  }
  CHECK(twins == 9);
  CHECK_THROWS_AS(vx::read_norms("b200"), std::exception);   // no B200 table is published: an error, not an empty one
  CHECK(vx::norm_bandwidth_ratio("MI300X") == 0);
}

TEST_CASE("cudnn norms: run 53, the probe's H200 runs the published benchmark's PyTorch kernels as NVIDIA's H200 does") {
  // validation/runs/run53-norm-anchor: eager rows from the first call, compiled rows from 53b (static shapes).
  const auto published = vx::read_norms("h200");
  auto find = [&](const std::string& name, const std::string& backend) -> const vx::NormRow* {
    for (const auto& r : published)
      if (r.name == name && r.backend == backend) return &r;
    return nullptr;
  };
  int compared = 0, within = 0;
  std::string outlier;
  for (const char* file : {"validation/runs/run53-norm-anchor/results/norms.csv",
                           "validation/runs/run53-norm-anchor/results/norms_static.csv"}) {
    const bool static_call = std::string(file).find("static") != std::string::npos;
    for (const auto& f : vx::csv_rows(file, 10)) {
      if (!static_call && f[2] == "torch_compile") continue;   // the first call's compiled rows: dynamic shapes
      const vx::NormRow* p = find(f[0], f[2]);
      REQUIRE(p != nullptr);
      CHECK(p->n == std::stod(f[3]));
      CHECK(p->c == std::stod(f[4]));
      for (const bool bwd : {false, true}) {
        const double ratio = std::stod(f[bwd ? 9 : 8]) / (bwd ? p->bwd_gbps : p->fwd_gbps);
        ++compared;
        if (std::fabs(ratio - 1) < 0.05) ++within;
        else outlier += f[0] + " " + f[2] + (bwd ? " bwd " : " fwd ") + std::to_string(ratio) + "; ";
      }
    }
  }
  MESSAGE("outside 5%: " << outlier);
  CHECK(compared == 28);
  CHECK(within == 27);
  CHECK(outlier.rfind("llama3-8b torch_compile bwd", 0) == 0);   // Inductor's backward, 1.73x the published
}
