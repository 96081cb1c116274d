// NVIDIA's cuDNN frontend published two GH100 attention tables in 2024 (validation/cudnn_sdpa/gh100_2024.csv,
// SOURCES.md): cuDNN's fused attention and PyTorch's FlashAttention-2 (SDPA's default backend), timed back to
// back at a locked 1,980 MHz, in the PyTorch 24.03 and 24.07 containers with the newest cuDNN 9 of NVIDIA's
// apt repository when each was built (May and September 2024: the era of the NeMo 24.05-24.09 containers
// most H100 rows of the modern set ran). The shipped H200 calibration (cuDNN 9.19 and PyTorch 2.11's
// FlashAttention-2, measured by the probe) prices them: an independent check of both attention fits, and of
// whether the older libraries were slower than the fits say (they were not).
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "hardware/calibration.h"
#include "hardware/cost_model.h"
#include "models/kernel_builders.h"
#include "validation/xla/xla_tables.h"

using namespace mfusim;
namespace vx = mfusim::validation::xla;

namespace {

struct Row {
  std::string table, backend;
  double batch, heads, seq, head_dim;
  bool causal;
  double fwd_tflops, bwd_tflops;
  // The benchmark's count (its flops()): 4 b s^2 h d, halved when causal, backward 2.5x.
  double seconds(bool bwd) const {
    const double f = 4 * batch * seq * seq * heads * head_dim * (causal ? 0.5 : 1.0) * (bwd ? 2.5 : 1.0);
    return f / ((bwd ? bwd_tflops : fwd_tflops) * 1e12);
  }
};

std::vector<Row> rows() {
  std::vector<Row> out;
  for (const auto& f : vx::csv_rows("validation/cudnn_sdpa/gh100_2024.csv", 9))
    out.push_back({f[0], f[6], std::stod(f[1]), std::stod(f[2]), std::stod(f[3]), std::stod(f[4]), f[5] == "1",
                   std::stod(f[7]), std::stod(f[8])});
  return out;
}

// The model's device time of a square call (its flash kernel as models/ builds it), fwd or bwd; fa2: priced as
// PyTorch's FlashAttention-2 ([attention_fa2]), else cuDNN's ([attention]).
double model_seconds(const hardware::CostModel& cm, const models::detail::AttnShape& shape, bool causal, bool fa2, bool bwd) {
  std::vector<hardware::Kernel> f, b;
  models::detail::attention_kernels(models::ModelSpec{}, shape, 2, config::Attention::flash, f, b);
  hardware::Kernel k = bwd ? b.front() : f.front();
  k.causal = causal;
  k.fa2 = fa2;
  return cm.time(k) - cm.launch_time(k);
}
double model_seconds(const hardware::CostModel& cm, const Row& r, bool bwd) {
  return model_seconds(cm, {r.batch, r.heads, r.heads, r.seq, r.seq, r.head_dim, r.head_dim}, r.causal,
                       r.backend == "pytorch_sdpa", bwd);
}

}  // namespace

TEST_CASE("cudnn gh100 2024: the tables read as published (20 calls per table, both backends, both passes)") {
  const auto rs = rows();
  REQUIRE(rs.size() == 40);
  std::map<std::string, int> per;
  for (const auto& r : rs) {
    ++per[r.table + " " + r.backend];
    CHECK(r.heads == 16);
    CHECK(r.head_dim == 128);
    CHECK(r.batch * r.seq >= 16384);
    CHECK(r.fwd_tflops > 0);
    CHECK(r.bwd_tflops > 0);
  }
  CHECK(per.size() == 4);
  for (const auto& [k, n] : per) CHECK(n == 10);
}

TEST_CASE("cudnn gh100 2024: the shipped H200 calibration prices 2024's cuDNN and FlashAttention-2 calls within 15%, "
          "no library slower than the fit by more than 5% on the geometric mean") {
  const auto cal = hardware::read_calibration(vx::source_path("hardware/calibration/h200.toml"));
  REQUIRE(cal.has_attention);
  REQUIRE(cal.has_attention_fa2);
  const hardware::CostModel cm(vx::hardware_of("H200"), hardware::Precision::bf16, &cal, false);
  std::map<std::string, std::pair<double, int>> geo;   // log sum, count per table and backend
  double worst = 0;
  for (const auto& r : rows()) {
    for (const bool bwd : {false, true}) {
      const double ratio = model_seconds(cm, r, bwd) / r.seconds(bwd);   // model time / published time
      CAPTURE(r.table);
      CAPTURE(r.backend);
      CAPTURE(r.seq);
      CAPTURE(r.causal);
      CAPTURE(bwd);
      CHECK(std::fabs(ratio - 1) < 0.15);
      worst = std::max(worst, std::fabs(ratio - 1));
      auto& g = geo[r.table + " " + r.backend];
      g.first += std::log(ratio);
      ++g.second;
    }
  }
  MESSAGE("largest |model / published - 1|: " << worst);
  for (const auto& [k, g] : geo) {
    const double mean = std::exp(g.first / g.second);
    MESSAGE(k << ": model / published time, geometric mean " << mean);
    // A ratio below 1 is a library slower than the fit: 2024's were not, by more than 5%.
    CHECK(mean > 0.95);
    CHECK(mean < 1.05);
  }
}

// cuDNN frontend's H200 table of 2026 (validation/cudnn_sdpa/h200_919.csv, SOURCES.md): cuDNN 9.19.1, the
// probe's own library, each call's kernels from the torch profiler after an L2 flush (isolated calls: the
// unloaded clock). Llama 3.1's GQA attention (64 query, 8 key/value heads) and DeepSeek-V3's MLA (128 heads,
// head dims 192 / 128; its backward deterministic, the only one the table ran).
TEST_CASE("cudnn h200 2026: the shipped fit prices cuDNN 9.19's own published H200 calls 0-15% slow (GQA), MLA's "
          "forward 0-15% slow and its deterministic backward 5-15% fast") {
  const auto cal = hardware::read_calibration(vx::source_path("hardware/calibration/h200.toml"));
  const hardware::CostModel cm(vx::hardware_of("H200"), hardware::Precision::bf16, &cal, false);
  double logs = 0;
  int n = 0, mla = 0;
  for (const auto& f : vx::csv_rows("validation/cudnn_sdpa/h200_919.csv", 18)) {
    const double b = std::stod(f[4]), sq = std::stod(f[5]), h = std::stod(f[7]), kv = std::stod(f[8]),
                 dqk = std::stod(f[9]), dv = std::stod(f[10]);
    const bool causal = f[3] == "top_left";
    REQUIRE((causal || f[3] == "no_mask"));
    REQUIRE(std::stod(f[6]) == sq);
    const models::detail::AttnShape shape{b, h, kv, sq, sq, dqk, dv};
    const double fwd = model_seconds(cm, shape, causal, false, false) / (std::stod(f[12]) * 1e-3);
    const double bwd = model_seconds(cm, shape, causal, false, true) / (std::stod(f[13]) * 1e-3);
    CAPTURE(f[0]);
    CAPTURE(sq);
    CAPTURE(causal);
    CHECK(fwd > 1.0);
    CHECK(fwd < 1.15);
    if (f[0] == "dsv3") {
      ++mla;
      CHECK(f[11] == "True");
      CHECK(bwd > 0.85);
      CHECK(bwd < 0.95);
      continue;
    }
    CHECK(f[11] == "False");
    CHECK(bwd > 1.0);
    CHECK(bwd < 1.15);
    logs += std::log(fwd) + std::log(bwd);
    n += 2;
  }
  CHECK(mla == 3);
  REQUIRE(n == 20);
  const double mean = std::exp(logs / n);
  MESSAGE("Llama 3.1 GQA calls: model / published time, geometric mean " << mean);
  CHECK(mean > 1.05);
  CHECK(mean < 1.10);
}
