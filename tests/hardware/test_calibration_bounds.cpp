// hardware/calibration.cpp: absurd numbers are refused, in a hand-edited
// calibration file (with the key's position) and in a fit of a corrupt probe
// output (calibrate writes nothing); bounds in calibration.h.
#include <doctest/doctest.h>

#include <string>

#include "hardware/calibration.h"
#include "tests/hardware/test_helpers.h"

using namespace mfusim::hardware;
using namespace mfusim::hardware::testing;

namespace {

std::string tmp(const std::string& name) { return std::string("/tmp/mfusim_test_bounds_") + name; }

std::string fit_error(const std::string& probe) {
  write(tmp("probe.toml"), probe);
  try {
    fit_probe(tmp("probe.toml"));
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

// A consistent collective section: all-reduce on 8 GPUs at 300 GB/s bus bandwidth, 5 us per step.
std::string collectives() {
  std::string p;
  for (double b : {1e6, 1e7, 1e8, 1e9}) {
    const double t = 14 * 5e-6 + b * 2 * 7 / 8 / 300e9;
    p += "[[collective]]\nop = \"all_reduce\"\ngpus = 8\nbytes = " + g12(b) + "\nseconds = " + g12(t) + "\n";
  }
  return p;
}

}  // namespace

TEST_CASE("read_calibration refuses absurd hand-edited values with the key's position") {
  struct Case {
    std::string body;   // after [collectives]
    std::string expect;
  };
  const std::string head = "gpu = \"x\"\n[collectives]\n";
  const std::vector<Case> cases = {
      {"nvlink_bus_bandwidth_gbs = 2.6e19\nnvlink_latency_us = 2\n",
       ":3:28: error: 'nvlink_bus_bandwidth_gbs' must be in (0, 100000]"},
      {"nvlink_bus_bandwidth_gbs = 0.0\nnvlink_latency_us = 2\n", ":3:28: error: 'nvlink_bus_bandwidth_gbs' must be > 0"},
      {"nvlink_bus_bandwidth_gbs = nan\nnvlink_latency_us = 2\n", ":3:28: error: 'nvlink_bus_bandwidth_gbs' must be finite"},
      {"nvlink_bus_bandwidth_gbs = inf\nnvlink_latency_us = 2\n", ":3:28: error: 'nvlink_bus_bandwidth_gbs' must be finite"},
      {"nvlink_bus_bandwidth_gbs = 300\nnvlink_latency_us = 1e12\n", ":4:21: error: 'nvlink_latency_us' must be in [0, 1e+06]"},
      {"nvlink_bus_bandwidth_gbs = 300\nnvlink_latency_us = -1\n", ":4:21: error: 'nvlink_latency_us' must be >= 0"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.body);
    write(tmp("cal.toml"), head + c.body);
    const std::string e = error_of(tmp("cal.toml"));
    CHECK(e.find(tmp("cal.toml") + c.expect) == 0);
  }
  write(tmp("gemm.toml"), "[gemm]\npeak_tflops = 989\neff_max = 0.8\nknee = 300\noverhead_us = 1e9\n");
  CHECK(error_of(tmp("gemm.toml")).find(tmp("gemm.toml") + ":5:15: error: 'overhead_us' must be in [0, 1e+06]") == 0);
  write(tmp("mem.toml"), "[memory]\nachieved_bandwidth_gbs = 1e300\nlaunch_overhead_us = 2\n");
  CHECK(error_of(tmp("mem.toml")).find(tmp("mem.toml") + ":2:26: error: 'achieved_bandwidth_gbs' must be in (0, 100000]") == 0);
  write(tmp("att.toml"),
        "[attention]\npeak_tflops = 989\nhbm_bandwidth_gbs = 4800\nflash_fwd_eff = 7\nflash_bwd_eff = 0.4\n"
        "materialized_bw_eff = 0.6\noverhead_us = 10\n");
  CHECK(error_of(tmp("att.toml")).find(tmp("att.toml") + ":4:17: error: 'flash_fwd_eff' must be in [0, 1.5]") == 0);
  // In-range values still read.
  write(tmp("ok.toml"), head + "nvlink_bus_bandwidth_gbs = 300\nnvlink_latency_us = 2\n");
  CHECK(error_of(tmp("ok.toml")) == "");
}

TEST_CASE("fit_probe refuses corrupt probe samples with their position") {
  const std::string h = "format = \"mfusim-probe-1\"\n";
  CHECK(fit_error(h + "[[memory]]\nkind = \"copy_kernel\"\nbytes = 1e6\nseconds = 0.0\n")
            .find(tmp("probe.toml") + ":2:1: error: memory sample needs positive bytes and seconds") == 0);
  CHECK(fit_error(h + "[[memory]]\nkind = \"copy_kernel\"\nbytes = -1e6\nseconds = 1e-3\n")
            .find("memory sample needs positive bytes and seconds") != std::string::npos);
  CHECK(fit_error(h + "[[collective]]\nop = \"all_reduce\"\ngpus = 8\nbytes = 1e6\nseconds = -1\n")
            .find(":2:1: error: collective sample needs") != std::string::npos);
  CHECK(fit_error(h + "[[attention]]\nimpl = \"flash\"\npass = \"fwd\"\nbatch = 1\nheads = 32\nseq = 2048\n"
                      "head_dim = 128\nseconds = 0\n")
            .find(":2:1: error: attention sample needs positive") != std::string::npos);
  CHECK(fit_error(h + "[[gemm]]\nm = 1024\nn = 1024\nk = 1024\nseconds = 0\n")
            .find("gemm sample needs positive m, n, k, seconds") != std::string::npos);
  // Not a probe output at all: a calibration file given as the probe.
  CHECK(fit_error("format = \"mfusim-calibration-1\"\n[collectives]\nnvlink_bus_bandwidth_gbs = 300\n")
            .find(tmp("probe.toml") + ":1:10: error: not a probe output") == 0);
}

TEST_CASE("fit_probe refuses too few samples for a fit") {
  const std::string h = "format = \"mfusim-probe-1\"\n";
  CHECK(fit_error(h + "[[memory]]\nkind = \"copy_kernel\"\nbytes = 1e6\nseconds = 1e-5\n")
            .find("memory: 1 usable; the fit needs at least 2 distinct sizes") != std::string::npos);
  CHECK(fit_error(h + "[[gemm]]\nm = 1024\nn = 1024\nk = 1024\nseconds = 1e-5\n")
            .find("gemm bf16: 1 usable; the fit needs at least 3 distinct shapes") != std::string::npos);
  CHECK(fit_error(h + "[[collective]]\nop = \"all_reduce\"\ngpus = 8\nbytes = 1e6\nseconds = 1e-4\n")
            .find("collective: 1 usable; the fit needs at least 2") != std::string::npos);
  // Consistent samples fit.
  CHECK(fit_error(h + collectives()) == "");
}

TEST_CASE("fit_probe refuses a fit outside the physical bounds (NVLink at 2.6e19 GB/s)") {
  // Times that do not grow with the bytes: the bandwidth term vanishes and the
  // fitted bus bandwidth is astronomical (or negative).
  std::string p = "format = \"mfusim-probe-1\"\n";
  for (double b : {1e6, 1e9}) p += "[[collective]]\nop = \"all_reduce\"\ngpus = 8\nbytes = " + g12(b) + "\nseconds = 1e-4\n";
  const std::string e = fit_error(p);
  CHECK(e.find("error: the fit gives collectives nvlink_bus_bandwidth_gbs = ") != std::string::npos);
  CHECK(e.find("no calibration written") != std::string::npos);
  // Memory copies faster for more bytes: a negative bandwidth.
  std::string m = "format = \"mfusim-probe-1\"\n";
  m += "[[memory]]\nkind = \"copy_kernel\"\nbytes = 1e6\nseconds = 1e-3\n";
  m += "[[memory]]\nkind = \"copy_kernel\"\nbytes = 1e9\nseconds = 1e-4\n";
  CHECK(fit_error(m).find("error: the fit gives memory achieved_bandwidth_gbs = ") != std::string::npos);
}

TEST_CASE("a probe or calibration file with a 15,000-segment dotted key is refused with its position") {
  // 30 KB: toml++ would recurse once per segment and overflow the stack; the loaders'
  // pre-scan (config::check_toml_nesting) refuses it first with file:line:col.
  std::string key = "a";
  for (int i = 1; i < 15000; ++i) key += ".a";
  const std::string text = "# probe output\n" + key + " = 1\n";
  const std::string err = fit_error(text);
  CHECK(err.find(tmp("probe.toml") + ":2:1: error: tables nest more than 64 levels deep") != std::string::npos);
  write(tmp("deep_cal.toml"), text);
  std::string cal_err;
  try {
    read_calibration(tmp("deep_cal.toml"));
  } catch (const std::runtime_error& e) {
    cal_err = e.what();
  }
  CHECK(cal_err.find(tmp("deep_cal.toml") + ":2:1: error: tables nest more than 64 levels deep") != std::string::npos);
  // A table header of the same depth, too.
  CHECK(fit_error("[" + key + "]\nx = 1\n").find(":1:1: error: tables nest more than 64 levels deep") !=
        std::string::npos);
}
