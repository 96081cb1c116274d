// Per-operation collective fits (hardware/calibration.h CollectiveOpFit,
// calibration files' [collectives.<op>] tables): fitting, the file round trip,
// the fallback to the one overall line, and bad values.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "hardware/calibration.h"
#include "hardware/collectives.h"
#include "tests/cli/cli_support.h"
#include "tests/hardware/test_helpers.h"

using namespace mfusim::hardware;
using namespace mfusim::hardware::testing;

namespace {
std::string tmp(const std::string& name) { return std::string("/tmp/mfusim_test_perop_") + name; }
const char* kOverall = "gpu = \"x\"\n[collectives]\nnvlink_bus_bandwidth_gbs = 290\nnvlink_latency_us = 12\n";
}  // namespace

TEST_CASE("per-op collective fits: write then read gives the same fits and the same text") {
  Calibration c;
  c.gpu_name = "NVIDIA H200";
  c.has_collectives = true;
  c.collectives.nvlink_bus_bandwidth = 290e9;
  c.collectives.nvlink_latency_s = 12e-6;
  c.collectives.rms_rel_error = 0.227;
  c.collectives.op[0] = {308.4e9, 8.5e-6, 0.108, 10};   // all_reduce
  c.collectives.op[4] = {323.5e9, 0.0, 0.091, 7};       // send_recv, through the origin
  write_calibration(c, tmp("rt.toml"));
  const std::string text = slurp(tmp("rt.toml"));
  CHECK(text.find("[collectives.all_reduce]") != std::string::npos);
  CHECK(text.find("[collectives.send_recv]") != std::string::npos);
  CHECK(text.find("[collectives.all_gather]") == std::string::npos);   // not fitted: not written
  const Calibration r = read_calibration(tmp("rt.toml"));
  REQUIRE(r.has_collectives);
  CHECK(r.collectives.nvlink_bus_bandwidth == doctest::Approx(290e9));
  CHECK(r.collectives.op[0].nvlink_bus_bandwidth == doctest::Approx(308.4e9));
  CHECK(r.collectives.op[0].nvlink_latency_s == doctest::Approx(8.5e-6).scale(0));
  CHECK(r.collectives.op[0].rms_rel_error == doctest::Approx(0.108));
  CHECK(r.collectives.op[0].samples == 10);
  CHECK(r.collectives.op[4].nvlink_bus_bandwidth == doctest::Approx(323.5e9));
  CHECK(r.collectives.op[4].nvlink_latency_s == 0.0);
  CHECK(r.collectives.op[4].samples == 7);
  for (int i : {1, 2, 3}) CHECK(r.collectives.op[i].nvlink_bus_bandwidth == 0.0);
  write_calibration(r, tmp("rt2.toml"));
  CHECK(slurp(tmp("rt2.toml")) == text);
}

TEST_CASE("a calibration without per-op tables loads and writes as before (the overall line for every op)") {
  // The committed format before per-op fits: [collectives] only.
  const std::string old = std::string("# mfusim calibration (hardware/calibration.h), fitted by `mfusim calibrate` from a probe output.\n"
                                      "# Units as named: tflops = 1e12 FLOP/s, gbs = 1e9 bytes/s, us = microseconds; efficiencies are fractions.\n"
                                      "format = \"mfusim-calibration-1\"\ngpu = \"NVIDIA H200\"\n\n[collectives]\n"
                                      "nvlink_bus_bandwidth_gbs = 289.552996\nnvlink_latency_us = 12.241543\n"
                                      "nic_bus_bandwidth_gbs = 0.0\nnic_latency_us = 0.0\nrms_rel_error = 0.227032473\n");
  write(tmp("old.toml"), old);
  const Calibration c = read_calibration(tmp("old.toml"));
  for (const auto& o : c.collectives.op) CHECK(o.nvlink_bus_bandwidth == 0.0);
  write_calibration(c, tmp("old2.toml"));
  CHECK(slurp(tmp("old2.toml")) == old);   // byte-identical
  const HardwareSpec hw = h100();
  for (Collective op : {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter,
                        Collective::all_to_all, Collective::send_recv, Collective::broadcast}) {
    const Link l = nvlink_link(hw, &c, op);
    CHECK(l.bandwidth == nvlink_link(hw, &c).bandwidth);
    CHECK(l.latency == nvlink_link(hw, &c).latency);
  }
}

TEST_CASE("collective_time uses an operation's own line when calibrated, the overall line otherwise") {
  // nccl-tests doc/PERFORMANCE.md (formulas.md §4.1), alpha per step, n = 8:
  //   ring all-reduce 2(n-1)/n S/B + 2(n-1) a;  all-gather / reduce-scatter (n-1)/n S/B + (n-1) a;
  //   send/recv S/B + a;  broadcast S/B + (n-1) a.
  const HardwareSpec hw = h100();
  Calibration cal = overall_collectives();
  cal.collectives.op[static_cast<int>(Collective::all_reduce)] = {340e9, 1e-6, 0, 10};
  cal.collectives.op[static_cast<int>(Collective::reduce_scatter)] = {250e9, 3e-6, 0, 10};
  const Group node8{8, 1, 8};
  const double S = 1e8;
  auto t = [&](Collective c, const Group& g) { return collective_time(c, S, g, hw, AlgoChoice::ring, &cal).seconds; };
  CHECK(t(Collective::all_reduce, node8) == doctest::Approx(2.0 * 7 / 8 * S / 340e9 + 2.0 * 7 * 1e-6).scale(0));
  CHECK(t(Collective::reduce_scatter, node8) == doctest::Approx(7.0 / 8 * S / 250e9 + 7 * 3e-6).scale(0));
  // fallback: no fit of their own
  CHECK(t(Collective::all_gather, node8) == doctest::Approx(7.0 / 8 * S / 300e9 + 7 * 2e-6).scale(0));
  CHECK(t(Collective::send_recv, node8) == doctest::Approx(S / 300e9 + 2e-6).scale(0));
  CHECK(t(Collective::broadcast, node8) == doctest::Approx(S / 300e9 + 7 * 2e-6).scale(0));
  // Across domains, one rank per domain: NIC line, the NVLink per-op fit plays no part
  // (crossing link: B = min(B_nv, 1 x B_nic), a = max(a_nv, a_nic)).
  CHECK(t(Collective::all_gather, Group{4, 4, 1}) == doctest::Approx(3.0 / 4 * S / 40e9 + 3 * 8e-6).scale(0));
  CHECK(t(Collective::reduce_scatter, Group{4, 4, 1}) == doctest::Approx(3.0 / 4 * S / 40e9 + 3 * 8e-6).scale(0));
  // Hierarchical all-reduce (docs/cost-model.md §3), p = 8 per domain, d = 2 domains: the
  // reduce-scatter on its own line, the all-gather on the overall one, then the NIC
  // all-reduce of S/p (ring, 2(d-1)/d S/p / B_nic + 2(d-1) a_nic; the tree at d = 2 is slower).
  const Group two_nodes{16, 2, 8};
  const double intra = 7.0 / 8 * S / 250e9 + 7 * 3e-6 + 7.0 / 8 * S / 300e9 + 7 * 2e-6;
  const double inter = 2.0 * 1 / 2 * (S / 8) / 40e9 + 2.0 * 1 * 8e-6;
  CHECK(hierarchical_all_reduce(S, two_nodes, hw, &cal).seconds == doctest::Approx(intra + inter).scale(0));
}

TEST_CASE("fit_probe fits each operation's own line when it has enough samples") {
  // Samples generated from t = steps * a + bus_bytes / B (n = 2: all-reduce 2 steps,
  // bus bytes S; all-gather 1 step, S/2; send/recv 1 step, S), exact to 12 digits.
  std::string probe = "format = \"mfusim-probe-1\"\n[provenance]\ngpu = \"NVIDIA H200\"\n";
  auto add = [&](const char* op, double bytes, double seconds) {
    probe += std::string("[[collective]]\nop = \"") + op + "\"\ngpus = 2\nbytes = " + g12(bytes) +
             "\nseconds = " + g12(seconds) + "\n";
  };
  for (double S : {1e5, 1e6, 1e7, 1e8, 1e9}) {
    add("all_reduce", S, 2 * 8e-6 + S / 340e9);
    add("all_gather", S, 1 * 15e-6 + 0.5 * S / 260e9);
  }
  for (double S : {1e6, 1e8, 1e9}) add("send_recv", S, 14e-6 + S / 360e9);   // 3: too few for a fit of its own
  write(tmp("probe.toml"), probe);
  std::string report;
  const Calibration c = fit_probe(tmp("probe.toml"), &report);
  REQUIRE(c.has_collectives);
  const CollectiveOpFit& ar = c.collectives.op[static_cast<int>(Collective::all_reduce)];
  const CollectiveOpFit& ag = c.collectives.op[static_cast<int>(Collective::all_gather)];
  CHECK(ar.nvlink_bus_bandwidth == doctest::Approx(340e9).epsilon(1e-6));
  CHECK(ar.nvlink_latency_s == doctest::Approx(8e-6).epsilon(1e-6).scale(0));
  CHECK(ar.rms_rel_error < 1e-9);
  CHECK(ar.samples == 5);
  CHECK(ag.nvlink_bus_bandwidth == doctest::Approx(260e9).epsilon(1e-6));
  CHECK(ag.nvlink_latency_s == doctest::Approx(15e-6).epsilon(1e-6).scale(0));
  CHECK(c.collectives.op[static_cast<int>(Collective::send_recv)].nvlink_bus_bandwidth == 0.0);
  CHECK(c.collectives.op[static_cast<int>(Collective::reduce_scatter)].nvlink_bus_bandwidth == 0.0);
  // The overall line is still fitted over all 13 samples and misses both operations.
  CHECK(c.collectives.rms_rel_error > 0.01);
  CHECK(report.find("collectives: 13 samples") != std::string::npos);
  CHECK(report.find("  all_reduce: 5 samples, bus bandwidth 340 GB/s, latency 8.0 us, rms rel error 0.0%") !=
        std::string::npos);
  CHECK(report.find("  send_recv: 3 samples, no fit of its own") != std::string::npos);
}

TEST_CASE("bad per-op collective tables are errors with file:line:col") {
  // Rule (calibration.h): bad files throw std::runtime_error with "file:line:col: error: ..." text.
  const std::string base = kOverall;
  write(tmp("bad1.toml"), base + "[collectives.all_reduce]\nnvlink_bus_bandwidth_gbs = -3\nnvlink_latency_us = 8\n");
  CHECK(error_of(tmp("bad1.toml")) == tmp("bad1.toml") + ":6:28: error: 'nvlink_bus_bandwidth_gbs' must be >= 0");
  write(tmp("bad2.toml"), base + "[collectives.all_gather]\nnvlink_bus_bandwidth_gbs = 0\nnvlink_latency_us = 8\n");
  CHECK(error_of(tmp("bad2.toml")) == tmp("bad2.toml") + ":6:28: error: 'nvlink_bus_bandwidth_gbs' must be > 0");
  write(tmp("bad3.toml"), base + "[collectives.send_recv]\nnvlink_bus_bandwidth_gbs = 300\n");
  CHECK(error_of(tmp("bad3.toml")).find(tmp("bad3.toml") + ":5:1: error: missing key 'nvlink_latency_us'") == 0);
  write(tmp("bad4.toml"), base + "[collectives.broadcast]\nnvlink_bus_bandwidth_gbs = 300\nnvlink_latency_us = 8\n");
  CHECK(error_of(tmp("bad4.toml")) == tmp("bad4.toml") + ":5:1: error: unknown key 'broadcast'");
  write(tmp("bad5.toml"), base + "all_to_all = 3\n");
  CHECK(error_of(tmp("bad5.toml")) == tmp("bad5.toml") + ":5:14: error: 'all_to_all' must be a table");
  write(tmp("bad6.toml"), base + "[collectives.all_reduce]\nnvlink_bus_bandwidth_gbs = 300\nnvlink_latency_us = 8\nsamples = 2.5\n");
  CHECK(error_of(tmp("bad6.toml")) == tmp("bad6.toml") + ":8:11: error: 'samples' must be a positive integer");
  write(tmp("bad7.toml"), base + "[collectives.all_reduce]\nnvlink_bus_bandwidth_gbs = 300\nnvlink_latency_us = 8\nbus = 1\n");
  CHECK(error_of(tmp("bad7.toml")) == tmp("bad7.toml") + ":8:7: error: unknown key 'bus'");
  write(tmp("bad8.toml"), base + "[collectives.reduce_scatter]\nnvlink_bus_bandwidth_gbs = 300\nnvlink_latency_us = nan\n");
  CHECK(error_of(tmp("bad8.toml")) == tmp("bad8.toml") + ":7:21: error: 'nvlink_latency_us' must be finite");
}

TEST_CASE("cli: a bad per-op collective table stops `mfusim run` with exit 2 and file:line:col") {
  using namespace mfusim::testing;
  const std::string cal = (scratch_dir() / "bad_perop.toml").string();
  write(cal, std::string(kOverall) + "[collectives.all_reduce]\nnvlink_bus_bandwidth_gbs = \"fast\"\nnvlink_latency_us = 8\n");
  const auto r = run_cli({"run", kRoot + "/scenarios/8xh100_llama3_8b.toml", "--calibration", cal});
  CAPTURE(r.err);
  CHECK(r.code == 2);
  CHECK(r.err.find(cal + ":6:28: error: 'nvlink_bus_bandwidth_gbs' must be a number") != std::string::npos);
  CHECK(r.err.find("internal error") == std::string::npos);
}

TEST_CASE("the committed h200x2-nccl calibration is calibrate's fit of run 9, per op included") {
  // hardware/calibration/h200x2-nccl.toml = `mfusim calibrate probe/results/run9-x2/h200x2-nccl.toml`.
  const std::string root = std::string(MFUSIM_TEST_DIR) + "/..";
  const Calibration fit = fit_probe(root + "/probe/results/run9-x2/h200x2-nccl.toml");
  const Calibration committed = read_calibration(root + "/hardware/calibration/h200x2-nccl.toml");
  for (int i = 0; i < kCollectiveOps; ++i) {
    const std::string name = kCollectiveOpNames[i];
    CAPTURE(name);
    REQUIRE(fit.collectives.op[i].nvlink_bus_bandwidth > 0);
    CHECK(committed.collectives.op[i].nvlink_bus_bandwidth ==
          doctest::Approx(fit.collectives.op[i].nvlink_bus_bandwidth).epsilon(1e-6));
    CHECK(committed.collectives.op[i].nvlink_latency_s ==
          doctest::Approx(fit.collectives.op[i].nvlink_latency_s).epsilon(1e-6).scale(0));
    CHECK(committed.collectives.op[i].samples == 10);
    // Under the pair's NVLink ceiling (NV18: 18 x 26.562 GB/s = 478 GB/s per direction, run 9 env.txt).
    CHECK(fit.collectives.op[i].nvlink_bus_bandwidth < 478.2e9);
  }
}

// Provenance of the committed single-GPU calibrations: each is `mfusim calibrate` of the raw probe
// file beside it, with the current fit (h200.toml: probe + SDPA, cuDNN fused attention;
// h200-fa2.toml: run-8 probe file, FlashAttention-2). A fit change that is not refitted into the
// committed files fails here (h200.toml had missed run 8's attention sequence knee).
TEST_CASE("the committed H200 calibrations are calibrate's fits of their raw probe files") {
  const std::string root = std::string(MFUSIM_TEST_DIR) + "/..";
  struct Case { const char* probe; const char* out; const char* fused; };
  for (const Case& c : {Case{"h200-probe.toml", "h200.toml", ""}, Case{"h200-probe-run8.toml", "h200-fa2.toml", "flash"}}) {
    CAPTURE(c.out);
    const std::string dir = root + "/hardware/calibration/";
    const Calibration fit = fit_probe(dir + c.probe, nullptr, c.fused);
    write_calibration(fit, tmp(std::string("refit_") + c.out));
    CHECK(slurp(tmp(std::string("refit_") + c.out)) == slurp(dir + c.out));
  }
}
