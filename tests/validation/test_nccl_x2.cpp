// The collective model against NCCL measured on 2 H200s (probe/results/run9-x2,
// validation/runlog.md run 9): the alpha-beta ring model (hardware::collective_time,
// docs/cost-model.md §3) with the bus bandwidths and latencies that `mfusim
// calibrate` fitted from the same samples (hardware/calibration/h200x2-nccl.toml),
// per operation and message size. Three models side by side:
//   per-op   : each operation's own line ([collectives.<op>], CollectiveFit::op);
//   one line : the same file with the per-op tables dropped (the overall fit, 290 GB/s, 12.2 us);
//   default  : no calibration (datasheet NVLink x 0.80).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "config/loader.h"
#include "hardware/calibration.h"
#include "hardware/collectives.h"

using namespace mfusim;

namespace {

struct Sample { std::string op; hardware::Collective c; double bytes, seconds; };

std::string root() { return std::string(MFUSIM_TEST_DIR) + "/.."; }

std::vector<Sample> samples() {
  const toml::table probe = toml::parse_file(root() + "/probe/results/run9-x2/h200x2-nccl.toml");
  std::vector<Sample> out;
  for (const auto& node : *probe["collective"].as_array()) {
    const auto& row = *node.as_table();
    Sample s{row["op"].value_or(std::string()), hardware::Collective::broadcast, row["bytes"].value_or(0.0),
             row["seconds"].value_or(0.0)};
    if (s.op == "all_reduce") s.c = hardware::Collective::all_reduce;
    else if (s.op == "all_gather") s.c = hardware::Collective::all_gather;
    else if (s.op == "reduce_scatter") s.c = hardware::Collective::reduce_scatter;
    else if (s.op == "all_to_all") s.c = hardware::Collective::all_to_all;
    else if (s.op == "send_recv") s.c = hardware::Collective::send_recv;
    else continue;
    out.push_back(s);
  }
  return out;
}

double median_abs(std::vector<double> v) {
  for (double& x : v) x = std::abs(x);
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

TEST_CASE("2 x H200 NCCL: the calibrated collective model against each measured large message") {
  const hardware::HardwareSpec hw = config::load_hardware(root() + "/hardware/h200.toml");
  const hardware::Calibration per_op = hardware::read_calibration(root() + "/hardware/calibration/h200x2-nccl.toml");
  for (int i = 0; i < hardware::kCollectiveOps; ++i) REQUIRE(per_op.collectives.op[i].nvlink_bus_bandwidth > 0);
  hardware::Calibration one_line = per_op;
  for (auto& o : one_line.collectives.op) o = {};
  const hardware::Group two{2, 1, 2};
  int checked = 0;
  std::vector<double> err_op, err_line, err_line3, err_default;
  double worst_op = 0, worst_line = 0;
  for (const Sample& s : samples()) {
    if (s.bytes < 32.0 * 1024 * 1024) continue;   // latency-bound sizes: the 15 us NCCL call floor, not the links
    auto t = [&](const hardware::Calibration* cal) {
      return hardware::collective_time(s.c, s.bytes, two, hw, hardware::AlgoChoice::ring, cal).seconds;
    };
    const double op = t(&per_op), line = t(&one_line), dflt = t(nullptr);
    err_op.push_back(op / s.seconds - 1);
    err_line.push_back(line / s.seconds - 1);
    err_default.push_back(dflt / s.seconds - 1);
    worst_op = std::max(worst_op, std::abs(err_op.back()));
    worst_line = std::max(worst_line, std::abs(err_line.back()));
    MESSAGE(s.op << " " << s.bytes / 1048576 << " MiB: measured " << s.seconds * 1e6 << " us; per-op "
                 << (op / s.seconds - 1) * 100 << "%, one line " << (line / s.seconds - 1) * 100
                 << "%, datasheet x 0.80 " << (dflt / s.seconds - 1) * 100 << "%");
    CAPTURE(s.op);
    CAPTURE(s.bytes);
    // Per-op fit: every large message of every operation within 15% (achieved: at most
    // 14.5%, reduce-scatter at 2 GiB). What is left is the bandwidth ramp one alpha-beta
    // line cannot follow: all-reduce's bus bandwidth rises from 244 GB/s at 32 MiB to 341 at
    // 2 GiB, more than a fixed latency term explains, so the line is slow at 32 MiB and fast at 2 GiB.
    CHECK(std::abs(op / s.seconds - 1) < 0.15);
    // The one line, as before (all-reduce / all-gather / reduce-scatter within 25%): one
    // bus bandwidth cannot follow all-reduce (341 GB/s at 2 GiB) and all-gather /
    // reduce-scatter (287-291) together.
    if (s.c == hardware::Collective::all_reduce || s.c == hardware::Collective::all_gather ||
        s.c == hardware::Collective::reduce_scatter) {
      CHECK(std::abs(line / s.seconds - 1) < 0.25);
      err_line3.push_back(err_line.back());
    }
    ++checked;
  }
  CHECK(checked == 20);   // 5 operations x 4 sizes (32 MiB .. 2 GiB)
  MESSAGE("median |error| over the 20: per-op " << median_abs(err_op) * 100 << "%, one line "
          << median_abs(err_line) * 100 << "%, uncalibrated " << median_abs(err_default) * 100 << "%; worst per-op "
          << worst_op * 100 << "%, one line " << worst_line * 100 << "%");
  // Achieved (see validation/README.md): per-op median 8.3%, worst 14.5%; one line
  // median 13.6%, worst 25.1% (send/recv 2 GiB); datasheet x 0.80 median 24.9%, worst -47.5%.
  // Not every message improves: all-gather / reduce-scatter at 2 GiB were within 1% of
  // the one line and are +13.5% / +14.5% on their own lines (fitted over 8 KiB .. 2 GiB,
  // relative error: the effective bus bandwidth keeps rising to 2 GiB, 232 GB/s at 128 MiB
  // and 291 at 2 GiB for all-gather, so one line through all sizes lies under the 2 GiB rate).
  CHECK(median_abs(err_op) < 0.09);
  CHECK(median_abs(err_line3) < 0.15);   // the one line over the 3 ops, as before (13.6%)
  CHECK(median_abs(err_op) < median_abs(err_line));
  CHECK(worst_op < worst_line);
}

TEST_CASE("2 x H200 NCCL: per operation, the model's error over all sizes is the fit error calibrate reports") {
  // rms over each operation's 10 samples (8 KiB .. 2 GiB) of collective_time / measured - 1.
  // With the per-op line this is the rms_rel_error the fit wrote (the model charges the
  // fitted form t = steps * latency + bus_bytes / B with the same steps and bus factors);
  // against the one line it is larger for every operation (calibrate's report: all-reduce
  // 31.9 -> 10.8%, all-gather 16.3 -> 8.1%, reduce-scatter 13.8 -> 8.6%, all-to-all
  // 29.7 -> 7.2%, send/recv 14.9 -> 9.1%).
  const hardware::HardwareSpec hw = config::load_hardware(root() + "/hardware/h200.toml");
  const hardware::Calibration per_op = hardware::read_calibration(root() + "/hardware/calibration/h200x2-nccl.toml");
  hardware::Calibration one_line = per_op;
  for (auto& o : one_line.collectives.op) o = {};
  const hardware::Group two{2, 1, 2};
  const std::vector<Sample> all = samples();
  for (int i = 0; i < hardware::kCollectiveOps; ++i) {
    double sq_op = 0, sq_line = 0;
    int n = 0;
    for (const Sample& s : all) {
      if (static_cast<int>(s.c) != i) continue;
      const double op = hardware::collective_time(s.c, s.bytes, two, hw, hardware::AlgoChoice::ring, &per_op).seconds;
      const double line = hardware::collective_time(s.c, s.bytes, two, hw, hardware::AlgoChoice::ring, &one_line).seconds;
      sq_op += std::pow(op / s.seconds - 1, 2);
      sq_line += std::pow(line / s.seconds - 1, 2);
      ++n;
    }
    const std::string name = hardware::kCollectiveOpNames[i];
    CAPTURE(name);
    REQUIRE(n == 10);
    const double rms_op = std::sqrt(sq_op / n), rms_line = std::sqrt(sq_line / n);
    MESSAGE(name << ": rms per-op " << rms_op * 100 << "%, one line " << rms_line * 100 << "%");
    CHECK(rms_op == doctest::Approx(per_op.collectives.op[i].rms_rel_error).epsilon(1e-4).scale(0));
    CHECK(per_op.collectives.op[i].samples == 10);
    CHECK(rms_op < 0.11);
    CHECK(rms_op < rms_line);
  }
}
