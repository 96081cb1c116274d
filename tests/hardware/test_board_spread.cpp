// The spread of boards (hardware::BoardSpread, run 46): the shipped fit against the run's ten boards, the pace of
// a job that waits once per step for its slowest board against a brute-force Monte Carlo of every board and
// every group, the probe's and the file's checks, and what run reports (docs/cost-model.md 2g).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "config/loader.h"
#include "hardware/calibration.h"
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
std::string tmp(const std::string& name) { return std::string("/tmp/mfusim_test_board_") + name; }
const Calibration& shipped() {
  static const Calibration cal = read_calibration(kRoot + "/hardware/calibration/h200.toml");
  return cal;
}
Calibration with_sd(double sd) {
  Calibration c = shipped();
  c.board_spread.sd = sd;
  c.has_board_spread = true;
  return c;
}
}  // namespace

TEST_CASE("board spread: the shipped sd is the sample sd of run 46's ten boards, read from the run's own output") {
  std::vector<double> ms;
  std::vector<std::string> serials;
  for (int call = 1; call <= 10; ++call) {
    const std::string dir = kRoot + "/validation/runs/run46-boards/results/call" + std::to_string(call);
    std::smatch m;
    const std::string summary = slurp(dir + "/summary.txt");
    REQUIRE(std::regex_search(summary, m, std::regex(R"(layer70b_tp8: \d+ units, mean ([0-9.]+) ms)")));
    ms.push_back(std::stod(m[1]));
    const std::string q = slurp(dir + "/nvidia-smi-q.txt");
    REQUIRE(std::regex_search(q, m, std::regex(R"(Serial Number\s+:\s+(\d+))")));
    serials.push_back(m[1]);
  }
  std::sort(serials.begin(), serials.end());
  CHECK(std::unique(serials.begin(), serials.end()) == serials.end());   // ten distinct boards
  double mean = 0;
  for (double x : ms) mean += x / ms.size();
  double ss = 0;
  for (double x : ms) ss += (x - mean) * (x - mean);
  const double sd = std::sqrt(ss / (ms.size() - 1)) / mean;
  REQUIRE(shipped().has_board_spread);
  CHECK(shipped().board_spread.boards == 10);
  CHECK(shipped().board_spread.sd == doctest::Approx(sd).epsilon(1e-6));
  CHECK(sd > 0.010);
  CHECK(sd < 0.0115);
  // The sustained calibration carries the same rows.
  const Calibration sus = read_calibration(kRoot + "/hardware/calibration/h200-sustained.toml");
  CHECK(sus.board_spread.sd == doctest::Approx(sd).epsilon(1e-6));
}

TEST_CASE("job_pace: without a board spread or for one board, the group's wander alone, as before") {
  const Calibration& c = shipped();
  Calibration none = c;
  none.has_board_spread = false;
  for (int n : {1, 2, 8, 64, 1024})
    for (int job : {1, 8, 128, 16384}) CHECK(job_pace(&none, n, job) == slowest_of_n(&c, n));
  CHECK(job_pace(&c, 1, 1) == 1.0);
  CHECK(job_pace(nullptr, 8, 1024) == 1.0);
}

TEST_CASE("job_pace: a lone rank per group is the expected slowest of the job's normal boards") {
  // No wander in a group of one: the step waits for the slowest of N boards, 1 + sd E[max of N standard
  // normals] (E = 1.42360 at 8, 2.59460 at 128, 3.97135 at 16384, integrating 1 - Phi(x)^N), up to the 16
  // stratified draws of the slowest board.
  const Calibration c = with_sd(0.0107);
  Calibration no_wander = c;
  no_wander.has_slowest_of_n = false;
  auto near = [](double got, double want) { return std::abs(got - want) < 1e-4; };
  CHECK(near(job_pace(&c, 1, 8), 1 + 0.0107 * 1.42360));
  CHECK(near(job_pace(&c, 1, 128), 1 + 0.0107 * 2.59460));
  CHECK(near(job_pace(&no_wander, 64, 16384), 1 + 0.0107 * 3.97135));
  // More boards never speed the step; a larger spread slows it more.
  double last = 1;
  for (int job : {2, 8, 64, 512, 4096, 32768}) {
    const double p = job_pace(&c, 8, job);
    CHECK(p >= last);
    last = p;
  }
  const Calibration wide = with_sd(0.02);
  CHECK(job_pace(&wide, 8, 1024) > job_pace(&c, 8, 1024) + 0.005);
}

TEST_CASE("job_pace: boards and wander together, against a brute-force Monte Carlo of every group") {
  // validation/runs/run46-boards/results/combined_mc.txt (numpy, seed 46, 2,000 trials, standard error <= 0.0001):
  // N boards drawn at the shipped sd, G = N / n groups, each micro-batch waiting for its group's slowest member
  // (offset plus the wander, a normal matching the shipped [slowest_of_n] ratio at n), the step for the slowest
  // group. job_pace waits for the group holding the slowest board, so it may sit a little below (at most 0.09
  // points at these pairs: a group whose top board is a little faster but whose other boards are slower), never
  // above. The product of the two parts overstates the Monte Carlo by 1.0-2.4 points; the boards alone understate
  // it by 0.1-1.3.
  struct Row { int n, job; double mc, product, boards_only; };
  const Row rows[] = {{8, 8, 1.0246, 1.0348, 1.0152},      {8, 64, 1.0315, 1.0448, 1.0250},
                      {8, 1024, 1.0382, 1.0547, 1.0347},   {32, 1024, 1.0424, 1.0638, 1.0347},
                      {64, 2048, 1.0458, 1.0697, 1.0367},  {64, 16384, 1.0485, 1.0756, 1.0424},
                      {128, 1024, 1.0478, 1.0714, 1.0347}, {4, 16, 1.0239, 1.0327, 1.0188},
                      {4, 2048, 1.0382, 1.0509, 1.0367},   {2, 128, 1.0289, 1.0350, 1.0277},
                      {16, 512, 1.0388, 1.0574, 1.0325}};
  const Calibration& c = shipped();
  auto within = [](double pace, double mc) { return pace <= mc + 0.0002 && pace >= mc - 0.0012; };
  int product_in = 0, boards_in = 0;
  for (const Row& r : rows) {
    CAPTURE(r.n);
    CAPTURE(r.job);
    CHECK(within(job_pace(&c, r.n, r.job), r.mc));
    product_in += within(r.product, r.mc);
    boards_in += within(r.boards_only, r.mc);
  }
  // The tolerance tells the mechanism from the two simpler readings.
  CHECK(product_in == 0);
  CHECK(boards_in <= 1);
}

TEST_CASE("board spread: calibrate fits the probe's [[board]] rows; too few, twice or mixed boards are refused") {
  auto row = [](const std::string& serial, double ms, const char* w = "layer") {
    return "[[board]]\nworkload = \"" + std::string(w) + "\"\nserial = \"" + serial + "\"\nms = " + g12(ms) + "\nrun = 46\n";
  };
  write(tmp("ok.toml"), probe_with_gemm(row("a", 1.0) + row("b", 1.02) + row("c", 0.98)));
  const Calibration fit = fit_probe(tmp("ok.toml"));
  REQUIRE(fit.has_board_spread);
  CHECK(fit.board_spread.sd == doctest::Approx(0.02));
  CHECK(fit.board_spread.boards == 3);
  write_calibration(fit, tmp("ok_cal.toml"));
  const Calibration back = read_calibration(tmp("ok_cal.toml"));
  CHECK(back.board_spread.sd == doctest::Approx(0.02));
  CHECK(back.board_spread.boards == 3);
  write(tmp("two.toml"), probe_with_gemm(row("a", 1.0) + row("b", 1.02)));
  CHECK(error_of_fit(tmp("two.toml")).find("at least 3 boards") != std::string::npos);
  write(tmp("twice.toml"), probe_with_gemm(row("a", 1.0) + row("b", 1.02) + row("a", 0.98)));
  const std::string twice = error_of_fit(tmp("twice.toml"));
  CHECK(twice.find("board 'a' given twice") != std::string::npos);
  CHECK(twice.find("twice.toml:") != std::string::npos);
  write(tmp("mixed.toml"), probe_with_gemm(row("a", 1.0) + row("b", 1.02) + row("c", 0.98, "gemm")));
  CHECK(error_of_fit(tmp("mixed.toml")).find("one workload") != std::string::npos);
  write(tmp("zero.toml"), probe_with_gemm(row("a", 1.0) + row("b", 0) + row("c", 0.98)));
  CHECK(error_of_fit(tmp("zero.toml")).find("'ms' in (0, 1e6)") != std::string::npos);
  // A spread the calibration file could not hold is refused at the probe's rows, not written.
  write(tmp("same.toml"), probe_with_gemm(row("a", 1.0) + row("b", 1.0) + row("c", 1.0)));
  CHECK(error_of_fit(tmp("same.toml")).find("a board spread must be in (0, 0.2]") != std::string::npos);
  write(tmp("wide.toml"), probe_with_gemm(row("a", 1.0) + row("b", 2.0) + row("c", 0.5)));
  const std::string wide = error_of_fit(tmp("wide.toml"));
  CHECK(wide.find("a board spread must be in (0, 0.2]") != std::string::npos);
  CHECK(wide.find("wide.toml:") != std::string::npos);
  // The calibration file's own checks, at the key's position.
  std::string text = slurp(tmp("ok_cal.toml"));
  text.replace(text.find("boards = 3"), 10, "boards = 2");
  write(tmp("bad_cal.toml"), text);
  const std::string e = error_of(tmp("bad_cal.toml"));
  CHECK(e.find("'boards' must be a whole number in [3, 1e9]") != std::string::npos);
  CHECK(e.find("bad_cal.toml:") != std::string::npos);
  std::string neg = slurp(tmp("ok_cal.toml"));
  neg.replace(neg.find("sd = 0.02"), 9, "sd = -0.02");
  write(tmp("neg_cal.toml"), neg);
  CHECK(error_of(tmp("neg_cal.toml")).find("'sd' must be in (0, 0.2]") != std::string::npos);
}

TEST_CASE("run: a job of many boards runs at their slowest's pace; the report says how many, the JSON too") {
  auto s = mfusim::testing::shipped_scenario("128xh100_70b.toml");
  REQUIRE(s.calibration);
  REQUIRE(s.calibration->has_board_spread);
  const int n = models::sync_group_ranks(s);
  const auto r = step::simulate(s);
  CHECK(r.job_boards == s.gpus);
  CHECK(r.sync_pace == doctest::Approx(job_pace(&*s.calibration, n, s.gpus)));
  CHECK(r.sync_pace > slowest_of_n(&*s.calibration, n) + 0.005);
  CHECK(report::text_report(r).find("and of the " + std::to_string(s.gpus) + " boards it waits for every step") !=
        std::string::npos);
  std::string json = report::to_json(r);
  json.erase(std::remove(json.begin(), json.end(), ' '), json.end());
  CHECK(json.find("\"job_boards\":" + std::to_string(s.gpus)) != std::string::npos);
  // The same job without the spread: the wander alone, no boards in the report, and a shorter step.
  auto flat = s;
  flat.calibration->has_board_spread = false;
  const auto f = step::simulate(flat);
  CHECK(f.job_boards == 0);
  CHECK(f.sync_pace == doctest::Approx(slowest_of_n(&*s.calibration, n)));
  CHECK(report::text_report(f).find("boards it waits for") == std::string::npos);
  CHECK(f.step_time_s < r.step_time_s);
}

TEST_CASE("cluster.board_spread: the scenario's spread replaces the calibration's; 0 is identical boards") {
  auto s = mfusim::testing::shipped_scenario("128xh100_70b.toml");
  const int n = models::sync_group_ranks(s);
  const double wander = slowest_of_n(&*s.calibration, n);
  auto same = mfusim::testing::shipped_scenario("128xh100_70b.toml", {"cluster.board_spread=0"});
  REQUIRE(same.board_spread);
  const auto r0 = step::simulate(same);
  CHECK(r0.sync_pace == doctest::Approx(wander));
  CHECK(r0.job_boards == 0);
  const auto shipped_spread = step::simulate(s);
  auto wide = mfusim::testing::shipped_scenario("128xh100_70b.toml", {"cluster.board_spread=0.02"});
  const auto rw = step::simulate(wide);
  CHECK(rw.sync_pace == doctest::Approx(job_pace(&*s.calibration, n, s.gpus, 0.02)));
  CHECK(rw.sync_pace > shipped_spread.sync_pace + 0.01);
  CHECK(rw.job_boards == s.gpus);
  CHECK(r0.step_time_s < shipped_spread.step_time_s);
  CHECK(shipped_spread.step_time_s < rw.step_time_s);
  // Without a calibration (the datasheet roofline, no wander table) the boards alone set the pace.
  auto bare = mfusim::testing::shipped_scenario("128xh100_70b.toml", {"calibration=none", "cluster.board_spread=0.0107"});
  REQUIRE_FALSE(bare.calibration);
  const auto rb = step::simulate(bare);
  CHECK(rb.sync_pace == doctest::Approx(job_pace(nullptr, n, s.gpus, 0.0107)));
  CHECK(std::abs(rb.sync_pace - (1 + 0.0107 * 2.59460)) < 1e-4);   // E[max of 128 normals]
  CHECK(rb.job_boards == s.gpus);
  CHECK(board_sd(nullptr, std::nullopt) == 0.0);
  CHECK(board_sd(&*s.calibration, std::nullopt) == s.calibration->board_spread.sd);
  CHECK(board_sd(&*s.calibration, 0.0) == 0.0);
}

TEST_CASE("run: pure data parallelism waits for no rank every micro-batch, only for the job's slowest board") {
  auto dp = mfusim::testing::shipped_scenario("128xh100_70b.toml", {"parallel.tp=1", "parallel.pp=1", "parallel.cp=1"});
  REQUIRE(models::sync_group_ranks(dp) == 1);
  const auto r = step::simulate(dp);
  CHECK(r.sync_pace == doctest::Approx(job_pace(&*dp.calibration, 1, dp.gpus)));
  CHECK(r.job_boards == dp.gpus);
  const std::string text = report::text_report(r);
  CHECK(text.find("the pace of the slowest of the " + std::to_string(dp.gpus) + " boards it waits for every step, x") !=
        std::string::npos);
  CHECK(text.find("ranks it waits for every micro-batch") == std::string::npos);
  CHECK(text.find("each board holds its own, run 46)") != std::string::npos);
  CHECK(text.find("wanders") == std::string::npos);
}
