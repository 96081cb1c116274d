// Which calibration a scenario runs with (hardware::default_calibration_file): the shipped
// measured file on Hopper GPUs without a calibration line, the datasheet roofline with
// `calibration = "none"` and on other architectures; the report says which, and warns when a
// file measured on one GPU is applied to another.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "config/loader.h"
#include "hardware/calibration.h"
#include "report/json.h"
#include "report/text.h"
#include "step/simulate.h"
#include "tests/config/config_test_helpers.h"

using namespace mfusim;

namespace {
std::string scenario(const std::string& hw, const std::string& extra = "") {
  return extra + "name = \"t\"\nmodel = \"llama3-8b\"\nhardware = \"" + hw +
         "\"\n[cluster]\ngpus = 8\n[training]\nseq_len = 4096\nglobal_batch = 8\nmicro_batch = 1\n"
         "[parallel]\ntp = 8\n";
}
config::Scenario load(const std::string& text) {
  return config::load_scenario_string(text, config_test::kRoot + "/scenarios/t.toml").base;
}
}  // namespace

TEST_CASE("default calibration: the H100 and H800 the H100's measured file, the H200 and H20 the H200's, the B200, GB200 and GB300 their published tables' fits, others the datasheet") {
  // Run 54 measured the H100 with the scripts the H200's file came from; the H800 is the same GH100 and HBM3.
  for (const auto& [hw, file] : {std::pair{"h100-sxm", "hardware/calibration/h100.toml"}, std::pair{"h800-sxm", "hardware/calibration/h100.toml"},
                                 std::pair{"h200", "hardware/calibration/h200.toml"}, std::pair{"h20", "hardware/calibration/h200.toml"}}) {
    CAPTURE(hw);
    const config::Scenario s = load(scenario(hw));
    REQUIRE(s.calibration.has_value());
    CHECK(s.calibration_choice == "default");
    CHECK(s.calibration_path == file);
    CHECK(s.calibration->has_gemm_fp8);
    CHECK(s.calibration->has_attention);
    CHECK(s.calibration->has_attention_fa2);
    CHECK(s.calibration->has_memory);
    // Measured on this part (the H800 counts as the H100), except the H20's (another GH100 configuration).
    CHECK(hardware::calibration_transfer_note(*s.calibration, s.hardware).empty() == (std::string(hw) != "h20"));
  }
  // Blackwell: each part's file fitted from published measured tables (validation/xla, validation/cudnn_sdpa).
  const std::pair<const char*, const char*> blackwell[] = {{"b200", "hardware/calibration/b200-xla.toml"},
                                                           {"gb200-nvl72", "hardware/calibration/gb200-cudnn.toml"},
                                                           {"gb300-nvl72", "hardware/calibration/gb300-cudnn.toml"}};
  for (const auto& [hw, file] : blackwell) {
    CAPTURE(hw);
    const config::Scenario s = load(scenario(hw));
    REQUIRE(s.calibration.has_value());
    CHECK(s.calibration_choice == "default");
    CHECK(s.calibration_path == file);
    CHECK(s.calibration->has_attention);
    CHECK(s.calibration->has_attention_fa2);
    CHECK(s.calibration->has_gemm == (std::string(hw) == "b200"));
    CHECK(hardware::calibration_transfer_note(*s.calibration, s.hardware).empty());   // measured on this GPU
  }
  for (const char* hw : {"a100-sxm-80gb", "b300", "mi300x"}) {
    const config::Scenario s = load(scenario(hw));
    CHECK_FALSE(s.calibration.has_value());
    CHECK(s.calibration_choice.empty());
  }
  const config::Scenario none = load(scenario("h100-sxm", "calibration = \"none\"\n"));
  CHECK_FALSE(none.calibration.has_value());
  CHECK(none.calibration_choice == "none");
  const config::Scenario named = load(scenario("h100-sxm", "calibration = \"hardware/calibration/h200-fa2.toml\"\n"));
  REQUIRE(named.calibration.has_value());
  CHECK(named.calibration_choice == "file");
}

TEST_CASE("the report names the calibration used, and warns when it was measured on another GPU") {
  const auto r = step::simulate(load(scenario("h100-sxm")));
  const std::string text = report::text_report(r);
  CHECK(text.find("  calib     hardware/calibration/h100.toml (the shipped measured calibration") != std::string::npos);
  CHECK(text.find("measured on NVIDIA H100 80GB HBM3") != std::string::npos);
  CHECK(text.find("warning   calibration measured") == std::string::npos);
  // The H200's file on an H100 (a user's calibration line) warns.
  const auto carried = step::simulate(load(scenario("h100-sxm", "calibration = \"hardware/calibration/h200.toml\"\n")));
  CHECK(report::text_report(carried).find("warning   calibration measured on NVIDIA H200, applied to NVIDIA H100 SXM 80GB") !=
        std::string::npos);
  std::string json = report::to_json(r);
  json.erase(std::remove(json.begin(), json.end(), ' '), json.end());
  CHECK(json.find("\"calibration\":\"hardware/calibration/h100.toml\"") != std::string::npos);
  CHECK(json.find("\"calibration_choice\":\"default\"") != std::string::npos);
  const auto h200 = step::simulate(load(scenario("h200")));
  CHECK(report::text_report(h200).find("warning   calibration measured") == std::string::npos);
  const auto none = step::simulate(load(scenario("h100-sxm", "calibration = \"none\"\n")));
  CHECK(report::text_report(none).find("  calib     none: datasheet roofline (calibration = \"none\")") != std::string::npos);
  CHECK(none.step_time_s < r.step_time_s);   // the roofline is the optimistic one
  const auto a100 = step::simulate(load(scenario("a100-sxm-80gb")));
  CHECK(report::text_report(a100).find("no measured calibration for this GPU's architecture") != std::string::npos);
}

TEST_CASE("a calibration from another GPU of lower peak is scaled: the H20 stays below its peak") {
  // hardware/calibration/h200.toml on the H20 (148 TFLOP/s bf16): the measured table's seconds
  // are H200 seconds; used as they are, MFU came out at 114.9%.
  const auto r = step::simulate(load(scenario("h20")));
  CHECK(r.mfu > 0.2);
  CHECK(r.mfu < 0.8);
  CHECK(hardware::calibration_transfer_note(*r.scenario.calibration, r.scenario.hardware).find("H20") != std::string::npos);
  hardware::HardwareSpec b200;
  b200.name = "NVIDIA B200";
  CHECK(hardware::calibration_transfer_note(*r.scenario.calibration, b200).find("another architecture") != std::string::npos);
  CHECK(hardware::gpu_family("NVIDIA H800 SXM 80GB") == "hopper");
  CHECK(hardware::gpu_family("AMD Instinct MI300X") == "cdna3");
}
