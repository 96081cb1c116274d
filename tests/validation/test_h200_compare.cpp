// validation/h200_compare.h on the committed measurements (validation/results/h200_steps.csv,
// 35 ok rows of real H200 training steps): the regression guard of validation/README.md.
// The errors asserted are the ones achieved with the fidelity mechanisms of docs/fidelity.md
// (host issue time, fp32-autocast recipe, torch cross entropy, eager attention); the goal
// (median <= 5%, max <= 10%) is NOT met -- see validation/README.md "Remaining misses".
#include <doctest/doctest.h>

#include <string>

#include "validation/h200_compare.h"

using namespace mfusim::validation;

namespace {
const std::string kRoot = MFUSIM_SOURCE_DIR;
// Run 4: 3 interleaved passes per configuration, medians (validation/README.md); the first
// measurement (one pass, 3 steps) stays in h200_steps.csv.
const std::string kCsv = kRoot + "/validation/results/h200_steps_run4.csv";
const std::string kCsvRun1 = kRoot + "/validation/results/h200_steps.csv";
}  // namespace

TEST_CASE("H200 measured vs simulated step times: achieved errors (regression guard)") {
  const Summary s = compare(kCsv, kRoot + "/hardware/calibration/h200-fa2.toml", kRoot);
  REQUIRE(s.rows.size() == 35);   // 36 configurations, one OOM (s1.3b materialised at 8k)
  // achieved (run 4 data, fp32 residual stream, eager kernel-family bandwidths, host cost per
  // op from the whole-step microbenchmark): step median 4.8%, max 20.1% (s1.3b seq 4096
  // recompute: its forward measured 67.6 ms, 52% above the same configuration without
  // recompute, 44.5 ms, whose forward is identical: host noise of the run, README).
  // Before: 8.9% / 38.3% on the run-1 data; before any fidelity mechanism 19.2% / 74.8%.
  CHECK(s.median_abs_step <= 0.05);
  CHECK(s.max_abs_step <= 0.21);
  // achieved: forward median 6.7%, backward median 6.9%
  CHECK(s.median_abs_fwd <= 0.07);
  CHECK(s.median_abs_bwd <= 0.07);
  // The long-sequence rows (GPU busy, attention dominates) are within 6.5%: +4.9, +4.8, +0.5,
  // +6.1, +2.2% (they were within 3% before the fp32 residual stream and the measured norm
  // backward bandwidth added backward time: validation/README.md, remaining misses).
  int long_rows = 0;
  for (const ComparedRow& r : s.rows)
    if (r.m.seq == 16384) {
      ++long_rows;
      CHECK(std::abs(r.err_step) <= 0.065);
    }
  CHECK(long_rows == 5);
  // GPU-bound rows of the two largest models (s3b, s7b-8L, no recompute, fused): within 9%
  // (achieved -8.1% .. +2.1%; the fp32 residual stream and kernel families moved s3b mbs 2
  // from -14.2% and s7b-8L mbs 4 from -11.7%).
  for (const ComparedRow& r : s.rows)
    if ((r.m.model == "s3b" || r.m.model == "s7b-8L") && !r.m.recompute && r.m.fused) CHECK(std::abs(r.err_step) <= 0.09);
  // Two-sided errors.
  int over = 0;
  for (const ComparedRow& r : s.rows) over += r.err_step > 0;
  CHECK(over >= 10);
}

TEST_CASE("H200 comparison on the run-1 data (one pass): the same mechanisms") {
  const Summary s = compare(kCsvRun1, kRoot + "/hardware/calibration/h200-fa2.toml", kRoot);
  REQUIRE(s.rows.size() == 35);
  // achieved: median 6.0%, max 20.0% (was 8.9% / 38.3% before the run-4 mechanisms)
  CHECK(s.median_abs_step <= 0.06);
  CHECK(s.max_abs_step <= 0.201);
}

TEST_CASE("H200 comparison: calibrating the attention backend the runs used (FA2) beats cuDNN's") {
  // The runs force SDPA's FLASH_ATTENTION backend (FlashAttention-2 kernels
  // pytorch_flash::flash_fwd_kernel / flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel,
  // validation/results/run2/sdpa.toml [[sdpa_kernels]]); cuDNN's fused kernel is ~1.8x
  // faster, so a cuDNN calibration under-predicts every flash row.
  const Summary fa2 = compare(kCsv, kRoot + "/hardware/calibration/h200-fa2.toml", kRoot);
  const Summary cudnn = compare(kCsv, kRoot + "/hardware/calibration/h200.toml", kRoot);
  REQUIRE(fa2.rows.size() == cudnn.rows.size());
  CHECK(fa2.median_abs_step < cudnn.median_abs_step);
  // Host-bound rows (the GPU waits for Python) do not depend on the attention kernel's
  // speed; the GPU-bound long-sequence rows do.
  for (std::size_t i = 0; i < fa2.rows.size(); ++i) {
    if (!fa2.rows[i].m.flash) continue;
    CHECK(fa2.rows[i].pred_step_ms >= cudnn.rows[i].pred_step_ms);
    if (fa2.rows[i].m.seq >= 8192) CHECK(fa2.rows[i].pred_step_ms > cudnn.rows[i].pred_step_ms);
  }
}
