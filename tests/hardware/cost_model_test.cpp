#include <doctest/doctest.h>

#include <cmath>

#include "hardware/cost_model.h"
#include "tests/hardware/test_helpers.h"

using namespace mfusim::hardware;
using mfusim::hardware::testing::h100;

namespace {
Kernel gemm(std::int64_t m, std::int64_t n, std::int64_t k) {
  Kernel g;
  g.kind = KernelKind::gemm;
  g.m = m, g.n = n, g.k = k;
  g.flops = 2.0 * m * n * k;
  g.bytes = 2.0 * (m * k + k * n + m * n);
  return g;
}
Kernel memory_kernel(double bytes, int count = 1) {
  Kernel k;
  k.kind = KernelKind::memory;
  k.bytes = bytes;
  k.count = count;
  return k;
}
Kernel attention(KernelKind kind, std::int64_t s, bool flash) {
  Kernel a;
  a.kind = kind;
  a.batch = 1, a.heads = 64, a.kv_heads = 8, a.seq_q = s, a.seq_kv = s, a.head_dim = 128;
  a.causal = true;
  a.flash = flash;
  return a;
}
}  // namespace

TEST_CASE("GEMM efficiency is in (0, 1] and grows with size (within wave-quantisation ripples)") {
  // Rule (docs/cost-model.md §1): eff = eff_max * sat(size) * sat(min dim) * quantisation <= eff_max < 1.
  const CostModel cm(h100(), Precision::bf16);
  double best = 0;
  for (std::int64_t s = 64; s <= 32768; s *= 2) {
    const double e = cm.gemm_efficiency(s, s, s);
    CHECK(e > 0);
    CHECK(e <= 1.0);
    CHECK(e >= 0.9 * best);   // monotone-ish: no dip of more than 10% below the best smaller square
    best = std::max(best, e);
  }
  // Skinny shapes stay in range too.
  for (std::int64_t m : {1, 7, 100, 1000, 100000})
    for (std::int64_t k : {1, 64, 4096}) {
      const double e = cm.gemm_efficiency(m, 8192, k);
      CHECK(e > 0);
      CHECK(e <= 1.0);
    }
}

TEST_CASE("large bf16 GEMM reaches ~80% of peak, as measured") {
  // H200 here: 8192^3 bf16 cuBLAS ran ~790 TFLOP/s = 0.80 of 989; H100 cuBLAS 75-80%.
  const CostModel cm(h100(), Precision::bf16, nullptr, true);
  const double e = cm.gemm_efficiency(8192, 8192, 8192);
  CHECK(e == doctest::Approx(0.80).epsilon(0.03));
  const Kernel g = gemm(8192, 8192, 8192);
  CHECK(cm.time(g) == doctest::Approx(g.flops / (989e12 * e)).scale(0));
}

TEST_CASE("wave quantisation: one tile more than the SMs costs a partial wave") {
  // NVIDIA Matrix Multiplication Background guide, "Wave quantization": 132 tiles of
  // 128x256 fill the 132 SMs of an H100 once; 133 need a second, mostly idle wave.
  const CostModel cm(h100(), Precision::bf16);
  REQUIRE(cm.sm_count() == 132);
  const double full = cm.gemm_efficiency(128 * 132, 256, 8192);
  const double spill = cm.gemm_efficiency(128 * 133, 256, 8192);
  CHECK(spill < 0.95 * full);   // measured on the H200 here: 677 -> 599 TFLOP/s (-11%)
}

TEST_CASE("roofline: memory-bound kernel time is bytes / achieved bandwidth") {
  // t = bytes / (0.89 * HBM bandwidth), 0.89 = device copy measured on the H200 here (4.26 of 4.8 TB/s).
  const CostModel cm(h100(), Precision::bf16, nullptr, /*cuda_graphs=*/true);
  CHECK(cm.memory_bandwidth() == doctest::Approx(0.89 * 3.35e12));
  const Kernel k = memory_kernel(1e9);
  CHECK(cm.time(k) == doctest::Approx(1e9 / (0.89 * 3.35e12)).scale(0));
  // A GEMM with m = 1 (matrix-vector) is memory-bound too (H200 here: 3.8 TB/s achieved).
  const Kernel gemv = gemm(1, 8192, 8192);
  CHECK(cm.time(gemv) == doctest::Approx(gemv.bytes / cm.memory_bandwidth()).scale(0));
  // No kernel beats the bandwidth roofline.
  for (std::int64_t depth : {16, 128, 1024, 8192}) {
    const Kernel g = gemm(8192, 8192, depth);
    CHECK(cm.time(g) >= g.bytes / cm.memory_bandwidth());
    CHECK(cm.time(g) >= g.flops / cm.peak_flops());
  }
}

TEST_CASE("launch overhead is per kernel and disappears under CUDA graphs") {
  // t = count * (roofline + launch_overhead); launch_overhead = 0 with cuda_graphs.
  const CostModel eager(h100(), Precision::bf16, nullptr, false);
  const CostModel graphs(h100(), Precision::bf16, nullptr, true);
  const Kernel k = memory_kernel(1e6, 10);
  CHECK(eager.launch_overhead() == doctest::Approx(4e-6).scale(0));
  CHECK(graphs.launch_overhead() == 0.0);
  CHECK(eager.launch_time(k) == doctest::Approx(10 * 4e-6).scale(0));
  CHECK(graphs.launch_time(k) == 0.0);
  CHECK(eager.time(k) - graphs.time(k) == doctest::Approx(10 * 4e-6).scale(0));
  CHECK(graphs.time(k) == doctest::Approx(10 * 1e6 / graphs.memory_bandwidth()).scale(0));
}

TEST_CASE("flash attention runs at the documented fraction of peak; backward is 2.5x the forward FLOPs") {
  // FlashAttention-3 (Shah et al. 2024): bf16 fwd up to 740 TFLOP/s (75%) on H100;
  // default fwd 0.65, bwd 0.52, times s / (s + 256). Causal halves the 4*b*h*s^2*d FLOPs.
  const CostModel cm(h100(), Precision::bf16, nullptr, true);
  const std::int64_t s = 4096;
  const double fwd_flops = 4.0 * 1 * 64 * s * s * 128 * 0.5;
  const double sat = s / (s + 256.0);
  CHECK(cm.time(attention(KernelKind::attention_fwd, s, true)) == doctest::Approx(fwd_flops / (989e12 * 0.65 * sat)).scale(0));
  CHECK(cm.time(attention(KernelKind::attention_bwd, s, true)) ==
        doctest::Approx(2.5 * fwd_flops / (989e12 * 0.52 * sat)).scale(0));
  // The shape wins over given (model) FLOPs; without a shape the given FLOPs are used.
  Kernel given = attention(KernelKind::attention_fwd, s, true);
  given.flops = 1e12;
  CHECK(cm.time(given) == doctest::Approx(fwd_flops / (989e12 * 0.65 * sat)).scale(0));
  Kernel shapeless;
  shapeless.kind = KernelKind::attention_fwd;
  shapeless.flash = true;
  shapeless.flops = 1e12;
  CHECK(cm.time(shapeless) == doctest::Approx(1e12 / (989e12 * 0.65)).scale(0));
}

TEST_CASE("materialised attention is memory-bound on the s x s scores and slower than flash") {
  // Unfused path: 12 bytes of HBM traffic per score forward (docs/cost-model.md §2).
  const CostModel cm(h100(), Precision::bf16, nullptr, true);
  for (std::int64_t s : {2048, 8192}) {
    CHECK(cm.time(attention(KernelKind::attention_fwd, s, false)) > cm.time(attention(KernelKind::attention_fwd, s, true)));
    CHECK(cm.time(attention(KernelKind::attention_bwd, s, false)) > cm.time(attention(KernelKind::attention_bwd, s, true)));
  }
  const double t1 = cm.time(attention(KernelKind::attention_fwd, 4096, false));
  const double t2 = cm.time(attention(KernelKind::attention_fwd, 8192, false));
  CHECK(t2 / t1 == doctest::Approx(4.0).epsilon(0.1));   // quadratic in s
  const double score_bytes = 64.0 * 8192 * 8192 * 12;
  CHECK(t2 > score_bytes / cm.memory_bandwidth());
  // More kernels are launched when unfused.
  const CostModel eager(h100(), Precision::bf16);
  CHECK(eager.launch_time(attention(KernelKind::attention_fwd, 4096, false)) == doctest::Approx(4 * 4e-6).scale(0));
  CHECK(eager.launch_time(attention(KernelKind::attention_fwd, 4096, true)) == doctest::Approx(4e-6).scale(0));
}

TEST_CASE("one piece of the materialised path (FLOPs and bytes given) is a batched GEMM, one launch") {
  // models/attention_kernels.cpp emits QK^T, attn*V and their gradients separately; the
  // cost model must not add the whole path's score traffic to each piece.
  const CostModel cm(h100(), Precision::bf16, nullptr, true);
  Kernel qk = attention(KernelKind::attention_fwd, 4096, false);
  qk.flops = 2.0 * 64 * 4096.0 * 4096 * 128;
  qk.bytes = 2.0 * 64 * 4096.0 * 4096;
  // With k = head_dim = 128 the piece is bound by writing the s x s scores (arithmetic
  // intensity 2*128/2 = 128 FLOP/byte < 989/2.98 = 332 on H100): its time is the score
  // bytes at achieved bandwidth. The k/(k + 380) epilogue term of dense GEMMs is that same
  // write and is not charged again (H200 here: QK^T + attn*V for 32 heads at s = 4096 in
  // 0.69 ms, ~3.1 TB/s, i.e. memory-bound, not ~200 TFLOP/s compute-bound).
  CHECK(qk.flops / (989e12 * 0.84) < qk.bytes / cm.memory_bandwidth());
  CHECK(cm.time(qk) == doctest::Approx(qk.bytes / cm.memory_bandwidth()).scale(0));
  const CostModel eager(h100(), Precision::bf16);
  CHECK(eager.launch_time(qk) == doctest::Approx(4e-6).scale(0));
}

TEST_CASE("a calibration's fits replace the defaults") {
  // hardware/calibration.h: time = overhead + 2mnk / (peak * eff),
  // eff = eff_max * (1 - exp(-(mnk)^(1/3) / knee)); the exact-shape table first.
  Calibration cal;
  cal.has_gemm = true;
  cal.gemm.eff_max = 0.6;
  cal.gemm.knee = 300;
  cal.gemm.overhead_s = 5e-6;
  cal.gemm_table = {{4096, 4096, 4096, 1.234e-3}, {1024, 1024, 1024, 7e-6}};
  cal.has_memory = true;
  cal.memory.achieved_bandwidth = 3.0e12;
  cal.memory.launch_overhead_s = 2e-6;
  cal.has_attention = true;
  cal.attention.flash_fwd_eff = 0.4;
  cal.attention.flash_bwd_eff = 0.3;
  cal.attention.overhead_s = 1e-5;

  const CostModel cm(h100(), Precision::bf16, &cal, false);
  const double eff = 0.6 * (1 - std::exp(-std::cbrt(2048.0 * 8192 * 1024) / 300));
  CHECK(cm.gemm_efficiency(2048, 8192, 1024) == doctest::Approx(eff));
  const Kernel g = gemm(2048, 8192, 1024);
  CHECK(cm.time(g) == doctest::Approx(5e-6 + g.flops / (989e12 * eff) + 2e-6).scale(0));
  CHECK(cm.time(gemm(4096, 4096, 4096)) == doctest::Approx(1.234e-3 + 2e-6).scale(0));
  CHECK(cm.time(gemm(1024, 1024, 1024)) == doctest::Approx(7e-6 + 2e-6).scale(0));
  CHECK(cm.memory_bandwidth() == 3.0e12);
  CHECK(cm.launch_overhead() == 2e-6);
  const Kernel a = attention(KernelKind::attention_fwd, 4096, true);
  const double flops = 4.0 * 64 * 4096.0 * 4096 * 128 * 0.5;
  CHECK(cm.time(a) == doctest::Approx(1e-5 + flops / (989e12 * 0.4) + 2e-6).scale(0));
}

TEST_CASE("fp8 uses the fp8 peak, and bf16 when the GPU has none") {
  HardwareSpec hw = h100();
  CHECK(CostModel(hw, Precision::fp8).peak_flops() == 1979e12);
  hw.peak_flops_fp8 = 0;
  CHECK(CostModel(hw, Precision::fp8).peak_flops() == 989e12);
}

TEST_CASE("fp8: attention marked keep_bf16 runs at the bf16 peak, the rest at the fp8 peak") {
  // Transformer Engine keeps DotProductAttention in bf16 unless fp8_dpa (docs/cost-model.md).
  const CostModel fp8(h100(), Precision::fp8);
  const CostModel bf16(h100(), Precision::bf16);
  Kernel a = attention(KernelKind::attention_fwd, 8192, true);
  const double fast = fp8.time(a);
  a.keep_bf16 = true;
  CHECK(fp8.time(a) == doctest::Approx(bf16.time(a)).scale(0));
  CHECK(fp8.time(a) == doctest::Approx(2 * fast).epsilon(0.02).scale(0));   // 1979 vs 989 TFLOP/s, compute-bound
  Kernel g = gemm(8192, 8192, 8192);
  g.keep_bf16 = true;   // the LM head
  CHECK(fp8.time(g) == doctest::Approx(bf16.time(g)).scale(0));
  g.keep_bf16 = false;
  CHECK(fp8.time(g) < 0.65 * bf16.time(g));   // 0.70 x 1979 vs 0.84 x 989 TFLOP/s
}

TEST_CASE("calibrated fp8 GEMMs read [gemm_fp8] and its table, never the bf16 fit or table") {
  Calibration cal;
  cal.has_gemm = true;
  cal.gemm.peak_flops = 989e12;
  cal.gemm.eff_max = 0.73;
  cal.gemm.knee = 225;
  cal.gemm.overhead_s = 7e-6;
  cal.gemm_table = {{4096, 4096, 4096, 1.0e-3}};
  const CostModel no_fp8_fit(h100(), Precision::fp8, &cal, true);
  // The bf16 table's shape is not an fp8 time: an fp8 GEMM with no fp8 measurement takes the
  // datasheet fp8 curve.
  const CostModel ds8(h100(), Precision::fp8, nullptr, true);
  CHECK(no_fp8_fit.time(gemm(4096, 4096, 4096)) == doctest::Approx(ds8.time(gemm(4096, 4096, 4096))).scale(0));
  CHECK(no_fp8_fit.gemm_efficiency(8192, 8192, 8192) == doctest::Approx(ds8.gemm_efficiency(8192, 8192, 8192)));

  cal.has_gemm_fp8 = true;
  cal.gemm_fp8.peak_flops = 1979e12;
  cal.gemm_fp8.eff_max = 0.656;
  cal.gemm_fp8.knee = 297;
  cal.gemm_fp8.overhead_s = 9e-6;
  cal.gemm_fp8_table = {{4096, 4096, 4096, 0.25e-3}};
  const CostModel cm(h100(), Precision::fp8, &cal, true);
  CHECK(cm.time(gemm(4096, 4096, 4096)) == doctest::Approx(0.25e-3).scale(0));
  const double eff = 0.656 * (1 - std::exp(-std::cbrt(2048.0 * 8192 * 1024) / 297));
  CHECK(cm.gemm_efficiency(2048, 8192, 1024) == doctest::Approx(eff));
  const Kernel g = gemm(2048, 8192, 1024);
  CHECK(cm.time(g) == doctest::Approx(9e-6 + g.flops / (1979e12 * eff)).scale(0));
  // A bf16-kept GEMM in the same fp8 model reads the bf16 table and fit.
  Kernel h = gemm(4096, 4096, 4096);
  h.keep_bf16 = true;
  CHECK(cm.time(h) == doctest::Approx(1.0e-3).scale(0));
  Kernel h2 = gemm(2048, 8192, 1024);
  h2.keep_bf16 = true;
  const double eff16 = 0.73 * (1 - std::exp(-std::cbrt(2048.0 * 8192 * 1024) / 225));
  CHECK(cm.time(h2) == doctest::Approx(7e-6 + h2.flops / (989e12 * eff16)).scale(0));
}

TEST_CASE("a measured GEMM table transfers to a GPU of another peak as efficiency, not seconds") {
  Calibration cal;
  cal.has_gemm = true;
  cal.gemm.peak_flops = 989e12;
  cal.gemm.eff_max = 0.73;
  cal.gemm.knee = 225;
  cal.gemm.overhead_s = 7e-6;
  cal.gemm_table = {{4096, 4096, 4096, 207e-6}};
  HardwareSpec slow = h100();
  slow.peak_flops_bf16 = 148e12;   // H20
  const CostModel same(h100(), Precision::bf16, &cal, true);
  const CostModel other(slow, Precision::bf16, &cal, true);
  CHECK(same.time(gemm(4096, 4096, 4096)) == doctest::Approx(207e-6).scale(0));
  CHECK(other.time(gemm(4096, 4096, 4096)) == doctest::Approx(7e-6 + 200e-6 * 989.0 / 148.0).scale(0));
  // Never faster than the peak allows.
  CHECK(gemm(4096, 4096, 4096).flops / other.time(gemm(4096, 4096, 4096)) < 148e12);
}
