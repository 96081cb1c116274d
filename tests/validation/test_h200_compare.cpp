// validation/h200_compare.h on the committed measurements (validation/runs/run01-full/h200_steps.csv,
// 35 ok rows of real H200 training steps): the regression guard of validation/README.md.
// The errors asserted are the ones achieved with the fidelity mechanisms of docs/fidelity.md
// (host issue time, fp32-autocast recipe, torch cross entropy, eager attention, kernel families
// from the run-8 kernel trace, the host running ahead of the GPU, the host cost of activation
// checkpointing); both goals (median <= 5%, max <= 10%) are met on the run-4 data
// (validation/README.md).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "validation/h200_compare.h"

using namespace mfusim::validation;

namespace {
const std::string kRoot = MFUSIM_SOURCE_DIR;
// Run 4: 3 interleaved passes per configuration, medians (validation/README.md); the first
// measurement (one pass, 3 steps) stays in h200_steps.csv.
const std::string kCsv = kRoot + "/validation/runs/run04-fidelity/h200_steps_run4.csv";
const std::string kCsvRun1 = kRoot + "/validation/runs/run01-full/h200_steps.csv";
}  // namespace

TEST_CASE("H200 measured vs simulated step times: achieved errors (regression guard)") {
  const Summary s = compare(kCsv, kRoot + "/hardware/calibration/h200-fa2.toml", kRoot);
  REQUIRE(s.rows.size() == 35);   // 36 configurations, one OOM (s1.3b materialised at 8k)
  // achieved (run 4 data; mechanisms up to run 10: RoPE / SwiGLU chains at their in-step
  // measured bandwidths, the eager RMSNorm backward and the split / chunk backward cats as the
  // H200 kernel trace lists them, the flash efficiency rising with the sequence; run 10: the
  // host issues ahead of the GPU over a stream's tasks (sim TaskSpec::host_ns) instead of
  // max(GPU, host) per segment, and activation checkpointing costs the host 728 us per layer
  // forward and 951 us per recomputation, measured by validation/host_ckpt.py): step median
  // 1.7%, max 8.1% (s1.3b seq 4096 recompute, -8.1%; was +-18.0% with max(GPU, host) per segment
  // and no checkpoint cost: its forward measured 67.6 ms against 44.5 ms without recompute).
  // Before: 2.1% / 18.0% (run 8); 4.8% / 20.1% (run 4); 8.9% / 38.3% on the run-1 data; before
  // any fidelity mechanism 19.2% / 74.8%.
  CHECK(s.median_abs_step <= 0.02);
  CHECK(s.max_abs_step <= 0.085);
  // No row over 10% (run 8: 1, run 4: 5 rows).
  int over10 = 0;
  for (const ComparedRow& r : s.rows) over10 += std::abs(r.err_step) > 0.10;
  CHECK(over10 == 0);
  // achieved: forward median 4.3%, backward median 2.7% (run 8: 4.3%, 3.0%; run 4: 6.7%, 6.9%)
  CHECK(s.median_abs_fwd <= 0.045);
  CHECK(s.median_abs_bwd <= 0.03);
  // The rows run 8 targeted (GPU-bound, run 4 at -8.6% .. -15.4%): the fused-0 rows and s1.3b
  // seq 2048 at mbs 4 / 8, within 6% (achieved -5.5% .. +3.3%; run 8 had them within 5%,
  // -4.7% .. +2.2%: two host-heavy fused-0 rows, s1.3b seq 2048 and s0.5b seq 4096, lost
  // 0.5-2.5 points of host time when the host started running ahead across segments).
  int targeted = 0;
  for (const ComparedRow& r : s.rows)
    if (!r.m.fused || (r.m.model == "s1.3b" && r.m.seq == 2048 && r.m.mbs >= 4)) {
      ++targeted;
      CHECK(std::abs(r.err_step) <= 0.06);
    }
  CHECK(targeted == 8);
  // The recompute rows (run 10's checkpoint host cost): within 8.5% (achieved -8.1% .. +5.2%;
  // run 8: -18.0% .. +5.0%).
  int rec = 0;
  for (const ComparedRow& r : s.rows)
    if (r.m.recompute) {
      ++rec;
      CHECK(std::abs(r.err_step) <= 0.085);
    }
  CHECK(rec == 5);
  // The long-sequence rows (GPU busy, attention dominates): +1.7, +4.4, -1.4, +2.1, +2.0%
  // (run 4: +4.9 .. +6.1%; with run 8's kernels but a constant flash efficiency +10.2 ..
  // +11.3%: FA2 backward alone at s1.3b seq 16384, validation/runs/run02-check/sdpa.toml, 9.10 ms measured vs
  // 11.45 modelled; the fitted knee (1792) brings it to within the SDPA fit's rms).
  int long_rows = 0;
  for (const ComparedRow& r : s.rows)
    if (r.m.seq == 16384) {
      ++long_rows;
      CHECK(std::abs(r.err_step) <= 0.05);
    }
  CHECK(long_rows == 5);
  // GPU-bound rows of the two largest models (s3b, s7b-8L, no recompute, fused): within 4%
  // (achieved -2.3% .. +3.6%; run 4: -8.1% .. +2.1%).
  for (const ComparedRow& r : s.rows)
    if ((r.m.model == "s3b" || r.m.model == "s7b-8L") && !r.m.recompute && r.m.fused) CHECK(std::abs(r.err_step) <= 0.04);
  // Two-sided errors.
  int over = 0;
  for (const ComparedRow& r : s.rows) over += r.err_step > 0;
  CHECK(over >= 10);
}

TEST_CASE("H200 comparison on the run-1 data (one pass): the same mechanisms") {
  const Summary s = compare(kCsvRun1, kRoot + "/hardware/calibration/h200-fa2.toml", kRoot);
  REQUIRE(s.rows.size() == 35);
  // achieved: median 2.3%, max 25.3% (run 8 mechanisms: 2.2% / 23.0%; run 4 mechanisms: 6.0% /
  // 20.0%; before them 8.9% / 38.3%). The max rose twice on the same row: s0.5b seq 2048
  // materialised, a host-bound row measured in the host's slow mode in run 1 (-23.0%, then
  // -25.3% once the host runs ahead across segments); run 4 measured it at 73.0 ms (-5.9%).
  CHECK(s.median_abs_step <= 0.025);
  CHECK(s.max_abs_step <= 0.254);
}

TEST_CASE("H200 comparison: calibrating the attention backend the runs used (FA2) beats cuDNN's") {
  // The runs force SDPA's FLASH_ATTENTION backend (FlashAttention-2 kernels
  // pytorch_flash::flash_fwd_kernel / flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel,
  // validation/runs/run02-check/sdpa.toml [[sdpa_kernels]]); cuDNN's fused kernel is ~1.8x
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

// The host cost of activation checkpointing (validation/h200_compare.h kCheckpointHostS,
// kRecomputeHostS) is the least-squares fit of validation/host_ckpt.py's run-10 samples, with the
// recomputed ops' host cost as the model charges it: refit here from the committed CSVs.
TEST_CASE("checkpoint host cost: the constants are the fit of the committed run-10 samples") {
  const auto fit = fit_checkpoint_host({kRoot + "/validation/runs/run10-inproc/host_ckpt.csv",
                                        kRoot + "/validation/runs/run10-inproc/host_ckpt_b.csv"},
                                       kRoot);
  CHECK(fit.samples == 16);   // 2 files x 2 passes x fused 0/1 x (24, 12 layers)
  CHECK(fit.forward_s == doctest::Approx(kCheckpointHostS).epsilon(1e-3).scale(0));
  CHECK(fit.recompute_s == doctest::Approx(kRecomputeHostS).epsilon(1e-3).scale(0));
  // a wrapper costs more host time than a dozen eager ops, less than the layer's forward issue
  CHECK(fit.forward_s > 10 * kEagerHostOverheadS);
  CHECK(fit.forward_s < 2e-3);
}

// Run 11: 12 configurations never measured before, predicted first (validation/runs/run11-holdout/predictions.md,
// committed before the device call) and then measured (train_step.py --set holdout, 3 passes).
// Achieved: step median 3.1%; the 9 rows that are GPU-bound or mixed within 7.7% (most within
// 3.2%); the 3 host-bound recompute rows over-predicted by +14.3 .. +27.6%: their host ran faster
// than the host constants (measured in runs 7 and 10) say, within the host's own spread
// (s0.5b seq 4096 recompute: 100.8 / 89.0 / 81.9 ms over the 3 passes). Guarded as achieved.
// A holdout's twelve measured steps against the single-GPU calibration the predictions were made with.
static Summary holdout(const std::string& csv) {
  const Summary s = compare(kRoot + csv, kRoot + "/hardware/calibration/h200-fa2.toml", kRoot);
  REQUIRE(s.rows.size() == 12);
  return s;
}

TEST_CASE("H200 holdout (run 11): predictions made before the measurement") {
  const Summary s = holdout("/validation/runs/run11-holdout/h200_steps_holdout.csv");
  CHECK(s.median_abs_step <= 0.035);
  CHECK(s.max_abs_step <= 0.28);
  int host_bound = 0;
  for (const ComparedRow& r : s.rows) {
    const bool small_host_bound = r.m.recompute && r.m.mbs == 1 && (r.m.model == "s0.5b" || (r.m.model == "s1.3b" && r.m.seq == 2048));
    if (small_host_bound) {
      ++host_bound;
      CHECK(r.err_step > 0.10);   // the known miss: predicted slower than this run's fast host
    } else {
      CHECK(std::abs(r.err_step) <= 0.08);
    }
  }
  CHECK(host_bound == 3);
}

// Run 44: 12 more configurations outside both sets, predicted first by the model of that day
// (validation/runs/run44-holdout2/README.md, committed before the call) and measured after (train_step.py --set
// holdout2, 3 passes). Predicted: step median within 5%, every row within 10%. Achieved: median 1.4%, max 4.4%
// (fwd median 3.0%, bwd 2.0%). Guarded as achieved.
TEST_CASE("H200 holdout 2 (run 44): predictions made before the measurement") {
  const Summary s = holdout("/validation/runs/run44-holdout2/results/h200_steps_holdout2.csv");
  CHECK(s.median_abs_step <= 0.02);
  CHECK(s.max_abs_step <= 0.05);
  for (const ComparedRow& r : s.rows) CHECK(std::abs(r.err_step) <= 0.05);
}

TEST_CASE("H200 measured vs simulated peak memory: the loss's transients and gradients allocated in the backward") {
  // The recipe (validation/train_step.py) runs the eager F.cross_entropy(logits.float()) under autocast and
  // zero_grad(set_to_none=True): run 34's loss blocks (models::HeadMemory) and the gradients allocated by the
  // backward, freed by the optimizer step (step/builder.cpp allocate_lazy_grads). Peak memory median |error|
  // over the 35 rows: 9.7% before both (the loss's 4 bytes per logit and no transient, gradients static),
  // 14.6% with the loss's transients alone, 3.9% with both (mean -3.8%). The two unfused rows at 4k tokens
  // (-38%, -40%: the materialised attention's allocations) are the largest.
  const Summary s = compare(kCsv, kRoot + "/hardware/calibration/h200-fa2.toml", kRoot);
  std::vector<double> err;
  for (const ComparedRow& r : s.rows)
    if (r.m.peak_mem_gib > 0) err.push_back(std::abs(r.pred_peak_gib / r.m.peak_mem_gib - 1.0));
  REQUIRE(err.size() == 35);
  std::sort(err.begin(), err.end());
  const double median = (err[17]);
  MESSAGE("H200 peak memory median |error| " << 100 * median << "%");
  CHECK(median <= 0.045);
}
