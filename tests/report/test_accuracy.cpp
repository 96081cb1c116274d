// The validated family's error printed beside a step (report/accuracy.h): which scenarios have one in the
// modern set (a dense model on several GPUs of the set's kind, Megatron's ZeRO 0/1, run with no calibration
// or the one the set ran with), and that the line and the JSON carry the table's numbers; an MoE scenario
// carries the published MoE runs' instead (report::moe_runs), which the shipped scenarios are simulated again for.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "config/loader.h"
#include "report/accuracy.h"
#include "report/json.h"
#include "report/text.h"
#include "step/simulate.h"
#include "tests/config/config_test_helpers.h"

using namespace mfusim;

namespace {
std::string scenario(const std::string& hw, const std::string& extra = "", int gpus = 8,
                     const std::string& model = "llama3-8b") {
  return "name = \"t\"\nmodel = \"" + model + "\"\nhardware = \"" + hw + "\"\n" + extra + "[cluster]\ngpus = " +
         std::to_string(gpus) + "\n[training]\nseq_len = 4096\nglobal_batch = 8\nmicro_batch = 1\n[parallel]\ntp = " +
         std::to_string(gpus) + "\n";
}
config::Scenario load(const std::string& text, const std::vector<std::string>& sets = {}) {
  config::LoadOptions o;
  o.overrides = sets;
  return config::load_scenario_string(text, config_test::kRoot + "/scenarios/t.toml", o).base;
}
const report::FamilyAccuracy* entry(const char* profile, const char* gpu, const char* precision) {
  return report::find_accuracy(profile, gpu, precision);
}
}  // namespace

TEST_CASE("accuracy: a scenario's validated family follows its GPU, precision and calibration") {
  // H100 with the shipped calibration (no calibration line): the set's "calibrated" H100 rows.
  const auto h100 = load(scenario("h100-sxm"));
  REQUIRE(h100.calibration_choice == "default");
  CHECK(report::family_accuracy(h100) == entry("calibrated", "H100", "bf16"));
  CHECK(report::family_accuracy(load(scenario("h100-sxm"), {"training.precision=fp8"})) == entry("calibrated", "H100", "fp8"));
  // calibration = "none": the datasheet rows.
  CHECK(report::family_accuracy(load(scenario("h100-sxm", "calibration = \"none\"\n"))) == entry("datasheet", "H100", "bf16"));
  CHECK(report::family_accuracy(load(scenario("b200", "calibration = \"none\"\n"), {"training.precision=fp8"})) ==
        entry("datasheet", "B200", "fp8"));
  // The B200 without a calibration line: its shipped file (OpenXLA's GEMMs, cuDNN's attention), the calibrated rows'.
  CHECK(report::family_accuracy(load(scenario("b200"), {"training.precision=fp8"})) == entry("calibrated", "B200", "fp8"));
  // The B200 with OpenXLA's measured GEMMs, as the set's calibrated profile ran it.
  CHECK(report::family_accuracy(load(scenario("b200", "calibration = \"../hardware/calibration/b200-xla.toml\"\n"),
                                     {"training.precision=fp8"})) == entry("calibrated", "B200", "fp8"));
  // The GB200 and GB300 with their cuDNN attention tables (validation/cudnn_sdpa), as the calibrated profile ran
  // them; the GB200's file on a GB300 is not the GB300 rows' calibration.
  CHECK(report::family_accuracy(load(scenario("gb200-nvl72", "calibration = \"../hardware/calibration/gb200-cudnn.toml\"\n"),
                                     {"training.precision=fp8"})) == entry("calibrated", "GB200", "fp8"));
  CHECK(report::family_accuracy(load(scenario("gb300-nvl72", "calibration = \"../hardware/calibration/gb300-cudnn.toml\"\n"),
                                     {"training.precision=fp8"})) == entry("calibrated", "GB300", "fp8"));
  CHECK(report::family_accuracy(load(scenario("gb300-nvl72", "calibration = \"../hardware/calibration/gb200-cudnn.toml\"\n"),
                                     {"training.precision=fp8"})) == nullptr);
  CHECK(report::family_accuracy(load(scenario("gb200-nvl72"), {"training.precision=fp8"})) == entry("calibrated", "GB200", "fp8"));
  CHECK(report::family_accuracy(load(scenario("gb200-nvl72", "calibration = \"none\"\n"), {"training.precision=fp8"})) ==
        entry("datasheet", "GB200", "fp8"));
  REQUIRE(entry("calibrated", "GB300", "fp8"));
  CHECK(entry("calibrated", "GB300", "fp8")->mean_heldout != doctest::Approx(entry("datasheet", "GB300", "fp8")->mean_heldout));
  // No family: another calibration, another GPU, one GPU, ZeRO-3, an MoE model, a precision the set lacks.
  CHECK(report::family_accuracy(load(scenario("h100-sxm", "calibration = \"../hardware/calibration/h200-sustained.toml\"\n"))) == nullptr);
  CHECK(report::family_accuracy(load(scenario("h200"))) == nullptr);
  CHECK(report::family_accuracy(load(scenario("a100-sxm-80gb"))) == nullptr);
  CHECK(report::family_accuracy(load(scenario("h100-sxm", "", 1))) == nullptr);
  CHECK(report::family_accuracy(load(scenario("h100-sxm"), {"parallel.zero_stage=3"})) == nullptr);
  CHECK(report::family_accuracy(load(scenario("h100-sxm", "", 8, "mixtral-8x7b"))) == nullptr);
  CHECK(report::family_accuracy(load(scenario("b200"))) == nullptr);   // the set's B200 rows are fp8 only
  CHECK(report::family_accuracy(load(scenario("h100-sxm"), {"hardware.hbm_bandwidth_gbs=2000"})) == nullptr);
  CHECK(report::family_accuracy(load(scenario("h100-sxm"), {"model.layers=16"})) == entry("calibrated", "H100", "bf16"));
  // A calibration of the user's, even named h200.toml and identical to the shipped one, is not the rows'.
  const auto copy = std::filesystem::temp_directory_path() / "mfusim_accuracy_test";
  std::filesystem::create_directories(copy);
  std::filesystem::copy_file(config_test::kRoot + "/hardware/calibration/h200.toml", copy / "h200.toml",
                             std::filesystem::copy_options::overwrite_existing);
  const auto user = load(scenario("h100-sxm", "calibration = \"" + (copy / "h200.toml").string() + "\"\n"));
  REQUIRE(user.calibration.has_value());
  CHECK(report::family_accuracy(user) == nullptr);
  // HSDP / offload / sharded steps are validate_fsdp's, a schedule lab's costs are typed in: none.
  CHECK(report::family_accuracy(load(scenario("h100-sxm"), {"features.offload=optimizer"})) == nullptr);
  REQUIRE(entry("calibrated", "H100", "bf16"));
  CHECK(entry("calibrated", "H100", "bf16")->rows_tuning + entry("calibrated", "H100", "bf16")->rows_heldout > 30);
}

TEST_CASE("accuracy: run's text and JSON carry the family's numbers, and say nothing without one") {
  const auto r = step::simulate(load(scenario("h100-sxm")));
  const report::FamilyAccuracy* f = entry("calibrated", "H100", "bf16");
  REQUIRE(f);
  const std::string text = report::text_report(r, {}, false);
  const std::string rows = std::to_string(f->rows_tuning + f->rows_heldout);
  CHECK(text.find("  accuracy  against " + rows + " published H100 bf16 Megatron/NeMo steps (this calibration): simulated steps ") !=
        std::string::npos);
  char held[32];
  std::snprintf(held, sizeof held, "held-out %+.1f%%", 100 * f->mean_heldout);
  CHECK(text.find(held) != std::string::npos);
  std::string json = report::to_json(r);
  json.erase(std::remove_if(json.begin(), json.end(), [](char c) { return c == ' ' || c == '\n'; }), json.end());
  CHECK(json.find("\"validated_accuracy\":{\"family\":\"H100bf16\",\"profile\":\"calibrated\",\"rows\":" + rows) !=
        std::string::npos);
  const auto none = step::simulate(load(scenario("a100-sxm-80gb")));
  CHECK(report::text_report(none, {}, false).find("  accuracy  ") == std::string::npos);
  CHECK(report::to_json(none).find("validated_accuracy") == std::string::npos);
}

TEST_CASE("accuracy: fp8 MoE scenarios carry the published MoE runs' errors, which the shipped scenarios still give") {
  const auto& runs = report::moe_runs();
  REQUIRE(runs.size() == 3);
  double mean = 0;
  std::vector<double> errors;
  for (const report::MoeRun& run : runs) {
    const auto s = config::load_scenario(config_test::kRoot + "/scenarios/" + run.scenario, {}).base;
    INFO(run.scenario);
    CHECK(s.hardware_ref == run.hardware);
    CHECK(report::moe_accuracy_applies(s));
    CHECK(report::family_accuracy(s) == nullptr);
    const auto r = step::simulate(s);
    // The table holds the shipped scenario's simulated throughput: regenerate it when a mechanism moves it.
    CHECK(r.tokens_per_s_per_gpu == doctest::Approx(run.simulated).epsilon(0.001));
    const double error = run.published / r.tokens_per_s_per_gpu - 1;   // from the simulation, not the table
    CHECK(error < 0);   // every one of them: the simulated step is shorter than the published
    errors.push_back(error);
    mean += error / 3;
  }
  const auto s0 = config::load_scenario(config_test::kRoot + "/scenarios/" + runs[0].scenario, {}).base;
  const auto r0 = step::simulate(s0);
  const std::string text = report::text_report(r0, {}, false);
  char want[96];
  std::snprintf(want, sizeof want, "published fp8 MoE runs (each with its GPU's shipped calibration): simulated steps %.0f%% short",
                std::fabs(100 * mean));
  CHECK(text.find(want) != std::string::npos);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    std::snprintf(want, sizeof want, "%+.0f%% ", 100 * errors[i]);
    CHECK(text.find(std::string(want) + runs[i].label) != std::string::npos);
  }
  std::string json = report::to_json(r0);
  json.erase(std::remove_if(json.begin(), json.end(), [](char c) { return c == ' ' || c == '\n'; }), json.end());
  CHECK(json.find("\"validated_accuracy\":{\"family\":\"MoEfp8\",\"profile\":\"calibrated\",\"rows\":3") != std::string::npos);
  CHECK(json.find("\"scenario\":\"scenarios/64xgb200_mixtral_8x7b.toml\"") != std::string::npos);
  // Not the runs' kind: bf16 (no bf16 run), one GPU, the datasheet, a changed profile, a GPU none of the runs
  // used, a dense model.
  const std::string mixtral = "64xgb200_mixtral_8x7b.toml";
  const auto bf16 = config::load_scenario(config_test::kRoot + "/scenarios/" + mixtral,
                                          [] { config::LoadOptions o; o.overrides = {"training.precision=bf16"}; return o; }())
                        .base;
  CHECK_FALSE(report::moe_accuracy_applies(bf16));
  CHECK(report::text_report(step::simulate(bf16), {}, false).find("  accuracy  ") == std::string::npos);
  CHECK(report::moe_accuracy_applies(load(scenario("h100-sxm", "", 8, "mixtral-8x7b"), {"training.precision=fp8"})));
  CHECK_FALSE(report::moe_accuracy_applies(load(scenario("h100-sxm", "", 8, "mixtral-8x7b"))));   // bf16
  CHECK_FALSE(report::moe_accuracy_applies(load(scenario("h100-sxm", "", 1, "mixtral-8x7b"), {"training.precision=fp8"})));
  CHECK_FALSE(report::moe_accuracy_applies(
      load(scenario("h100-sxm", "calibration = \"none\"\n", 8, "mixtral-8x7b"), {"training.precision=fp8"})));
  CHECK_FALSE(report::moe_accuracy_applies(
      load(scenario("h100-sxm", "", 8, "mixtral-8x7b"), {"training.precision=fp8", "hardware.hbm_bandwidth_gbs=2000"})));
  CHECK_FALSE(report::moe_accuracy_applies(load(scenario("h200", "", 8, "mixtral-8x7b"), {"training.precision=fp8"})));
  CHECK_FALSE(report::moe_accuracy_applies(load(scenario("h100-sxm"), {"training.precision=fp8"})));
}
