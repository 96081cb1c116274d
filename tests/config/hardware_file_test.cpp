// config/hardware_file: hardware/*.toml in SI units.
#include <doctest/doctest.h>

#include "config/loader.h"
#include "config_test_helpers.h"

namespace fs = std::filesystem;
using namespace mfusim;
using namespace config_test;
using config::ConfigError;

TEST_CASE("every hardware/*.toml loads, in SI units") {
  auto files = files_in(kRoot + "/hardware", ".toml");
  CHECK(files.size() >= 6);
  for (const auto& f : files) {
    CAPTURE(f.string());
    hardware::HardwareSpec h;
    REQUIRE_NOTHROW(h = config::load_hardware(f.string()));
    CHECK(h.peak_flops_bf16 > 1e14);
    CHECK(h.hbm_bytes > 1e10);
    CHECK(h.nvlink_bandwidth > 1e10);
    CHECK(h.nic_bandwidth > 1e9);
  }
  auto h = config::load_hardware(kRoot + "/hardware/h100-sxm.toml");
  CHECK(h.peak_flops_bf16 == doctest::Approx(989.4e12));
  CHECK(h.nvlink_bandwidth == doctest::Approx(450e9));
  CHECK(h.nic_bandwidth == doctest::Approx(50e9));
  CHECK(h.launch_overhead == doctest::Approx(4e-6).scale(0));
  CHECK(config::load_hardware(kRoot + "/hardware/a100-sxm-80gb.toml").peak_flops_fp8 == 0);
  CHECK(config::load_hardware(kRoot + "/hardware/gb200-nvl72.toml").gpus_per_node == 72);
}

