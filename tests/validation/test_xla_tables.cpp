// OpenXLA's published H100 / B200 GEMM and collective measurements (validation/xla, SOURCES.md)
// against the cost model: the same comparison as the validation_xla program
// (validation/xla/xla_tables.h). Ratios are model time / measured time.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "validation/xla/xla_tables.h"

using namespace mfusim;
namespace vx = mfusim::validation::xla;

namespace {

const std::vector<vx::GemmRow>& gemms() {
  static const auto rows = vx::read_matmul(vx::source_path("validation/xla/matmul.csv"));
  return rows;
}
const std::vector<vx::CollectiveRow>& collectives() {
  static const auto rows = vx::read_collectives(vx::source_path("validation/xla/collectives.csv"));
  return rows;
}

std::string line(const char* what, const vx::RatioSummary& s) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "%s: n %d, median %.3f, geomean %.3f, min %.3f, max %.3f, sum-time %.3f", what, s.n,
                s.median, s.geomean, s.min, s.max, s.time_ratio);
  return buf;
}

}  // namespace

TEST_CASE("xla tables: the rows as copied (375 GEMM shapes per GPU, dtype and revision; 22 sizes per collective)") {
  std::map<std::string, int> n;
  for (const auto& r : gemms()) ++n[r.gpu + " " + r.revision + " " + r.dtype];
  CHECK(n.size() == 6);
  for (const auto& [key, count] : n) {
    CAPTURE(key);
    CHECK(count == 375);   // b in {1, 2, 4} x m, n, k in {256 .. 4096}
  }
  std::map<std::string, int> c;
  for (const auto& r : collectives()) ++c[r.gpu + " " + r.op + " " + std::to_string(r.group_size)];
  CHECK(c.size() == 24);
  for (const auto& [key, count] : c) {
    CAPTURE(key);
    CHECK(count == 22);    // 1 KiB .. 2 GiB, x2
  }
}

TEST_CASE("xla tables: a malformed table is refused with its file and line") {
  const auto path = std::filesystem::temp_directory_path() / "mfusim_xla_bad_matmul.csv";
  {
    std::ofstream f(path);
    f << "gpu,revision,b,m,n,k,dtype,flops_per_s\nH100,71feedd,1,256,256,256,bf16,12\nH100,71feedd,1,256,x,256,bf16,12\n";
  }
  try {
    (void)vx::read_matmul(path.string());
    FAIL("no error");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find(path.string() + ":3:1: error:") == 0);
  }
  std::filesystem::remove(path);
}

TEST_CASE("xla tables: XLA's three H100 bf16 tables agree within 2% at the large shapes (repeatable measurement)") {
  for (const char* rev : {"b276608", "f325373"}) {
    std::vector<double> cur, old;
    for (const auto& r : gemms())
      if (r.gpu == "H100" && r.dtype == "bf16" && r.revision == rev && vx::in_subset(r, vx::Subset::large))
        for (const auto& c : gemms())
          if (c.gpu == "H100" && c.dtype == "bf16" && c.revision == "71feedd" && c.b == r.b && c.m == r.m &&
              c.n == r.n && c.k == r.k) {
            cur.push_back(c.seconds());
            old.push_back(r.seconds());
          }
    const auto s = vx::summarise(cur, old);
    MESSAGE(line(rev, s));
    CHECK(s.n == 8);
    CHECK(s.min > 0.97);
    CHECK(s.max < 1.03);
  }
}

TEST_CASE("xla tables: H100 fp8 rows are not GEMM times (above the dense peak), B200 fp8 rows are below it") {
  // On Hopper XLA transposes the fp8 rhs in a second kernel and the generator keeps the median of all
  // kernel durations (SOURCES.md); on Blackwell no transpose is inserted.
  const auto h100 = vx::hardware_of("H100");
  const auto b200 = vx::hardware_of("B200");
  int h100_above = 0, b200_above = 0, bf16_above = 0;
  for (const auto& r : gemms()) {
    if (r.revision != "71feedd") continue;
    const auto& hw = r.gpu == "H100" ? h100 : b200;
    const double peak = r.dtype == "fp8_e4m3" ? hw.peak_flops_fp8 : hw.peak_flops_bf16;
    if (r.flops_per_s <= peak) continue;
    if (r.dtype == "bf16") ++bf16_above;
    else if (r.gpu == "H100") ++h100_above;
    else ++b200_above;
  }
  CHECK(h100_above > 0);
  CHECK(b200_above == 0);
  CHECK(bf16_above == 0);
}

TEST_CASE("xla tables: the H100 runs the large bf16 GEMMs no slower than the shipped calibration prices them (the H100's own since run 54, and the H200's carried)") {
  // The H100 rows of validate_modern use the H100's measured calibration (default_calibration_file; run 54, one
  // H100 SXM, the H200's scripts). A slower H100 (another clock or power state) would show as model / measured
  // < 1 here; XLA's H100 is as fast or faster (its kernels are autotuned, the probe's the cuBLASLt first
  // heuristic): ratios 0.95-1.18 at b = 1, m, n, k >= 2048, and 0.98 at 4096^3, measured in both tables. The
  // H200's file carried to the H100 (the pricing before run 54) says the same.
  const auto cal = vx::make_profile("H100", "calibrated");
  REQUIRE(cal.cal);
  CHECK(cal.cal_path == "hardware/calibration/h100.toml");
  for (const auto& p : {cal, vx::make_profile("H100", "calibrated", "hardware/calibration/h200.toml")}) {
    REQUIRE(p.cal);
    const auto s = vx::gemm_summary(p, gemms(), "H100", "bf16", "71feedd", vx::Subset::large);
    MESSAGE(line(("H100 bf16 large, " + p.cal_path).c_str(), s));
    CHECK(s.n == 8);
    CHECK(s.geomean >= 1.0);
    CHECK(s.geomean <= 1.15);
    CHECK(s.min > 0.93);
  }
  for (const auto& r : gemms())
    if (r.gpu == "H100" && r.dtype == "bf16" && r.revision == "71feedd" && r.b == 1 && r.m == 4096 && r.n == 4096 &&
        r.k == 4096)
      CHECK(vx::model_seconds(cal, r) / r.seconds() == doctest::Approx(1.0).epsilon(0.05));
  // The datasheet curve (eff_max 0.84) lands on XLA's large shapes within 5%.
  const auto ds = vx::gemm_summary(vx::make_profile("H100", "datasheet"), gemms(), "H100", "bf16", "71feedd",
                                   vx::Subset::large);
  MESSAGE(line("H100 bf16 large, datasheet", ds));
  CHECK(ds.geomean == doctest::Approx(1.0).epsilon(0.05));
}

TEST_CASE("xla tables: the H100 collectives of one 8-GPU group match the NCCL model within 15%") {
  // h100-sxm: NVLink 450 GB/s x 0.80 default efficiency, 360 GB/s bus bandwidth; XLA measured 402
  // (all-reduce), 352 (all-gather), 329 (reduce-scatter), 340 (all-to-all) at 2 GiB. Groups of 2 and
  // 4 are 10-47% slower than the model (not asserted: see docs/validation-modern.md).
  const auto p = vx::make_profile("H100", "calibrated");
  for (const char* op : {"all-reduce", "all-gather", "reduce-scatter", "all-to-all"}) {
    const auto s = vx::collective_summary(p, collectives(), "H100", op, 8);
    MESSAGE(line(op, s));
    CHECK(s.n == 4);
    CHECK(s.median > 0.85);
    CHECK(s.median < 1.15);
  }
}

TEST_CASE("xla tables: hardware/calibration/b200-xla.toml is calibrate's fit of XLA's B200 table") {
  const auto probe = std::filesystem::temp_directory_path() / "mfusim_xla_b200_probe.toml";
  vx::write_probe(gemms(), "B200", probe.string());
  const auto fit = vx::fit_from_probe(probe.string(), "B200", nullptr);
  std::filesystem::remove(probe);
  const auto shipped = hardware::read_calibration(vx::source_path("hardware/calibration/b200-xla.toml"));
  REQUIRE(shipped.has_gemm);
  REQUIRE(shipped.has_gemm_fp8);
  // Its [attention] is cuDNN frontend's published B200 table (tests/validation/test_cudnn_sdpa.cpp); its [memory]
  // the H200's fits carried by the GB200's published norm kernels (tests/validation/test_cudnn_norms.cpp).
  REQUIRE(shipped.has_memory);
  REQUIRE(fit.has_memory);
  CHECK(shipped.memory.achieved_bandwidth == doctest::Approx(fit.memory.achieved_bandwidth).epsilon(1e-6));
  CHECK(shipped.gemm.peak_flops == doctest::Approx(2250e12));
  CHECK(shipped.gemm_fp8.peak_flops == doctest::Approx(4500e12));
  CHECK(shipped.gemm.eff_max == doctest::Approx(fit.gemm.eff_max).epsilon(1e-6));
  CHECK(shipped.gemm.knee == doctest::Approx(fit.gemm.knee).epsilon(1e-6));
  CHECK(shipped.gemm_fp8.eff_max == doctest::Approx(fit.gemm_fp8.eff_max).epsilon(1e-6));
  CHECK(shipped.gemm_fp8.knee == doctest::Approx(fit.gemm_fp8.knee).epsilon(1e-6));
  CHECK(shipped.gemm_table.size() == fit.gemm_table.size());
  // The curve alone (tables dropped) at the large measured shapes: within 15% of every one.
  auto p = vx::make_profile("B200", "file", "hardware/calibration/b200-xla.toml");
  p.cal->gemm_table.clear();
  p.cal->gemm_fp8_table.clear();
  for (const char* dtype : {"bf16", "fp8_e4m3"}) {
    const auto s = vx::gemm_summary(p, gemms(), "B200", dtype, "71feedd", vx::Subset::large);
    MESSAGE(line(dtype, s));
    CHECK(s.n == 8);
    CHECK(s.min > 0.85);
    CHECK(s.max < 1.15);
  }
  // The datasheet curve is 15-35% too fast for the B200's bf16 GEMMs at these shapes: the reason the
  // B200 rows take the measured file.
  const auto ds = vx::gemm_summary(vx::make_profile("B200", "datasheet"), gemms(), "B200", "bf16", "71feedd",
                                   vx::Subset::large);
  MESSAGE(line("B200 bf16 large, datasheet", ds));
  CHECK(ds.max < 0.90);
}
