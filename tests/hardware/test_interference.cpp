// Communication-computation interference (hardware/interference.h) against
// the measurements it was fitted to: validation/runs/run14-interference,
// results-14b (one H200, 132 SMs, HBM 4.8 TB/s): the slowdown of the large
// Llama-70B TP8 GEMMs (fc1, fc2, proj; medians of 3 passes) beside a kernel
// holding k SMs (`hold`), and holding them while streaming HBM (`copy`, with
// the side's measured bandwidth beside fc1).
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <cmath>
#include <string>
#include <vector>

#include "hardware/interference.h"
#include "tests/hardware/test_helpers.h"

using namespace mfusim::hardware;

namespace {
struct Row { int k; double fc1, fc2, proj; double side_gbs; };
// results-14b/interference_summary.txt (README table "Interference").
const std::vector<Row> kHold = {
    {2, 1.105, 1.085, 1.056, 0}, {4, 1.186, 1.186, 1.181, 0}, {8, 1.200, 1.190, 1.202, 0},
    {16, 1.280, 1.224, 1.223, 0}, {24, 1.260, 1.233, 1.237, 0}, {32, 1.342, 1.317, 1.332, 0}};
const std::vector<Row> kCopy = {
    {2, 1.112, 1.088, 1.085, 137}, {4, 1.209, 1.181, 1.187, 283}, {8, 1.236, 1.243, 1.244, 550},
    {16, 1.379, 1.345, 1.381, 1075}, {24, 1.419, 1.360, 1.384, 1554}, {32, 1.615, 1.575, 1.630, 2000}};

HardwareSpec h200() {
  HardwareSpec hw = testing::h100();
  hw.name = "H200";
  hw.hbm_bandwidth = 4.8e12;
  return hw;
}

// Relative errors of the model over a table; returns {max |err|, mean err}.
std::pair<double, double> errors(const std::vector<Row>& rows, const HardwareSpec& hw) {
  double worst = 0, sum = 0;
  int n = 0;
  for (const Row& r : rows) {
    const double model = compute_slowdown(CommFootprint{r.k, r.side_gbs * 1e9}, hw);
    for (double m : {r.fc1, r.fc2, r.proj}) {
      const double e = (model - m) / m;
      worst = std::max(worst, std::abs(e));
      sum += e;
      ++n;
    }
  }
  return {worst, sum / n};
}
}  // namespace

TEST_CASE("interference: the SM curve reproduces the measured GEMM slowdown beside held SMs") {
  const auto [worst, mean] = errors(kHold, h200());
  CHECK(worst < 0.06);               // every one of the 18 measurements within 6%
  CHECK(std::abs(mean) < 0.02);      // and no bias
  // A staircase, not the SM share: 4 held SMs already cost > 14% (132/128 would be 3%).
  CHECK(sm_slowdown(4) > 1.14);
  CHECK(sm_slowdown(4) > 1.0 + 4.0 * (132.0 / 128.0 - 1.0));
  CHECK(sm_slowdown(0) == 1.0);
}

TEST_CASE("interference: SMs held while streaming HBM add the measured bandwidth share") {
  const auto [worst, mean] = errors(kCopy, h200());
  CHECK(worst < 0.08);
  CHECK(std::abs(mean) < 0.02);
  // Below ~0.5 TB/s the HBM term is within 2% (copy / hold 1.00-1.05 measured).
  CHECK(hbm_slowdown(0.55e12 / 4.8e12) < 1.02);
  // 2 TB/s beside the GEMM: 1.20-1.22 measured (copy / hold at k = 32).
  CHECK(hbm_slowdown(2.0e12 / 4.8e12) == doctest::Approx(1.21).epsilon(0.02));
}

TEST_CASE("interference: monotone in SMs and bandwidth; never faster than the SM share") {
  double prev = 1.0;
  for (int k = 0; k <= 131; ++k) {
    const double s = sm_slowdown(k);
    CHECK(s >= prev);
    CHECK(s >= 132.0 / (132.0 - k) - 1e-12);
    prev = s;
  }
  CHECK(hbm_slowdown(0.5) > hbm_slowdown(0.25));
  CHECK(hbm_slowdown(-1.0) == 1.0);
}

TEST_CASE("interference: NCCL and userbuffers footprints") {
  const HardwareSpec hw = testing::h100();
  const Group node8{8, 1, 8}, rail{16, 16, 1}, cross{64, 8, 8}, one{1, 1, 1};
  // NVLink collectives: 32 channels; over the NIC alone: 2 per NIC peer; send/recv: 16.
  CHECK(nccl_footprint(Collective::reduce_scatter, node8, hw).sms == 32);
  CHECK(nccl_footprint(Collective::reduce_scatter, cross, hw).sms == 32);
  CHECK(nccl_footprint(Collective::reduce_scatter, rail, hw).sms == 2);
  CHECK(nccl_footprint(Collective::send_recv, node8, hw).sms == 16);
  CHECK(nccl_footprint(Collective::all_reduce, one, hw).sms == 0);
  // HBM: 3 accesses per link byte for a reduction, 2 for a gather.
  const double nv = nvlink_link(hw).bandwidth;
  CHECK(nccl_footprint(Collective::reduce_scatter, node8, hw).hbm_bytes_per_s == doctest::Approx(3 * nv));
  CHECK(nccl_footprint(Collective::all_gather, node8, hw).hbm_bytes_per_s == doctest::Approx(2 * nv));
  // NeMo's H100 userbuffers: forward reduce-scatters on 24 (proj) and 16 (fc2) SMs.
  CHECK(userbuffers_footprint(TpOverlapSite::forward_attention, hw).sms == 24);
  CHECK(userbuffers_footprint(TpOverlapSite::forward_mlp, hw).sms == 16);
  // A DP reduce-scatter over the rails slows compute far less than one over NVLink.
  CHECK(compute_slowdown(nccl_footprint(Collective::reduce_scatter, rail, hw), hw) <
        compute_slowdown(nccl_footprint(Collective::reduce_scatter, node8, hw), hw));
  CHECK(compute_slowdown(nccl_footprint(Collective::reduce_scatter, node8, hw), hw) > 1.3);
}

// Run 29 (validation/runs/run29-attn-interference, results/interference_summary.txt): cuDNN flash
// attention beside k held SMs, medians of 3 passes; MLA (128 heads, 4096, d_qk 192, d_v 128) and GQA
// (8 q / 1 kv heads, 8192, d 128), forward and forward + backward.
TEST_CASE("interference: attention beside held SMs follows A(k), half the SM share's loss (run 29)") {
  struct A { int k; double fwd_mla, fb_mla, fwd_gqa, fb_gqa; };
  const std::vector<A> rows = {{8, 1.028, 1.024, 1.008, 0.994},
                               {16, 1.093, 1.067, 1.062, 1.060},
                               {20, 1.089, 1.081, 1.079, 1.113},
                               {32, 1.180, 1.168, 1.163, 1.155}};
  for (const A& r : rows) {
    const double model = attention_sm_slowdown(r.k);
    for (double m : {r.fwd_mla, r.fb_mla, r.fwd_gqa, r.fb_gqa}) CHECK(std::abs(model - m) <= 0.04);
    // far below the GEMM's curve at the same k (run 14, fc1 1.20-1.34 at k 8-32)
    CHECK(model < sm_slowdown(r.k) - 0.05);
  }
  CHECK(attention_sm_slowdown(0) == 1.0);
}

// Run 26 (validation/runs/run26-mem-interference): memory-bound kernels beside held SMs 0.99-1.04 (no
// SM term); beside HBM-streaming SMs s - 1 = c f with c = 0.687 (copy, own HBM use 0.854), 0.492 (fp8
// cast, 0.667), 0.295 (transpose, 0.131).
TEST_CASE("interference: the memory-bound coefficient grows with the kernel's own HBM use (run 26)") {
  // Per kernel, c from the least squares of s - 1 = c f over the 4 copy rows (f = the side's alone rate
  // over 4.8 TB/s), and the kernel's alone HBM use u.
  struct K { double u, c; };
  for (const K& k : {K{0.854, 0.687}, K{0.667, 0.492}, K{0.131, 0.295}})
    CHECK(std::abs(memory_hbm_coefficient(k.u) - k.c) <= 0.06);
  CHECK(memory_hbm_coefficient(-1) == memory_hbm_coefficient(0));
  CHECK(memory_hbm_coefficient(5) == memory_hbm_coefficient(1));
}

TEST_CASE("interference: contention() gives each kind of compute its own factor") {
  const HardwareSpec hw = h200();
  const CommFootprint hold{20, 0.0}, stream{32, 2.0e12};
  const Contention a = contention(hold, hw), b = contention(stream, hw);
  CHECK(a.gemm == doctest::Approx(compute_slowdown(hold, hw)));
  CHECK(a.attention == doctest::Approx(attention_sm_slowdown(20)));
  CHECK(a.hbm == 0.0);
  CHECK(b.hbm == doctest::Approx(2.0e12 / 4.8e12));
  CHECK(b.gemm == doctest::Approx(compute_slowdown(stream, hw)));
  CHECK(b.attention == doctest::Approx(attention_sm_slowdown(32) * hbm_slowdown(b.hbm)));
  CHECK(contention(CommFootprint{}, hw) == Contention{});
}

// Run 39 (validation/runs/run39-side-elementwise, results/side_elementwise.csv): FSDP1's gradient cast + divide
// and FSDP2's copy-in on a side stream beside compute, five passes per pair. Per pair (the windows with the side
// inside the main): the median of the side's stretch and of the share of its alone time the pair saved against
// running both in series ("hidden").
TEST_CASE("interference: a full-grid side kernel costs the compute beside it what run 39 measured") {
  std::ifstream in(std::string(MFUSIM_TEST_DIR) + "/../validation/runs/run39-side-elementwise/results/side_elementwise.csv");
  REQUIRE(in.good());
  std::string line;
  std::getline(in, line);   // main,side,p,...,inside,main_slowdown,side_stretch,side_alone_gbs,hidden_frac
  std::map<std::pair<std::string, std::string>, std::pair<std::vector<double>, std::vector<double>>> pairs;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    REQUIRE(f.size() == 16);
    if (f[11] != "1") continue;
    auto& p = pairs[{f[0], f[1]}];
    p.first.push_back(std::stod(f[13]));    // side stretch
    p.second.push_back(std::stod(f[15]));   // hidden
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  };
  REQUIRE(pairs.size() == 7);   // Llama-8B fc1 beside FSDP1's kernel had no window with the side inside
  std::vector<double> hidden, gemm_stretch;
  std::map<std::string, std::vector<double>> hidden_by_kind;
  for (const auto& [key, v] : pairs) {
    const double h = median(v.second);
    hidden.push_back(h);
    const std::string kind = key.first.rfind("gemm", 0) == 0 ? "gemm" : key.first.rfind("attn", 0) == 0 ? "attention" : "memory";
    hidden_by_kind[kind].push_back(h);
    if (kind == "gemm") gemm_stretch.push_back(median(v.first));
  }
  // The constants are the medians: hidden over the seven pairs, the stretch over the three beside GEMMs.
  CHECK(kSideElementwiseHidden == doctest::Approx(median(hidden)).epsilon(0.01).scale(0));
  CHECK(kSideElementwiseStretch == doctest::Approx(median(gemm_stretch)).epsilon(0.001));
  const double s = side_elementwise_slowdown();
  CHECK(s == doctest::Approx(1.538).epsilon(0.001));
  // The compute's lost time over the side's stretched window, as a share of the side's alone time, lies within
  // the seven pairs' measured range of (1 - hidden).
  const double lost = kSideElementwiseStretch * (1.0 - 1.0 / s);
  CHECK(lost >= 1.0 - *std::max_element(hidden.begin(), hidden.end()));
  CHECK(lost <= 1.0 - *std::min_element(hidden.begin(), hidden.end()));
  // One factor for every kind: each kind's own median hidden share gives a factor within 0.03.
  for (const auto& [kind, h] : hidden_by_kind) {
    CAPTURE(kind);
    CHECK(std::abs(1.0 / (1.0 - (1.0 - median(h)) / kSideElementwiseStretch) - s) <= 0.03);
  }
}
