// Run 54 (validation/runs/run54-h100-calibration): the Hopper calibration's measurements made on an H100 SXM
// with the H200's scripts, and run 4's single-GPU training steps measured on the same H100, predicted before
// the call from the H200's file carried to the H100 (the cost model's transfer: GEMM and attention as
// fractions of the same peak, memory-bound kernels by the ratio of datasheet HBM bandwidths).
#include <doctest/doctest.h>

#include <string>

#include "config/loader.h"
#include "hardware/calibration.h"
#include "hardware/kernel.h"
#include "validation/h200_compare.h"

using namespace mfusim;
using namespace mfusim::validation;

namespace {
const std::string kRoot = MFUSIM_SOURCE_DIR;
const std::string kSteps = kRoot + "/validation/runs/run54-h100-calibration/results/h100_steps.csv";
}  // namespace

TEST_CASE("run 54: the H100's steps are priced better by the H100's own measurements than by the H200's carried") {
  // The H200's file carried to the H100 priced every step slow (median 8.4%, the prediction made before the
  // call said 3-8%, slow): the H100 runs several eager kernel families much faster than the datasheet ratio says
  // (cast_up, add_mixed, masked_fill, softmax_fwd: 1.07-1.19x the H200's time, not 1.43).
  const Summary carried = compare(kSteps, kRoot + "/hardware/calibration/h200-fa2.toml", kRoot, "h100-sxm");
  const Summary own = compare(kSteps, kRoot + "/hardware/calibration/h100-fa2.toml", kRoot, "h100-sxm");
  REQUIRE(carried.rows.size() == 33);
  REQUIRE(own.rows.size() == carried.rows.size());
  int slow = 0;
  for (const ComparedRow& r : carried.rows) slow += r.err_step > 0;
  CHECK(slow == static_cast<int>(carried.rows.size()));
  CHECK(carried.median_abs_step > 0.08);
  // Achieved with the H100's file: median 5.8%, max 17.6% (s0.5b at 2048 tokens, host-bound: the eager host
  // costs were measured on the H200 machine's host); the steps of 150 ms and more within 12.1% (s3b at 4096, recompute).
  CHECK(own.median_abs_step <= 0.06);
  CHECK(own.median_abs_step < carried.median_abs_step - 0.02);
  CHECK(own.max_abs_step <= 0.18);
  for (const ComparedRow& r : own.rows)
    if (r.m.step_ms >= 150) {
      CAPTURE(r.m.model);
      CAPTURE(r.m.seq);
      CHECK(std::abs(r.err_step) <= 0.121);
    }
}

TEST_CASE("run 54: the H100's GEMMs and attention fit as the H200's; its memory-bound kernels at its own HBM rate") {
  const auto h100 = hardware::read_calibration(kRoot + "/hardware/calibration/h100.toml");
  const auto h200 = hardware::read_calibration(kRoot + "/hardware/calibration/h200.toml");
  REQUIRE(h100.has_gemm);
  REQUIRE(h100.has_gemm_fp8);
  REQUIRE(h100.has_attention);
  REQUIRE(h100.has_memory);
  CHECK(h100.gpu_name.find("H100") != std::string::npos);
  // The same die at the same clocks: the large-GEMM efficiency within 3%, cuDNN attention within 3%.
  CHECK(h100.gemm.eff_max == doctest::Approx(h200.gemm.eff_max).epsilon(0.03));
  CHECK(h100.gemm_fp8.eff_max == doctest::Approx(h200.gemm_fp8.eff_max).epsilon(0.03));
  CHECK(h100.attention.flash_fwd_eff == doctest::Approx(h200.attention.flash_fwd_eff).epsilon(0.03));
  CHECK(h100.attention.flash_bwd_eff == doctest::Approx(h200.attention.flash_bwd_eff).epsilon(0.03));
  // Copy: 2.86 TB/s fitted (0.85 of the 3.35 TB/s datasheet; the H200's 3.98 of 4.8, 0.83): a little above the
  // datasheet ratio 0.698.
  const double ratio = h100.memory.achieved_bandwidth / h200.memory.achieved_bandwidth;
  CHECK(ratio > 0.71);
  CHECK(ratio < 0.76);
  // The families that are not bandwidth-bound lose far less than the datasheet ratio (measured 0.88-0.94 of the
  // H200's rate; the carried file would give 0.698).
  for (const hardware::MemFamily f : {hardware::MemFamily::cast_up, hardware::MemFamily::add_mixed, hardware::MemFamily::masked_fill}) {
    const auto i = static_cast<std::size_t>(f);
    CAPTURE(i);
    REQUIRE(h200.memory.family_bandwidth[i] > 0);
    CHECK(h100.memory.family_bandwidth[i] / h200.memory.family_bandwidth[i] > 0.85);
  }
  // The capped state's wander, measured on this H100 (run 40's layer forward): slowest of 2 and of 256.
  REQUIRE(h100.has_slowest_of_n);
  CHECK(hardware::slowest_of_n(&h100, 2) == doctest::Approx(1.0076).epsilon(0.001));
  CHECK(hardware::slowest_of_n(&h100, 256) < 1.05);
}
