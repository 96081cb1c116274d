// The H800 DeepSeek-V3 scenario's expert load imbalance (moe.imbalance) is what DeepSeek's published training
// profile gives (validation/deepseek_load/): the profiled rank's routed rows over its 8 (layer, micro-batch)
// passes, their coefficient of variation, and the slowest of the 64 EP ranks if each spreads so:
// 1 + CV x E[max of 64 standard normals]. Recomputed here from the committed rows, with its own integration.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "report/text.h"
#include "step/simulate.h"
#include "tests/shipped_scenario.h"

using namespace mfusim;

namespace {
struct Pass { double rows, expand_grid; };
std::vector<Pass> profile_passes() {
  std::ifstream in(std::string(MFUSIM_SOURCE_DIR) + "/validation/deepseek_load/expert_rows.csv");
  std::vector<Pass> out;
  std::string line;
  std::getline(in, line);   // header: ms_from_trace_start,rows,kernel_us,expand_grid
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::string t, r, us, x;
    std::getline(ss, t, ',');
    std::getline(ss, r, ',');
    std::getline(ss, us, ',');
    std::getline(ss, x, ',');
    out.push_back({std::stod(r), std::stod(x)});
  }
  return out;
}

// E[max of n standard normals] = int_0^inf (1 - Phi^n) - int_-inf^0 Phi^n (trapezoids of 1e-4).
double expected_max(int n) {
  auto Phi = [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); };
  double e = 0;
  const double h = 1e-4;
  for (double x = h / 2; x < 10; x += h) e += (1 - std::pow(Phi(x), n)) * h - std::pow(Phi(-x), n) * h;
  return e;
}
}  // namespace

TEST_CASE("the H800 DeepSeek-V3 scenario's imbalance is the slowest of 64 ranks loaded as the profile's rank") {
  const auto passes = profile_passes();
  REQUIRE(passes.size() == 8);
  std::vector<double> rows;
  double mean = 0;
  for (const Pass& p : passes) {
    CHECK(std::fmod(p.rows, 128.0) == 0.0);   // DeepGEMM's per-expert padding: these are the GEMMs' rows
    // The same pass's expansion of the received tokens into the experts' rows, 16 rows per block.
    CHECK(p.rows == 16 * p.expand_grid);
    rows.push_back(p.rows);
    mean += p.rows / 8;
  }
  double ss = 0;
  for (double r : rows) ss += (r - mean) * (r - mean);
  const double cv = std::sqrt(ss / 7) / mean;
  CHECK(cv == doctest::Approx(0.0799).epsilon(0.01));
  // Balanced in expectation: 4,096 tokens x 8 experts x 64 ranks over 256 experts, 4 per rank.
  CHECK(mean == doctest::Approx(32768).epsilon(0.03));
  const double e64 = expected_max(64);
  CHECK(e64 == doctest::Approx(2.3437).epsilon(0.001));
  const double figure = 1 + cv * e64;
  const auto s = testing::shipped_scenario("2048xh800_deepseek_v3.toml");
  CHECK(std::fabs(s.moe.imbalance - figure) <= 0.005);   // the scenario carries it to two decimals
  // The Megatron-Bridge H100 run forced its routing balanced (moe_router_force_load_balancing): 1.
  CHECK(testing::shipped_scenario("1024xh100_deepseek_v3_megatron.toml").moe.imbalance == 1.0);
}

TEST_CASE("run says when the experts run at the slowest EP rank's load") {
  const auto shipped = step::simulate(testing::shipped_scenario("2048xh800_deepseek_v3.toml"));
  const std::string line = "run at the slowest of the 64 EP ranks' load, x1.19 the mean: moe.imbalance";
  CHECK(report::text_report(shipped, {}, false).find(line) != std::string::npos);
  const auto balanced = step::simulate(testing::shipped_scenario("2048xh800_deepseek_v3.toml", {"moe.imbalance=1.0"}));
  CHECK(report::text_report(balanced, {}, false).find("moe.imbalance") == std::string::npos);
  CHECK(balanced.step_time_s < shipped.step_time_s);
}
