// study/sweep: the user's --set overrides stay in every point, a --vary key
// must exist, and the cartesian product is bounded before anything runs.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "config/loader.h"
#include "study/plan.h"
#include "study/sweep.h"

namespace fs = std::filesystem;
using namespace mfusim;

namespace {
const std::string kRoot = fs::path(MFUSIM_TEST_DIR).parent_path().string();
const std::string kScenario = kRoot + "/scenarios/8xh100_llama3_8b.toml";
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
}  // namespace

TEST_CASE("point_overrides: a point that replaces a table keeps the user's refinements of it") {
  const std::vector<std::string> user = {"hardware.hbm_gib=20", "parallel.pp=2", "hardware = h200"};
  const auto o = study::point_overrides({{"hardware", "b200"}, {"parallel.pp", "4"}}, user);
  // user, then the point, then the user's refinements of a key the point sets whole; a bare
  // hardware name also resets the price to its profile's (price 0 = the profile's list price)
  const std::vector<std::string> want = {"hardware.hbm_gib=20", "parallel.pp=2", "hardware = h200",
                                         "hardware=b200",       "cost.price_per_gpu_hour=0",
                                         "parallel.pp=4",       "hardware.hbm_gib=20"};
  CHECK(o == want);
  // Nothing to refine: the overrides as before (user, then point).
  CHECK(study::point_overrides({{"training.micro_batch", "2"}}, {"parallel.pp=2"}) ==
        std::vector<std::string>{"parallel.pp=2", "training.micro_batch=2"});
}

TEST_CASE("sweep --vary hardware honours --set hardware.* (every point)") {
  config::LoadOptions lo;
  lo.overrides = {"hardware.hbm_gib=20"};
  const auto pts = study::sweep(kScenario, {study::parse_vary("hardware=h100-sxm,b200")}, lo);
  REQUIRE(pts.size() == 2);
  for (const auto& p : pts) {
    CAPTURE(study::point_label(p));
    REQUIRE(p.ok);
    CHECK(p.result.scenario.hardware.hbm_bytes == doctest::Approx(20 * kGiB));
    CHECK_FALSE(p.result.memory.fits);   // 54.7 GiB of state does not fit in 20
  }
}

TEST_CASE("check_vary_keys: a typo in a --vary key is an error naming it; a bad value is not") {
  try {
    study::check_vary_keys(kScenario, {study::parse_vary("parallel.ppp=1,2")}, {});
    FAIL("expected a ConfigError");
  } catch (const config::ConfigError& e) {
    REQUIRE(e.diagnostics().size() == 1);
    CHECK(e.diagnostics()[0].file == "--vary parallel.ppp=...");
    CHECK(e.diagnostics()[0].message.find("unknown key 'parallel.ppp'") == 0);
  }
  // pp=3 does not divide the GPUs: that point's infeasibility, not a key error.
  CHECK_NOTHROW(study::check_vary_keys(kScenario, {study::parse_vary("parallel.pp=3,2")}, {}));
}

TEST_CASE("sweep: the cartesian product is counted before running and capped") {
  study::Vary a{"parallel.pp", std::vector<std::string>(400, "1")};
  study::Vary b{"training.micro_batch", std::vector<std::string>(400, "1")};
  CHECK(study::sweep_size({a, b}) == 160000);
  CHECK(study::sweep_size({a}) == 400);
  std::vector<study::Vary> many(20, study::Vary{"parallel.pp", std::vector<std::string>(1000, "1")});
  CHECK(study::sweep_size(many) == SIZE_MAX);   // saturates, no wrap
  CHECK_THROWS_WITH_AS(study::sweep(kScenario, {a, b}, {}),
                       doctest::Contains("the sweep has 160000 points (400 parallel.pp x 400 training.micro_batch), "
                                         "above the limit of 100000"),
                       config::ConfigError);
}

TEST_CASE("plan: every failed point is counted with its reason") {
  // Llama-3-8B on 16 H100 of 1 GFLOP/s (the lower end of the input range):
  // every layout's step runs past the 1e6 s limit and fails to simulate.
  const std::string text = "name = \"plan failures\"\nmodel = \"llama3-8b\"\nhardware = \"h100-sxm\"\n[cluster]\ngpus = 16\n"
                           "[training]\nseq_len = 4096\nglobal_batch = 64\nmicro_batch = 1\n";
  config::LoadOptions lo;
  lo.overrides = {"hardware.peak_tflops_bf16=0.001"};
  const auto base = config::load_scenario_string(text, kRoot + "/scenarios/plan_failures.toml", lo).base;
  study::PlanOptions po;
  po.keep = 0;   // simulate every surviving layout
  const auto r = study::plan(base, 16, po);
  REQUIRE(r.failed > 0);
  std::size_t counted = 0;
  for (const auto& [why, n] : r.failures) {
    CAPTURE(why);
    CHECK(why.find("1e6 s") != std::string::npos);
    counted += n;
  }
  CHECK(counted == r.failed);
  CHECK(r.failed + r.fitting <= r.simulated);
}
