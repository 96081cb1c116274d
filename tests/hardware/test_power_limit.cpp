// The SM clock under a board power limit (hardware::PowerFit, run 33): the fit of the probe's
// [[gemm_power]] samples, the file, the clock it gives, and the compute kernels' time under
// hardware.power_limit_w (docs/cost-model.md §2e).
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "config/loader.h"
#include "hardware/calibration.h"
#include "hardware/cost_model.h"
#include "hardware/kernel.h"
#include "report/text.h"
#include "step/simulate.h"
#include "tests/hardware/test_helpers.h"
#include "tests/shipped_scenario.h"

using namespace mfusim;
using namespace mfusim::hardware;
using namespace mfusim::hardware::testing;

namespace {
std::string tmp(const std::string& name) { return std::string("/tmp/mfusim_test_power_") + name; }
// A probe with a GEMM fit and [[gemm_power]] rows drawn from a known model: base 120 W, and below the limit
// 6 W per SM at 1980 MHz (the uncapped line's slope), while the capped regime follows its own law, 5 W per
// SM x (f / 1980)^2.2, as run 33's did (9.44 against 8.59): the fit must take the capped law, not the
// uncapped slope. Limit 700 W (so 132 SMs settle at 1980 (580 / 660)^(1 / 2.2) MHz).
constexpr double kBase = 120, kSm = 5, kSlope = 6, kMax = 1980, kExp = 2.2, kLimit = 700;
double model_clock(double limit, int k) {
  const double head = limit - kBase;
  return head >= k * kSm ? kMax : kMax * std::pow(head / (k * kSm), 1 / kExp);
}
std::string power_row(int k, double mhz, double w, const char* dtype = "bf16") {
  return "[[gemm_power]]\ndtype = \"" + std::string(dtype) + "\"\nsms = " + std::to_string(k) + "\nclock_mhz = " +
         g12(mhz) + "\npower_w = " + g12(w) + "\nlimit_w = " + g12(kLimit) + "\n";
}
std::string probe(const std::string& rows) { return probe_with_gemm(rows); }
std::string model_rows() {
  std::string r;
  for (int k : {12, 36, 60, 84}) r += power_row(k, kMax, kBase + k * kSlope);   // below the limit
  for (int k : {116, 124, 132}) r += power_row(k, model_clock(kLimit, k), kLimit);   // at it
  return r + power_row(132, 1400, kLimit, "fp8");   // another dtype: reported, not fitted
}
step::StepResult shipped_run(const std::string& file, const std::vector<std::string>& sets) {
  return step::simulate(mfusim::testing::shipped_scenario(file, sets));
}
}  // namespace

TEST_CASE("power limit: the fit recovers the model its samples were drawn from, and the file keeps it") {
  write(tmp("p1.toml"), probe(model_rows()));
  std::string rep;
  const Calibration c = fit_probe(tmp("p1.toml"), &rep);
  REQUIRE(c.has_power);
  const PowerFit& w = c.power;
  CHECK(w.base_w == doctest::Approx(kBase));
  CHECK(w.sm_w == doctest::Approx(kSm));
  CHECK(w.exponent == doctest::Approx(kExp));
  CHECK(w.max_clock_mhz == doctest::Approx(kMax));
  CHECK(w.min_clock_mhz == doctest::Approx(model_clock(kLimit, 132)));
  CHECK(w.limit_w == doctest::Approx(kLimit));
  CHECK(w.sms == 132);
  CHECK(w.samples == 7);   // bf16 rows only
  CHECK(w.rms_rel_error < 1e-9);
  CHECK(rep.find("gemm power: 7 samples under 700 W") != std::string::npos);
  write_calibration(c, tmp("c1.toml"));
  const Calibration r = read_calibration(tmp("c1.toml"));
  REQUIRE(r.has_power);
  CHECK(r.power.exponent == doctest::Approx(kExp));
  CHECK(r.power.base_w == doctest::Approx(kBase));
  CHECK(r.power.sms == 132);
}

TEST_CASE("power limit: the clock the model gives, and the compute time it scales") {
  PowerFit w;
  w.limit_w = kLimit, w.base_w = kBase, w.sm_w = kSm, w.max_clock_mhz = kMax, w.min_clock_mhz = 1500, w.exponent = kExp;
  w.sms = 132, w.samples = 7;
  CHECK(power_limited_clock_mhz(w, 700, 132) == doctest::Approx(model_clock(700, 132)));
  CHECK(power_limited_clock_mhz(w, 2000, 132) == kMax);              // enough power: the maximum clock
  CHECK(power_limited_clock_mhz(w, 700, 40) == kMax);
  CHECK(power_limited_clock_mhz(w, kBase, 132) == 0);                // no clock meets the limit
  double prev = 0;
  for (double l = 150; l <= 1000; l += 50) {                          // never falls as the limit rises
    const double f = power_limited_clock_mhz(w, l, 132);
    CHECK(f >= prev);
    prev = f;
  }
  Calibration cal;
  cal.has_power = true;
  cal.power = w;
  HardwareSpec hw = h100();
  hw.sms = 132;
  CHECK(power_time_scale(&cal, hw) == 1.0);                          // no limit given
  hw.power_limit_w = 700;
  CHECK(power_time_scale(&cal, hw) == 1.0);                          // the calibration's own limit
  hw.power_limit_w = 500;
  const double s500 = model_clock(700, 132) / model_clock(500, 132);
  CHECK(power_time_scale(&cal, hw) == doctest::Approx(s500));
  CHECK(s500 > 1.1);
  hw.sms = 78;                                                       // another SM count: not this fit's GPU
  CHECK(power_time_scale(&cal, hw) == 1.0);
  CHECK(power_extrapolation_warning(&cal, hw).find("not modelled") != std::string::npos);
  hw.sms = 0;                                                        // a profile without sms: not taken to be it
  CHECK(power_time_scale(&cal, hw) == 1.0);
  hw.sms = 132;
  CHECK(power_time_scale(nullptr, hw) == 1.0);

  // The cost model: GEMMs and attention take the scale, a memory-bound kernel keeps its time.
  HardwareSpec h700 = hw;
  h700.power_limit_w = 700;
  const CostModel at700(h700, Precision::bf16, &cal), at500(hw, Precision::bf16, &cal);
  CHECK(at500.power_time_scale() == doctest::Approx(s500));
  Kernel g;
  g.kind = KernelKind::gemm, g.m = 8192, g.n = 8192, g.k = 8192, g.count = 1;
  CHECK(at500.time(g) - at500.launch_time(g) == doctest::Approx((at700.time(g) - at700.launch_time(g)) * s500).epsilon(1e-9));
  Kernel a;
  a.kind = KernelKind::attention_fwd, a.flash = true, a.causal = true, a.batch = 1, a.heads = 32, a.seq_q = 8192,
  a.seq_kv = 8192, a.head_dim = 128, a.count = 1;
  CHECK(at500.time(a) / at700.time(a) == doctest::Approx(s500).epsilon(0.01));
  Kernel mem;
  mem.kind = KernelKind::memory, mem.bytes = 1e9, mem.count = 1;
  CHECK(at500.time(mem) == at700.time(mem));
}

TEST_CASE("power limit: bad samples, files and limits are errors with their position") {
  write(tmp("p2.toml"), probe(power_row(132, 1500, 700) + power_row(124, 1550, 700)));   // no uncapped line
  CHECK(error_of_fit(tmp("p2.toml")).find("gemm_power: needs bf16 samples below the power limit") != std::string::npos);
  write(tmp("p3.toml"), probe(power_row(12, kMax, 180) + power_row(36, kMax, 300) + power_row(132, 0, 700)));
  CHECK(error_of_fit(tmp("p3.toml")).find("gemm_power sample needs") != std::string::npos);
  // An SM count no GPU has (the fit once took it and wrote a file its reader refused).
  write(tmp("p4.toml"), probe(model_rows() + power_row(1000000000, 1500, 700)));
  CHECK(error_of_fit(tmp("p4.toml")).find(":1") != std::string::npos);
  CHECK(error_of_fit(tmp("p4.toml")).find("gemm_power sample needs a whole sms in [1, 100000]") != std::string::npos);
  // A sample below the limit but far under the maximum clock: not the power limit's doing; its position.
  write(tmp("p5.toml"), probe(model_rows() + power_row(24, 1800, kBase + 24 * kSlope)));
  const std::string e5 = error_of_fit(tmp("p5.toml"));
  CHECK(e5.find("gemm_power sample below the power limit at 1800 MHz") != std::string::npos);
  CHECK(e5.find(tmp("p5.toml") + ":1:") == std::string::npos);   // the row's line, not the file's first
  // A sample below the limit one clock step under the maximum (an even count's median: 1972.5 MHz) is still
  // below the limit: the fit keeps its law.
  write(tmp("p6.toml"), probe(model_rows() + power_row(24, 1972.5, kBase + 24 * kSlope)));
  const Calibration c6 = fit_probe(tmp("p6.toml"));
  CHECK(c6.power.exponent == doctest::Approx(kExp));
  CHECK(c6.power.sm_w == doctest::Approx(kSm));
  // Samples at the limit that follow no clock law (exponent outside [0.5, 6]).
  write(tmp("p7.toml"), probe(power_row(12, kMax, 180) + power_row(36, kMax, 330) + power_row(132, 1970, 700) +
                              power_row(124, 1975, 700)));
  CHECK(error_of_fit(tmp("p7.toml")).find("do not describe a clock law") != std::string::npos);
  write(tmp("c2.toml"), "gpu = \"x\"\n[power]\nlimit_w = 100\nbase_w = 120\nsm_w = 5\nmax_clock_mhz = 1980\n"
                        "min_clock_mhz = 1500\nexponent = 2\nsms = 132\nrms_rel_error = 0\nsamples = 7\n");
  CHECK(error_of(tmp("c2.toml")) == tmp("c2.toml") + ":3:11: error: 'limit_w' must be above 'base_w'");
  write(tmp("c3.toml"), "gpu = \"x\"\n[power]\nlimit_w = 700\nbase_w = 120\nsm_w = 5\nmax_clock_mhz = 1980\n"
                        "min_clock_mhz = 1500\nexponent = 0\nsms = 132\nrms_rel_error = 0\nsamples = 7\n");
  CHECK(error_of(tmp("c3.toml")).find(":8:12: error:") != std::string::npos);
  // A file whose law puts its own limit far from the clocks it says it measured (every GEMM would run faster
  // than measured).
  write(tmp("c4.toml"), "gpu = \"x\"\n[power]\nlimit_w = 2000\nbase_w = 120\nsm_w = 5\nmax_clock_mhz = 1980\n"
                        "min_clock_mhz = 1500\nexponent = 2\nsms = 132\nrms_rel_error = 0\nsamples = 7\n");
  CHECK(error_of(tmp("c4.toml")).find(":3:11: error: [power] gives 1980 MHz at its own limit_w") != std::string::npos);
}

TEST_CASE("power limit: the shipped H200 fit against run 33's measured clocks, and a step under 500 W") {
  const std::string root = std::string(MFUSIM_TEST_DIR) + "/..";
  const Calibration cal = read_calibration(root + "/hardware/calibration/h200.toml");
  REQUIRE(cal.has_power);
  CHECK(cal.power.limit_w == 700);
  CHECK(cal.power.sms == 132);
  // The torch sweep the fit was made from (run 33, results/by_phase.txt), and the probe's own sweep
  // (results/probe_power.log), which the fit never saw: the model's clock under the 700 W limit.
  struct Point { int sms; double torch_mhz, probe_mhz; };
  for (const Point p : {Point{132, 1470, 1485}, Point{116, 1575, 1590}, Point{100, 1680, 1695}, Point{84, 1800, 1815},
                        Point{68, 1935, 1950}}) {
    CAPTURE(p.sms);
    // The fit's clock rms over these samples is 1.1%, its worst 2.0% (68 SMs); 2.5% leaves room for
    // rounding, not for a law that bends.
    const double f = power_limited_clock_mhz(cal.power, 700, p.sms);
    CHECK(std::fabs(f / p.torch_mhz - 1) < 0.025);
    CHECK(std::fabs(f / p.probe_mhz - 1) < 0.025);
  }
  CHECK(power_limited_clock_mhz(cal.power, 700, 52) == 1980);   // measured: 1980 MHz at 606 W
  CHECK(power_limited_clock_mhz(cal.power, 700, 36) == 1980);   // 472 W

  // A Llama 3 8B step on 8 H100 at 500 W: slower, by less than the compute factor (the memory-bound
  // kernels keep their time), and the report names the clock.
  const auto at700 = shipped_run("8xh100_llama3_8b.toml", {});
  const auto at500 = shipped_run("8xh100_llama3_8b.toml", {"hardware.power_limit_w=500"});
  HardwareSpec hw = at700.scenario.hardware;
  hw.power_limit_w = 500;
  const double scale = power_time_scale(&cal, hw);
  CHECK(scale > 1.1);
  CHECK(at500.step_time_s > at700.step_time_s * 1.1);
  CHECK(at500.step_time_s < at700.step_time_s * scale);
  const std::string text = report::text_report(at500);
  CHECK(text.find("  power     limit 500 W: GEMM clock ") != std::string::npos);
  CHECK(text.find("the power curve is extrapolated") != std::string::npos);
  CHECK(report::text_report(at700).find("  power     ") == std::string::npos);
}
