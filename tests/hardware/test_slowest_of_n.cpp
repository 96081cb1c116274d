// The pace of a synchronous group (hardware::SlowestOfN, run 40): the calibration's table against the
// run's measured intervals, its interpolation, the file, the group a scenario's rank waits for, and the
// compute it slows (docs/cost-model.md §2f).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "config/loader.h"
#include "hardware/calibration.h"
#include "hardware/cost_model.h"
#include "layer/pass_cost.h"
#include "models/rank_shape.h"
#include "report/json.h"
#include "report/text.h"
#include "step/simulate.h"
#include "tests/hardware/test_helpers.h"
#include "tests/shipped_scenario.h"

using namespace mfusim;
using namespace mfusim::hardware;
using namespace mfusim::hardware::testing;

namespace {
const std::string kRoot = std::string(MFUSIM_TEST_DIR) + "/..";
std::string tmp(const std::string& name) { return std::string("/tmp/mfusim_test_slowest_") + name; }
const Calibration& shipped() {
  static const Calibration cal = read_calibration(kRoot + "/hardware/calibration/h200.toml");
  return cal;
}
}  // namespace

TEST_CASE("slowest_of_n: the shipped table is the exact slowest of N of run 40's measured layers") {
  // results/intervals_layer70b_tp8.csv: 23,904 Llama-3-70B TP8 layer forwards back to back on the H200.
  std::ifstream in(kRoot + "/validation/runs/run40-interval-jitter/results/intervals_layer70b_tp8.csv");
  REQUIRE(in.good());
  std::string line;
  std::getline(in, line);
  std::vector<double> d;
  while (std::getline(in, line)) d.push_back(std::stod(line.substr(line.find(',') + 1)));
  REQUIRE(d.size() == 23904);
  double mean = 0;
  for (double x : d) mean += x;
  mean /= static_cast<double>(d.size());
  std::sort(d.begin(), d.end());
  const auto& t = shipped().slowest_of_n;
  REQUIRE(shipped().has_slowest_of_n);
  CHECK(t.units == 23904);
  REQUIRE(t.group.size() == 8);
  const double n = static_cast<double>(d.size());
  for (std::size_t j = 0; j < t.group.size(); ++j) {
    // E[max of N] of the empirical distribution: sum_i x_(i) ((i/n)^N - ((i-1)/n)^N).
    double e = 0;
    for (std::size_t i = 1; i <= d.size(); ++i)
      e += d[i - 1] * (std::pow(static_cast<double>(i) / n, t.group[j]) - std::pow(static_cast<double>(i - 1) / n, t.group[j]));
    CAPTURE(t.group[j]);
    CHECK(std::abs(e / mean - t.ratio[j]) < 2e-5);
  }
}

TEST_CASE("slowest_of_n: 1 alone or without a table, the table's points, log-linear between, flat beyond") {
  const Calibration& c = shipped();
  CHECK(slowest_of_n(nullptr, 64) == 1.0);
  CHECK(slowest_of_n(&c, 1) == 1.0);
  CHECK(slowest_of_n(&c, 0) == 1.0);
  Calibration none = c;
  none.has_slowest_of_n = false;
  CHECK(slowest_of_n(&none, 64) == 1.0);
  for (std::size_t j = 0; j < c.slowest_of_n.group.size(); ++j)
    CHECK(slowest_of_n(&c, static_cast<int>(c.slowest_of_n.group[j])) == doctest::Approx(c.slowest_of_n.ratio[j]));
  // 3 ranks: halfway in log between 2 and 4 is 2.83; 3 sits at log(3/2)/log(2) = 0.585 of the way.
  const double r2 = slowest_of_n(&c, 2), r4 = slowest_of_n(&c, 4);
  CHECK(slowest_of_n(&c, 3) == doctest::Approx(r2 + std::log(1.5) / std::log(2.0) * (r4 - r2)));
  CHECK(slowest_of_n(&c, 1024) == doctest::Approx(c.slowest_of_n.ratio.back()));
  CHECK(slowest_of_n(&c, 8) > slowest_of_n(&c, 4));
}

TEST_CASE("slowest_of_n: calibrate fits the probe's rows; a falling or mixed table is refused") {
  auto row = [](int n, double r, const char* w = "layer", int units = 1000) {
    return "[[slowest_of_n]]\nworkload = \"" + std::string(w) + "\"\ngroup = " + std::to_string(n) + "\nratio = " + g12(r) +
           "\nunits = " + std::to_string(units) + "\n";
  };
  write(tmp("ok.toml"), probe_with_gemm(row(2, 1.01) + row(8, 1.02)));
  const Calibration fit = fit_probe(tmp("ok.toml"));
  REQUIRE(fit.has_slowest_of_n);
  CHECK(fit.slowest_of_n.group == std::vector<double>{2, 8});
  write_calibration(fit, tmp("ok_cal.toml"));
  const Calibration back = read_calibration(tmp("ok_cal.toml"));
  CHECK(back.slowest_of_n.ratio == fit.slowest_of_n.ratio);
  CHECK(back.slowest_of_n.units == 1000);
  write(tmp("fall.toml"), probe_with_gemm(row(2, 1.02) + row(8, 1.01)));
  CHECK(error_of_fit(tmp("fall.toml")).find("must not fall") != std::string::npos);
  write(tmp("mixed.toml"), probe_with_gemm(row(2, 1.01) + row(8, 1.02, "gemm")));
  CHECK(error_of_fit(tmp("mixed.toml")).find("one workload") != std::string::npos);
  write(tmp("below.toml"), probe_with_gemm(row(2, 0.99)));
  CHECK(error_of_fit(tmp("below.toml")).find("ratio in [1, 2]") != std::string::npos);
  // The calibration file's own checks, with the key's position.
  std::string text = slurp(tmp("ok_cal.toml"));
  text.replace(text.find("ratio = [1.01, 1.02]"), 20, "ratio = [1.02, 1.01]");
  write(tmp("bad_cal.toml"), text);
  const std::string e = error_of(tmp("bad_cal.toml"));
  CHECK(e.find("'ratio' must not fall") != std::string::npos);
  CHECK(e.find("bad_cal.toml:") != std::string::npos);
  std::string frac = slurp(tmp("ok_cal.toml"));
  frac.replace(frac.find("group = [2, 8]"), 14, "group = [2.5, 8]");
  write(tmp("frac_cal.toml"), frac);
  CHECK(error_of(tmp("frac_cal.toml")).find("whole numbers of ranks") != std::string::npos);
  std::string many = slurp(tmp("ok_cal.toml"));
  many.replace(many.find("units = 1000"), 12, "units = 3e9");
  write(tmp("many_cal.toml"), many);
  CHECK(error_of(tmp("many_cal.toml")).find("'units' must be a whole number of at most 1e9") != std::string::npos);
  // A falling ratio in the probe is reported at its own row.
  const std::string text_fall = slurp(tmp("fall.toml"));
  const std::string before = text_fall.substr(0, text_fall.find("group = 8"));
  const auto row_line = std::count(before.begin(), before.end(), '\n') - 1;   // the [[slowest_of_n]] header above it
  CHECK(error_of_fit(tmp("fall.toml")).find("fall.toml:" + std::to_string(row_line) + ":1: error") != std::string::npos);
}

TEST_CASE("sync_group_ranks: tensor, context and pipeline peers; the ZeRO-3 shard or the EP group; not ZeRO-1's dp") {
  auto s = mfusim::testing::shipped_scenario("128xh100_70b.toml");
  const auto& P = s.parallel;
  CHECK(models::sync_group_ranks(s) == P.tp * P.cp * P.pp);
  auto z3 = mfusim::testing::shipped_scenario("256xh100_llama3_70b_fsdp.toml");
  CHECK(z3.parallel.zero() == 3);
  CHECK(models::sync_group_ranks(z3) == z3.parallel.tp * z3.parallel.cp * z3.parallel.pp * z3.parallel.shard());
  auto moe = mfusim::testing::shipped_scenario("2048xh800_deepseek_v3.toml");
  CHECK(models::sync_group_ranks(moe) == moe.parallel.tp * moe.parallel.cp * moe.parallel.pp * moe.parallel.ep);
  auto dp = mfusim::testing::shipped_scenario("128xh100_70b.toml", {"parallel.tp=1", "parallel.pp=1", "parallel.cp=1"});
  CHECK(models::sync_group_ranks(dp) == 1);
  // HSDP: the shard group only (the replicas' all-reduce is not waited for by the next unit's compute).
  auto hsdp = mfusim::testing::shipped_scenario("256xh100_llama3_70b_fsdp.toml", {"parallel.shard_degree=8"});
  CHECK(models::sync_group_ranks(hsdp) == hsdp.parallel.tp * hsdp.parallel.cp * hsdp.parallel.pp * 8);
  // ZeRO-3 with experts: the larger of the shard and the EP group; an EP group wider than dp counts dp.
  auto moe3 = moe;
  moe3.parallel.zero_stage = 3;
  moe3.parallel.shard_degree = 8;
  CHECK(models::sync_group_ranks(moe3) == moe.parallel.tp * moe.parallel.cp * moe.parallel.pp * std::max(8, moe.parallel.ep));
  auto wide = moe;
  wide.parallel.ep = 2 * wide.parallel.dp;
  CHECK(models::sync_group_ranks(wide) == wide.parallel.tp * wide.parallel.cp * wide.parallel.pp * wide.parallel.dp);
}

TEST_CASE("slowest_of_n: every kernel of a rank in a group runs at the group's pace; a lone rank at its own") {
  auto s = mfusim::testing::shipped_scenario("128xh100_70b.toml");
  REQUIRE(s.calibration);
  const int n = models::sync_group_ranks(s);
  REQUIRE(n > 1);
  layer::LayerCosts paced(s);
  paced.place();
  auto flat = s;
  flat.calibration->has_slowest_of_n = false;
  flat.calibration->has_board_spread = false;
  layer::LayerCosts alone(flat);
  alone.place();
  const double pace = job_pace(&*s.calibration, n, s.gpus);   // the group's wander and the job's boards (run 46)
  CHECK(pace > 1.0);
  // A layer's forward: its execution scales by the pace; launch gaps do not, so the ratio sits just under it.
  auto fwd = [](layer::LayerCosts& lc) {
    double t = 0;
    for (const auto& sg : lc.layer_cost(0).f.segs) t += static_cast<double>(sg.ns);
    return t;
  };
  const double ratio = fwd(paced) / fwd(alone);
  CHECK(ratio <= pace + 1e-9);
  CHECK(ratio > 1.0 + 0.9 * (pace - 1.0));
}

TEST_CASE("run --json carries the group's size and pace; the text report says it under the breakdown") {
  auto s = mfusim::testing::shipped_scenario("128xh100_70b.toml");
  const auto r = step::simulate(s);
  std::string json = report::to_json(r);
  json.erase(std::remove(json.begin(), json.end(), ' '), json.end());
  const int n = models::sync_group_ranks(s);
  CHECK(json.find("\"sync_group_ranks\":" + std::to_string(n)) != std::string::npos);
  const auto at = json.find("\"sync_pace\":");
  REQUIRE(at != std::string::npos);
  CHECK(std::stod(json.substr(at + 12)) == doctest::Approx(job_pace(&*s.calibration, n, s.gpus)).epsilon(1e-6));
  const std::string text = report::text_report(r);
  CHECK(text.find("the pace of the slowest of the " + std::to_string(n) + " ranks") != std::string::npos);
  // The schedule lab's op costs are fixed: no pace is applied, none is reported.
  auto lab = mfusim::testing::shipped_scenario("128xh100_70b.toml",
                                               {"schedule.costs.f=1.0", "schedule.costs.b=1.0", "schedule.costs.w=1.0"});
  REQUIRE(lab.schedule.costs);
  const auto lr = step::simulate(lab);
  CHECK(lr.sync_pace == 1.0);
  CHECK(report::text_report(lr).find("the pace of the slowest") == std::string::npos);
  std::string lj = report::to_json(lr);
  lj.erase(std::remove(lj.begin(), lj.end(), ' '), lj.end());
  CHECK(lj.find("\"sync_pace\":1") != std::string::npos);
  // The pace the report gives is the one the lowering applied.
  CHECK(r.sync_pace == doctest::Approx(job_pace(&*s.calibration, n, s.gpus)));
}
