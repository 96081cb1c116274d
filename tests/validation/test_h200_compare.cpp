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
const std::string kCsv = kRoot + "/validation/results/h200_steps.csv";
}  // namespace

TEST_CASE("H200 measured vs simulated step times: achieved errors (regression guard)") {
  const Summary s = compare(kCsv, kRoot + "/hardware/calibration/h200-fa2.toml", kRoot);
  REQUIRE(s.rows.size() == 35);   // 36 configurations, one OOM (s1.3b materialised at 8k)
  // achieved: step median 8.8%, max 38.4% (s1.3b seq 2048 mbs 1: host bound; the same
  // configuration at mbs 2 measured a 29% shorter forward, i.e. host-time noise of the runs).
  // Before the mechanisms: median 19.2%, max 74.8%.
  CHECK(s.median_abs_step <= 0.09);
  CHECK(s.max_abs_step <= 0.39);
  // achieved: forward median 12.0%, backward median 11.4% (10.3% before the merge with the
  // launch roofline and the memory-bound materialised pieces of docs/levers.md)
  CHECK(s.median_abs_fwd <= 0.12);
  CHECK(s.median_abs_bwd <= 0.115);
  // The long-sequence rows, where the GPU is busy and attention dominates, are within 3%:
  // s1.3b / s0.5b / s7b-8L at seq 16384 (measured 560.7, 262.3, 634.5, 712.6, 767.6 ms;
  // achieved +1.7%, +2.3%, -2.7%, +0.9%, -0.7%).
  int long_rows = 0;
  for (const ComparedRow& r : s.rows)
    if (r.m.seq == 16384) {
      ++long_rows;
      CHECK(std::abs(r.err_step) <= 0.03);
    }
  CHECK(long_rows == 5);
  // No longer one-sided: the old model predicted every row too fast.
  int over = 0;
  for (const ComparedRow& r : s.rows) over += r.err_step > 0;
  CHECK(over >= 10);
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
