// The GEMM clock against the kernel mix (hardware::GemmClock, run 17): fit, file, interpolation,
// the cost model's scaling and the duty a layer settles at (docs/cost-model.md §2d).
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "config/loader.h"
#include "hardware/calibration.h"
#include "hardware/cost_model.h"
#include "models/layer_kernels.h"
#include "models/rank_shape.h"
#include "tests/hardware/test_helpers.h"

using namespace mfusim;
using namespace mfusim::hardware;
using namespace mfusim::hardware::testing;

namespace {
std::string tmp(const std::string& name) { return std::string("/tmp/mfusim_test_clock_") + name; }
std::string probe_with_duty(const std::string& samples) { return probe_with_gemm(samples); }
std::string duty(double d, double us) {
  return "[[gemm_duty]]\nduty = " + g12(d) + "\ngemm_us = " + g12(us) + "\n";
}
}  // namespace

TEST_CASE("gemm clock: fitted relative to GEMMs only, never falling with the duty (pool adjacent violators)") {
  // 0.34 runs slower than 0.5 (noise in a measured curve): both pooled to their mean.
  write(tmp("p1.toml"), probe_with_duty(duty(1.0, 800) + duty(0.5, 720) + duty(0.34, 760) + duty(0.2, 680) +
                                        duty(0.8, 768)));
  std::string rep;
  const Calibration c = fit_probe(tmp("p1.toml"), &rep);
  REQUIRE(c.has_gemm_clock);
  CHECK(c.gemm_clock.samples == 5);
  REQUIRE(c.gemm_clock.duty.size() == 5);
  CHECK(c.gemm_clock.duty.front() == doctest::Approx(0.2));
  CHECK(c.gemm_clock.time_ratio.front() == doctest::Approx(0.85));
  CHECK(c.gemm_clock.time_ratio[1] == doctest::Approx(0.925));   // (760 + 720) / 2 / 800
  CHECK(c.gemm_clock.time_ratio[2] == doctest::Approx(0.925));
  CHECK(c.gemm_clock.time_ratio[3] == doctest::Approx(0.96));
  CHECK(c.gemm_clock.time_ratio.back() == doctest::Approx(1.0));
  for (std::size_t i = 1; i < c.gemm_clock.time_ratio.size(); ++i)
    CHECK(c.gemm_clock.time_ratio[i] >= c.gemm_clock.time_ratio[i - 1]);
  CHECK(rep.find("gemm clock: 5 duties") != std::string::npos);
  // interpolation: linear between points, flat beyond them; no curve: 1
  CHECK(gemm_clock_ratio(&c, 0.9) == doctest::Approx(0.98));
  CHECK(gemm_clock_ratio(&c, 0.05) == doctest::Approx(0.85));
  CHECK(gemm_clock_ratio(&c, 1.0) == doctest::Approx(1.0));
  CHECK(gemm_clock_ratio(nullptr, 0.3) == 1.0);
  // file round trip
  write_calibration(c, tmp("c1.toml"));
  const Calibration r = read_calibration(tmp("c1.toml"));
  REQUIRE(r.has_gemm_clock);
  CHECK(r.gemm_clock.duty == c.gemm_clock.duty);
  CHECK(r.gemm_clock.time_ratio.size() == c.gemm_clock.time_ratio.size());
  CHECK(gemm_clock_ratio(&r, 0.9) == doctest::Approx(0.98));
}

TEST_CASE("gemm clock: bad samples and bad files are errors with their position") {
  write(tmp("p2.toml"), probe_with_duty(duty(1.0, 800)));
  CHECK(error_of_fit(tmp("p2.toml")).find("gemm_duty") != std::string::npos);   // one duty is no curve
  write(tmp("p3.toml"), probe_with_duty(duty(1.5, 800) + duty(0.5, 700)));
  CHECK(error_of_fit(tmp("p3.toml")).find("duty in (0, 1]") != std::string::npos);
  write(tmp("c2.toml"), "gpu = \"x\"\n[gemm_clock]\nduty = [0.5, 1.0]\ntime_ratio = [1.0, 0.9]\n");
  CHECK(error_of(tmp("c2.toml")) == tmp("c2.toml") + ":3:8: error: 'duty' and 'time_ratio' must both be non-decreasing");
  write(tmp("c3.toml"), "gpu = \"x\"\n[gemm_clock]\nduty = [0.5, 1.0]\ntime_ratio = [0.9, 2.0]\n");
  CHECK(error_of(tmp("c3.toml")).find(tmp("c3.toml") + ":4:") == 0);
  write(tmp("c4.toml"), "gpu = \"x\"\n[gemm_clock]\nduty = [0.5]\ntime_ratio = [0.9]\n");
  CHECK(error_of(tmp("c4.toml")).find("at least 2") != std::string::npos);
}

TEST_CASE("gemm clock: the cost model scales every GEMM by the ratio at its duty, and a layer settles its duty") {
  const std::string root = std::string(MFUSIM_TEST_DIR) + "/..";
  const HardwareSpec hw = config::load_hardware(root + "/hardware/h100-sxm.toml");
  const Calibration sus = read_calibration(root + "/hardware/calibration/h200-sustained.toml");
  const Calibration shipped = read_calibration(root + "/hardware/calibration/h200.toml");
  REQUIRE(sus.has_gemm_clock);
  CHECK_FALSE(shipped.has_gemm_clock);   // the shipped fit: no curve, the duty changes nothing
  Kernel k;
  k.kind = KernelKind::gemm;
  k.m = 4096; k.n = 8192; k.k = 8192;
  k.flops = 2.0 * k.m * k.n * k.k;
  k.bytes = 2.0 * (double(k.m) * k.k + double(k.k) * k.n + double(k.m) * k.n);
  k.count = 1;
  CostModel cm(hw, Precision::bf16, &sus);
  const double at1 = cm.time(k) - cm.launch_time(k);
  cm.set_gemm_duty(0.5);
  CHECK(cm.gemm_clock_scale() == doctest::Approx(gemm_clock_ratio(&sus, 0.5)));
  CHECK(cm.gemm_clock_scale() < 0.95);   // run 17: a GEMM at half duty ran >= 8% faster
  CHECK(cm.time(k) - cm.launch_time(k) == doctest::Approx(at1 * cm.gemm_clock_scale()).scale(0));
  CostModel plain(hw, Precision::bf16, &shipped);
  const double p1 = plain.time(k);
  plain.set_gemm_duty(0.5);
  CHECK(plain.time(k) == doctest::Approx(p1).scale(0));
  // A Megatron-style Llama-3-8B layer on an H100: GEMMs most of the time, not all of it.
  const config::Scenario s = config::load_scenario(root + "/scenarios/8xh100_llama3_8b.toml").base;
  const models::RankShape sh = models::rank_shape(s);
  CostModel c8(s.hardware, s.training.precision, &sus, false);
  models::settle_gemm_duty(s.model, sh, c8);
  CHECK(c8.gemm_duty() > 0.5);
  CHECK(c8.gemm_duty() < 0.95);
  CHECK(c8.gemm_duty() == doctest::Approx(models::gemm_duty(s.model, sh, c8)).epsilon(1e-3));   // a fixed point
  MESSAGE("Llama-3-8B on H100: GEMM duty " << c8.gemm_duty() << ", GEMM time x" << c8.gemm_clock_scale());
}
