// hardware/calibration.cpp: fitting a probe output, and the calibration file round trip.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <tuple>
#include <utility>

#include "hardware/calibration.h"
#include "tests/hardware/test_helpers.h"

using namespace mfusim::hardware;
using namespace mfusim::hardware::testing;

namespace {
std::string tmp(const std::string& name) { return std::string("/tmp/mfusim_test_") + name; }
}  // namespace

TEST_CASE("fit_probe recovers a GEMM model it was generated from") {
  // Rule (calibration.h): time = overhead + 2mnk / (peak * eff_max * (1 - exp(-cbrt(mnk)/knee))).
  GemmFit truth{989.4e12, 0.80, 300.0, 5e-6, 0};
  std::string probe = "format = \"mfusim-probe-1\"\n[provenance]\ngpu = \"NVIDIA H200\"\n";
  for (long long m : {256, 1024, 4096, 16384})
    for (long long n : {512, 4096, 28672})
      for (long long k : {1024, 8192}) {
        double t = gemm_fit_seconds(truth, double(m), double(n), double(k));
        probe += "[[gemm]]\ndtype = \"bf16\"\nm = " + std::to_string(m) + "\nn = " + std::to_string(n) +
                 "\nk = " + std::to_string(k) + "\nseconds = " + g12(t) + "\n";
      }
  // memory: 3 TB/s plus 2 us fixed; launch overheads
  for (double b : {1e6, 1e7, 1e8, 1e9})
    probe += "[[memory]]\nkind = \"copy_kernel\"\nbytes = " + g12(b) + "\nseconds = " + g12(2e-6 + b / 3e12) + "\n";
  probe += "[[launch]]\nkind = \"stream_back_to_back\"\nseconds_per_kernel = 2.5e-6\n"
           "[[launch]]\nkind = \"graph_replay\"\nseconds_per_kernel = 1.0e-6\n";
  // flash attention at 50% of peak forward, materialised at 60% of 4.8 TB/s
  for (double s : {2048.0, 8192.0}) {
    double f = 4.0 * 32 * s * s * 128 * 0.5;
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "[[attention]]\nimpl = \"flash\"\npass = \"fwd\"\nbatch = 1\nheads = 32\nkv_heads = 8\nseq = %g\n"
                  "head_dim = 128\ncausal = true\nseconds = %.12g\n"
                  "[[attention]]\nimpl = \"materialized\"\npass = \"fwd\"\nbatch = 1\nheads = 32\nkv_heads = 8\n"
                  "seq = %g\nhead_dim = 128\ncausal = true\nseconds = %.12g\n",
                  s, f / (989.4e12 * 0.5), s, 4.0 * 32 * s * s * 2 / (4.8e12 * 0.6));
    probe += buf;
  }
  write(tmp("probe.toml"), probe);
  std::string report;
  Calibration c = fit_probe(tmp("probe.toml"), &report);
  REQUIRE(c.has_gemm);
  CHECK(c.gpu_name == "NVIDIA H200");
  CHECK(c.gemm.eff_max == doctest::Approx(0.80).epsilon(0.02));
  CHECK(c.gemm.knee == doctest::Approx(300).epsilon(0.05));
  CHECK(c.gemm.rms_rel_error < 0.01);
  CHECK(c.gemm_table.size() == 24);
  REQUIRE(c.has_memory);
  CHECK(c.memory.achieved_bandwidth == doctest::Approx(3e12).epsilon(0.01));
  CHECK(c.memory.launch_overhead_s == doctest::Approx(2.5e-6).scale(0));
  CHECK(c.memory.graph_launch_overhead_s == doctest::Approx(1.0e-6).scale(0));
  REQUIRE(c.has_attention);
  CHECK(c.attention.flash_fwd_eff == doctest::Approx(0.5).epsilon(0.02));
  CHECK(c.attention.materialized_bw_eff == doctest::Approx(0.6).epsilon(0.02));
  CHECK_FALSE(c.has_collectives);  // no multi-GPU samples
  CHECK(report.find("gemm bf16") != std::string::npos);
  CHECK(report.find("collectives: no multi-GPU samples") != std::string::npos);
}

TEST_CASE("write_calibration then read_calibration gives the same calibration") {
  Calibration c;
  c.gpu_name = "NVIDIA H200";
  c.has_gemm = true;
  c.gemm = {989.4e12, 0.71234, 412.5, 6.25e-6, 0.031};
  c.gemm_table = {{4096, 4096, 4096, 1.95e-4}, {8192, 28672, 4096, 2.1e-3}};
  c.has_gemm_fp8 = true;
  c.gemm_fp8 = {1978.9e12, 0.55, 600, 7e-6, 0.05};
  c.gemm_fp8_table = {{8192, 8192, 8192, 8.1e-4}};
  c.has_attention = true;
  c.attention = {989.4e12, 4.8e12, 0.52, 0.41, 0.66, 1.5e-5, 0.08};
  c.has_memory = true;
  c.memory.achieved_bandwidth = 4.1e12;
  c.memory.launch_overhead_s = 2.2e-6;
  c.memory.graph_launch_overhead_s = 0.9e-6;
  c.memory.fixed_overhead_s = 3e-6;
  c.memory.rms_rel_error = 0.04;
  c.has_collectives = true;
  c.collectives.nvlink_bus_bandwidth = 360e9;
  c.collectives.nvlink_latency_s = 12e-6;
  write_calibration(c, tmp("cal.toml"));
  Calibration r = read_calibration(tmp("cal.toml"));
  CHECK(r.gpu_name == c.gpu_name);
  CHECK(r.gemm.peak_flops == doctest::Approx(c.gemm.peak_flops));
  CHECK(r.gemm.eff_max == doctest::Approx(c.gemm.eff_max));
  CHECK(r.gemm.knee == doctest::Approx(c.gemm.knee));
  CHECK(r.gemm.overhead_s == doctest::Approx(c.gemm.overhead_s).scale(0));
  CHECK(r.gemm.rms_rel_error == doctest::Approx(c.gemm.rms_rel_error));
  REQUIRE(r.gemm_table.size() == 2);
  CHECK(r.gemm_table[1].n == 28672);
  CHECK(r.gemm_table[1].seconds == doctest::Approx(2.1e-3).scale(0));
  CHECK(r.has_gemm_fp8);
  CHECK(r.gemm_fp8.eff_max == doctest::Approx(0.55));
  CHECK(r.gemm_fp8_table.size() == 1);
  CHECK(r.attention.flash_bwd_eff == doctest::Approx(0.41));
  CHECK(r.attention.hbm_bandwidth == doctest::Approx(4.8e12));
  CHECK(r.attention.overhead_s == doctest::Approx(1.5e-5).scale(0));
  CHECK(r.memory.achieved_bandwidth == doctest::Approx(4.1e12));
  CHECK(r.memory.graph_launch_overhead_s == doctest::Approx(0.9e-6).scale(0));
  CHECK(r.collectives.nvlink_bus_bandwidth == doctest::Approx(360e9));
  CHECK(r.collectives.nvlink_latency_s == doctest::Approx(12e-6).scale(0));
  // and a second round trip writes the same text
  write_calibration(r, tmp("cal2.toml"));
  std::ifstream a(tmp("cal.toml")), b(tmp("cal2.toml"));
  std::string ta((std::istreambuf_iterator<char>(a)), {}), tb((std::istreambuf_iterator<char>(b)), {});
  CHECK(ta == tb);
}

TEST_CASE("bad calibration files are errors with file:line:col") {
  // Rule (calibration.h): bad files throw std::runtime_error with "file:line:col: error: ..." text.
  write(tmp("bad1.toml"), "gpu = \"x\"\n[gemm]\npeak_tflops = 989\neff_max = = 3\n");
  CHECK(error_of(tmp("bad1.toml")).find(tmp("bad1.toml") + ":4:") == 0);
  write(tmp("bad2.toml"), "gpu = \"x\"\n[gemm]\npeak_tflops = 989\neff_max = 0.7\nknee = 300\noverhead_us = \"a\"\n");
  CHECK(error_of(tmp("bad2.toml")) == tmp("bad2.toml") + ":6:15: error: 'overhead_us' must be a number");
  write(tmp("bad3.toml"), "gpu = \"x\"\n[memory]\nachieved_bandwidth_gbs = 4000\nlaunch_overhead_us = 2\nbogus = 1\n");
  CHECK(error_of(tmp("bad3.toml")) == tmp("bad3.toml") + ":5:9: error: unknown key 'bogus'");
  write(tmp("bad4.toml"), "gpu = \"x\"\n[gemm]\npeak_tflops = 989\nknee = 300\noverhead_us = 1\n");
  CHECK(error_of(tmp("bad4.toml")).find("error: missing key 'eff_max'") != std::string::npos);
  write(tmp("bad5.toml"), "[memory]\nachieved_bandwidth_gbs = -4\nlaunch_overhead_us = 2\n");
  CHECK(error_of(tmp("bad5.toml")) == tmp("bad5.toml") + ":2:26: error: 'achieved_bandwidth_gbs' must be >= 0");
  CHECK(error_of(tmp("does-not-exist.toml")) == tmp("does-not-exist.toml") + ":1:1: error: cannot read file");
}

TEST_CASE("fit_probe: the fused attention is the implementation asked for; backward counted as 2.5x forward") {
  // calibration.h: flash bwd FLOPs = 2.5 x forward (FA2 paper: 5 vs 2 matmuls), the
  // count hardware/cost_model.cpp divides by flash_bwd_eff. FA2 ("flash") samples at
  // 30% / 20% of peak, cuDNN ("cudnn_fused") at 60% / 45%.
  std::string probe = "format = \"mfusim-probe-1\"\n[provenance]\ngpu = \"NVIDIA H200\"\n";
  for (double s : {2048.0, 4096.0, 16384.0}) {
    const double f = 4.0 * 32 * s * s * 128 * 0.5;
    for (auto [impl, ef, eb] : {std::tuple{"flash", 0.30, 0.20}, std::tuple{"cudnn_fused", 0.60, 0.45}})
      for (auto [pass, t] : {std::pair{"fwd", f / (989.4e12 * ef)}, std::pair{"bwd", 2.5 * f / (989.4e12 * eb)}}) {
        char buf[512];
        std::snprintf(buf, sizeof buf,
                      "[[attention]]\nimpl = \"%s\"\npass = \"%s\"\nbatch = 1\nheads = 32\nkv_heads = 8\nseq = %g\n"
                      "head_dim = 128\ncausal = true\nseconds = %.12g\n",
                      impl, pass, s, t);
        probe += buf;
      }
  }
  write(tmp("probe_attn.toml"), probe);
  const Calibration fa2 = fit_probe(tmp("probe_attn.toml"), nullptr, "flash");
  CHECK(fa2.attention.flash_fwd_eff == doctest::Approx(0.30).epsilon(0.01).scale(0));
  CHECK(fa2.attention.flash_bwd_eff == doctest::Approx(0.20).epsilon(0.01).scale(0));
  const Calibration dflt = fit_probe(tmp("probe_attn.toml"));   // default: cuDNN when measured
  CHECK(dflt.attention.flash_fwd_eff == doctest::Approx(0.60).epsilon(0.01));
  CHECK(dflt.attention.flash_bwd_eff == doctest::Approx(0.45).epsilon(0.01).scale(0));
  bool threw = false;
  try {
    fit_probe(tmp("probe_attn.toml"), nullptr, "triton");
  } catch (const std::runtime_error& e) {
    threw = std::string(e.what()).find("impl = \"triton\"") != std::string::npos;
  }
  CHECK(threw);
}

TEST_CASE("fit_probe: a flash efficiency that rises with the sequence is fitted as a knee") {
  // hardware/calibration.h AttentionFit: eff(s) = flash_bwd_eff * s / (s + knee). Samples made
  // with eff 0.35 and knee 2048 (backward) and a constant 0.30 (forward) give those back; the
  // cost model then charges the backward at seq s with 0.35 * s / (s + 2048).
  std::string probe = "format = \"mfusim-probe-1\"\n[provenance]\ngpu = \"NVIDIA H200\"\n";
  for (double s : {1024.0, 2048.0, 4096.0, 8192.0, 16384.0}) {
    const double f = 4.0 * 16 * s * s * 128 * 0.5;
    for (auto [pass, t] : {std::pair{"fwd", f / (989.4e12 * 0.30)},
                           std::pair{"bwd", 2.5 * f / (989.4e12 * 0.35 * s / (s + 2048))}}) {
      char buf[512];
      std::snprintf(buf, sizeof buf,
                    "[[attention]]\nimpl = \"flash\"\npass = \"%s\"\nbatch = 1\nheads = 16\nkv_heads = 8\nseq = %g\n"
                    "head_dim = 128\ncausal = true\nseconds = %.12g\n",
                    pass, s, t);
      probe += buf;
    }
  }
  write(tmp("probe_knee.toml"), probe);
  const Calibration c = fit_probe(tmp("probe_knee.toml"), nullptr, "flash");
  CHECK(c.attention.flash_bwd_seq_knee == doctest::Approx(2048));
  CHECK(c.attention.flash_fwd_seq_knee == 0);
  CHECK(c.attention.flash_bwd_eff == doctest::Approx(0.35).epsilon(0.01).scale(0));
  CHECK(c.attention.flash_fwd_eff == doctest::Approx(0.30).epsilon(0.01).scale(0));
  CHECK(c.attention.rms_rel_error < 0.01);
  write_calibration(c, tmp("cal_knee.toml"));
  const Calibration r = read_calibration(tmp("cal_knee.toml"));
  CHECK(r.attention.flash_bwd_seq_knee == doctest::Approx(2048));
}

TEST_CASE("the 2 x H200 NCCL run (probe/results/run9-x2) fits an NVLink bus bandwidth under the links' ceiling") {
  const std::string root = std::string(MFUSIM_TEST_DIR) + "/..";
  std::string report;
  const Calibration c = fit_probe(root + "/probe/results/run9-x2/h200x2-nccl.toml", &report);
  REQUIRE(c.has_collectives);
  // nvidia-smi on that machine (probe/results/run9-x2/env.txt): GPU0-GPU1 NV18,
  // 18 links x 26.562 GB/s = 478 GB/s per direction: no fit may exceed it.
  CHECK(c.collectives.nvlink_bus_bandwidth < 478.2e9);
  // The largest messages (2 GiB) measured 287-362 GB/s of bus bandwidth; one
  // alpha-beta line over all 50 samples (8 KiB .. 2 GiB, five operations) lies in that band.
  CHECK(c.collectives.nvlink_bus_bandwidth > 250e9);
  CHECK(c.collectives.nvlink_bus_bandwidth < 370e9);
  // 8 KiB calls took 13-20 us: the latency term is of that size.
  CHECK(c.collectives.nvlink_latency_s > 5e-6);
  CHECK(c.collectives.nvlink_latency_s < 25e-6);
  CHECK(c.collectives.rms_rel_error < 0.25);
  CHECK(report.find("collectives: 50 samples") != std::string::npos);
  // The committed calibration file is this fit.
  const Calibration committed = read_calibration(root + "/hardware/calibration/h200x2-nccl.toml");
  REQUIRE(committed.has_collectives);
  CHECK(committed.collectives.nvlink_bus_bandwidth == doctest::Approx(c.collectives.nvlink_bus_bandwidth).epsilon(1e-6));
  CHECK(committed.collectives.nvlink_latency_s == doctest::Approx(c.collectives.nvlink_latency_s).epsilon(1e-6).scale(0));
}
