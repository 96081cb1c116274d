// The attention variants (features.attention, models/attention_kernels.cpp) against run 14's
// measurements on one H200 (validation/runs/run14-interference/results-14a/attention_variants.csv):
// Llama-70B heads at TP 8 (8 query heads, 1 KV head, head dim 128), causal, bf16, sequence 4096
// and 8192, micro-batch 1 and 2, forward and backward (median of 7 CUDA-event timings). The
// modelled time is the variant's kernel list (its FLOPs and bytes) on the cost model with the
// H200 calibration: no per-variant factor anywhere, so each check below can fail.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "config/loader.h"
#include "hardware/calibration.h"
#include "hardware/cost_model.h"
#include "models/kernel_builders.h"
#include "tests/models/fixtures.h"

using namespace mfusim;
using config::Attention;

namespace {

const std::string kRoot = std::string(MFUSIM_TEST_DIR) + "/..";

struct Measured {   // seconds, results-14a/attention_variants.csv
  int seq, mbs;
  double flash_f, flash_b, cudnn_f, cudnn_b, hf_f, hf_b, math_f, math_b, meg_f, meg_b;
};
const std::vector<Measured> kRun14 = {
    {4096, 1, 0.2952e-3, 0.6614e-3, 0.1512e-3, 0.4081e-3, 1.8154e-3, 2.0551e-3, 3.7394e-3, 4.0414e-3, 1.3088e-3, 1.4996e-3},
    {4096, 2, 0.3673e-3, 1.1117e-3, 0.2174e-3, 0.6123e-3, 3.6156e-3, 3.8622e-3, 6.9139e-3, 7.6451e-3, 2.4595e-3, 2.6945e-3},
    {8192, 1, 0.6562e-3, 1.5810e-3, 0.3481e-3, 0.9486e-3, 7.4775e-3, 7.3084e-3, 14.316e-3, 14.788e-3, 5.1983e-3, 5.0266e-3},
    {8192, 2, 1.0604e-3, 2.8509e-3, 0.5564e-3, 1.6090e-3, 14.911e-3, 14.276e-3, 28.034e-3, 28.916e-3, 10.307e-3, 9.7740e-3},
};

struct Modelled {
  double f = 0, b = 0;
};

Modelled modelled(Attention a, int seq, int mbs, const hardware::CostModel& cm) {
  const models::ModelSpec m = models::fixtures::llama2_70b();
  const models::detail::AttnShape s{static_cast<double>(mbs), 8, 1, static_cast<double>(seq),
                                    static_cast<double>(seq), 128, 128};
  std::vector<hardware::Kernel> f, b;
  models::detail::attention_kernels(m, s, 2, a, f, b);
  auto run = [&](const std::vector<hardware::Kernel>& ks) {
    std::vector<const hardware::Kernel*> p;
    for (const auto& k : ks) p.push_back(&k);
    return cm.stream_time(p).seconds;
  };
  return {run(f), run(b)};
}

}  // namespace

TEST_CASE("attention variants: modelled kernels against run 14's H200 measurements") {
  const auto hw = config::load_hardware(kRoot + "/hardware/h200.toml");
  // h200.toml calibrates the fused attention with cuDNN, h200-fa2.toml with FlashAttention-2
  // (SDPA's two fused backends as measured); the materialised paths read the same memory fit.
  // h200-fa2.toml also holds the eager kernel families' measured bandwidths (run 8).
  const auto cal_fa2 = hardware::read_calibration(kRoot + "/hardware/calibration/h200-fa2.toml");
  const hardware::CostModel cm(hw, hardware::Precision::bf16, &cal_fa2);
  const hardware::CostModel& cm_fa2 = cm;
  // Tolerance on an absolute time: 35% (the calibration's own attention fit has an rms error of
  // 16%, and the materialised bandwidth fraction is one number for every score-path kernel).
  const double tol = 0.35;
  for (const auto& r : kRun14) {
    CAPTURE(r.seq);
    CAPTURE(r.mbs);
    const Modelled fa2 = modelled(Attention::flash, r.seq, r.mbs, cm_fa2);
    const Modelled hf = modelled(Attention::hf_eager, r.seq, r.mbs, cm);
    const Modelled math = modelled(Attention::sdpa_math, r.seq, r.mbs, cm);
    const Modelled meg = modelled(Attention::megatron_unfused, r.seq, r.mbs, cm);
    const Modelled meg32 = modelled(Attention::megatron_unfused_fp32, r.seq, r.mbs, cm);
    MESSAGE("seq " << r.seq << " mbs " << r.mbs << " fwd/bwd ms, modelled (measured): flash " << fa2.f * 1e3 << " ("
                   << r.flash_f * 1e3 << ") / " << fa2.b * 1e3 << " (" << r.flash_b * 1e3 << "); hf_eager "
                   << hf.f * 1e3 << " (" << r.hf_f * 1e3 << ") / " << hf.b * 1e3 << " (" << r.hf_b * 1e3
                   << "); sdpa_math " << math.f * 1e3 << " (" << r.math_f * 1e3 << ") / " << math.b * 1e3 << " ("
                   << r.math_b * 1e3 << "); megatron_unfused " << meg.f * 1e3 << " / " << meg.b * 1e3
                   << " (bf16 stand-in " << r.meg_f * 1e3 << " / " << r.meg_b * 1e3 << ")");
    // Absolute times of the two eager variants measured as they are.
    CHECK(hf.f == doctest::Approx(r.hf_f).epsilon(tol).scale(0));
    CHECK(hf.b == doctest::Approx(r.hf_b).epsilon(tol).scale(0));
    CHECK(math.f == doctest::Approx(r.math_f).epsilon(tol).scale(0));
    CHECK(math.b == doctest::Approx(r.math_b).epsilon(tol).scale(0));
    // The ratios the issue names: HF eager 6-14x slower than flash in the forward (measured
    // 6.2, 9.9, 11.4, 14.1 over the rows); the math backend ~2x slower than HF eager (1.9-2.1).
    const double hf_over_flash = hf.f / fa2.f, hf_over_flash_measured = r.hf_f / r.flash_f;
    CAPTURE(hf_over_flash);
    CHECK(hf_over_flash == doctest::Approx(hf_over_flash_measured).epsilon(tol).scale(0));
    const double math_over_hf = math.f / hf.f;
    CAPTURE(math_over_hf);
    CHECK(math_over_hf == doctest::Approx(r.math_f / r.hf_f).epsilon(0.25).scale(0));
    CHECK(math.b / hf.b == doctest::Approx(r.math_b / r.hf_b).epsilon(0.25).scale(0));
    // Megatron's unfused path: run 14 timed a bf16 stand-in (masked_fill + torch.softmax, two
    // kernels where Megatron's scaled_upper_triang_masked_softmax is one), 1.39-1.47x faster
    // than HF eager. The modelled path (one fused kernel) must be at least that much faster
    // (the real fused kernel was not measured: no upper bound is claimed).
    CHECK(hf.f / meg.f >= (r.hf_f / r.meg_f) * (1 - 0.1));
    CHECK(hf.b / meg.b >= (r.hf_b / r.meg_b) * (1 - 0.1));
    // Megatron with --no-masked-softmax-fusion (softmax in fp32 through torch) sits between.
    CHECK(meg32.f > meg.f);
    CHECK(meg32.f < math.f);
  }
}

TEST_CASE("attention variants: flash and cudnn share kernels; the variant key maps the legacy flag") {
  const auto hw = config::load_hardware(kRoot + "/hardware/h200.toml");
  const hardware::CostModel cm(hw, hardware::Precision::bf16);
  const Modelled fl = modelled(Attention::flash, 4096, 1, cm), cu = modelled(Attention::cudnn, 4096, 1, cm);
  CHECK(fl.f == cu.f);
  CHECK(fl.b == cu.b);
  // Every materialised variant is slower than the fused kernel at seq 4096.
  for (Attention a : {Attention::hf_eager, Attention::sdpa_math, Attention::megatron_unfused,
                      Attention::megatron_unfused_fp32, Attention::torch_eager})
    CHECK(modelled(a, 4096, 1, cm).f > fl.f);
}
