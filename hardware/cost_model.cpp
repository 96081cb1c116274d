// Roofline cost model; formulas, defaults and sources in docs/cost-model.md.
#include "hardware/cost_model.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>

#include "hardware/interference.h"

namespace mfusim::hardware {

namespace {

// Output tiles cuBLAS chooses between on Hopper, with the throughput of a
// full wave of each relative to the 128x256 tile (smaller tiles reuse less
// data per loaded operand). NVIDIA, "Matrix Multiplication Background User's
// Guide", sections "Tile quantization" and "Wave quantization".
struct Tile { std::int64_t tm, tn; double rate; };
constexpr Tile kTiles[] = {{128, 256, 1.0}, {256, 128, 1.0}, {128, 128, 0.92}, {64, 128, 0.65}};

constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Fraction of a full-wave throughput left after padding to whole tiles and
// whole waves of `sms` thread blocks, best over the tiles above.
// - A partial last wave is not fully lost: Hopper cuBLAS kernels are
//   persistent / stream-K-like and recover kWaveTailRecovery of the idle tail
//   (measured here: 133 vs 132 tiles of 128x256 cost 11%, not the 50% of a
//   strict wave count).
// - With fewer tiles than SMs, split-K divides k over up to sms/tiles blocks
//   per tile (slices >= 256), at 0.9 of the rate for the reduction pass.
constexpr double kWaveTailRecovery = 0.85;

double quantisation(std::int64_t m, std::int64_t n, std::int64_t k, int sms) {
  double best = 0;
  for (const Tile& t : kTiles) {
    const std::int64_t tiles = ceil_div(m, t.tm) * ceil_div(n, t.tn);
    const std::int64_t splits = std::max<std::int64_t>(1, std::min<std::int64_t>(sms / tiles, k / 256));
    const std::int64_t blocks = tiles * splits;
    const std::int64_t full = blocks / sms;
    const double tail = static_cast<double>(blocks - full * sms) / sms;
    const double waves = full + (tail > 0 ? tail + (1.0 - tail) * (1.0 - kWaveTailRecovery) : 0.0);
    const double useful = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(splits);
    const double issued = waves * sms * static_cast<double>(t.tm * t.tn);
    best = std::max(best, (splits > 1 ? 0.9 : 1.0) * t.rate * useful / issued);
  }
  return best;
}

double saturate(double x, double knee) { return 1.0 - std::exp(-x / knee); }

}  // namespace

int sm_count_for(const HardwareSpec& hw) {
  if (hw.sms > 0) return hw.sms;   // the hardware file's own figure (sms)
  std::string name = hw.name;
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (name.find("a100") != std::string::npos || name.find("a800") != std::string::npos) return 108;
  if (name.find("b200") != std::string::npos || name.find("b100") != std::string::npos ||
      name.find("gb200") != std::string::npos)
    return 148;
  return 132;   // H100 SXM, H200, H800
}

CostModel::CostModel(const HardwareSpec& hw, Precision precision, const Calibration* cal, bool cuda_graphs)
    : hw_(hw), precision_(precision), cal_(cal), cuda_graphs_(cuda_graphs) {
  const bool fp8 = precision == Precision::fp8 && hw.peak_flops_fp8 > 0;
  fp8_ = fp8;
  peak_ = fp8 ? hw.peak_flops_fp8 : hw.peak_flops_bf16;   // no fp8 units: runs at bf16
  gemm_eff_max_ = fp8 ? CostDefaults::gemm_eff_max_fp8 : CostDefaults::gemm_eff_max_bf16;
  if (!(peak_ > 0) || !(hw.hbm_bandwidth > 0))
    throw std::invalid_argument("hardware '" + hw.name + "': peak FLOP/s and HBM bandwidth must be > 0");
  bandwidth_ = hw.hbm_bandwidth * CostDefaults::hbm_eff;
  launch_ = hw.launch_overhead;
  if (cal_ && cal_->has_memory) {
    // The fit stores an absolute bandwidth measured on the calibration's GPU. Used on
    // another GPU of the same family (an H200 file for an H100 profile), the achieved
    // fraction of the datasheet bandwidth transfers, not the bytes/s: scale by the
    // ratio of datasheet bandwidths (the calibration's reference is attention.hbm_bandwidth).
    if (cal_->memory.achieved_bandwidth > 0) {
      const double ref = cal_->attention.hbm_bandwidth;
      bandwidth_ = cal_->memory.achieved_bandwidth * (ref > 0 ? hw.hbm_bandwidth / ref : 1.0);
    }
    // Eager kernel families measured at the runs' sizes, scaled like the copy fit.
    const double ref = cal_->attention.hbm_bandwidth;
    for (int f = 1; f < kMemFamilies; ++f)
      if (cal_->memory.family_bandwidth[f] > 0)
        family_bw_[f] = cal_->memory.family_bandwidth[f] * (ref > 0 ? hw.hbm_bandwidth / ref : 1.0);
    // The top-k is a radix select in each row's CTA, bound by the SMs, not HBM (run 28, on the H200's
    // 132 SMs): its rate transfers by the SM count (unscaled where the profile gives none; H100, H800
    // and H200 have the same 132 SMs and clocks). It is priced as a memory kernel, so beside held SMs
    // it takes the memory-bound curve (no SM term): not measured for it.
    if (const double tk = cal_->memory.family_bandwidth[static_cast<int>(MemFamily::topk)]; tk > 0)
      family_bw_[static_cast<int>(MemFamily::topk)] = tk * (hw.sms > 0 ? hw.sms / static_cast<double>(kMeasuredSms) : 1.0);
    if (cal_->memory.launch_overhead_s > 0) launch_ = cal_->memory.launch_overhead_s;
    if (cal_->memory.graph_launch_overhead_s > 0) gap_ = cal_->memory.graph_launch_overhead_s;
  }
  // Host (CPU) cost to issue one kernel: the framework's per-op cost when the
  // hardware profile gives one (eager PyTorch: hardware.host_overhead_us,
  // docs/fidelity.md), else the bare launch cost. A torch.compile'd region is one
  // call of host_compiled_. CUDA graphs replay without host work.
  host_ = hw.host_overhead > 0 ? hw.host_overhead : launch_;
  host_compiled_ = hw.host_compiled_overhead > 0 ? hw.host_compiled_overhead : host_;
  host_backward_ = hw.host_backward_overhead > 0 ? hw.host_backward_overhead : host_;
  host_checkpoint_ = hw.host_checkpoint_overhead;
  host_recompute_ = hw.host_recompute_overhead;
  if (cuda_graphs_) launch_ = host_ = host_compiled_ = host_backward_ = host_checkpoint_ = host_recompute_ = 0;
  sms_ = sm_count_for(hw);
  power_scale_ = hardware::power_time_scale(cal_, hw);
  if (hw.attention_sustained_ratio > 0) attn_clock_ = 1.0 / hw.attention_sustained_ratio;
  auto load = [](const std::vector<GemmSample>& src, std::vector<TableEntry>& dst) {
    dst.reserve(src.size());
    for (const GemmSample& s : src)
      if (s.seconds > 0) dst.push_back({s.m, s.n, s.k, s.seconds});
    std::sort(dst.begin(), dst.end(), [](const TableEntry& a, const TableEntry& b) {
      return std::tie(a.m, a.n, a.k) < std::tie(b.m, b.n, b.k);
    });
  };
  if (cal_ && cal_->has_gemm) load(cal_->gemm_table, table_);
  if (cal_ && cal_->has_gemm_fp8) load(cal_->gemm_fp8_table, table_fp8_);
}

void CostModel::set_gemm_duty(double duty) {
  gemm_duty_ = std::clamp(std::isfinite(duty) ? duty : 1.0, 0.0, 1.0);
  clock_scale_ = gemm_clock_ratio(cal_, gemm_duty_);
}

double CostModel::peak_flops() const { return peak_; }
double CostModel::memory_bandwidth() const { return bandwidth_; }
double CostModel::launch_overhead() const { return launch_; }

double CostModel::gemm_efficiency(std::int64_t m, std::int64_t n, std::int64_t k) const {
  return gemm_eff(fp8_, m, n, k);
}

// The calibration's fit of the kernel's precision ([gemm] for bf16, [gemm_fp8] for fp8);
// an fp8 GEMM with no measured fp8 fit takes the datasheet fp8 curve, not the bf16 fit
// (eff_max 0.733 bf16 vs 0.656 fp8 measured on the H200: cuBLASLt's fp8 kernels reach a
// smaller fraction of their doubled peak).
double CostModel::gemm_eff(bool fp8, std::int64_t m, std::int64_t n, std::int64_t k) const {
  const GemmFit* fit = nullptr;
  if (cal_ && fp8 && cal_->has_gemm_fp8) fit = &cal_->gemm_fp8;
  if (cal_ && !fp8 && cal_->has_gemm) fit = &cal_->gemm;
  if (fit && fit->eff_max > 0) {
    const double eff_max = std::min(fit->eff_max, 1.0);
    if (m <= 0 || n <= 0 || k <= 0 || !(fit->knee > 0)) return eff_max;
    const double size = std::cbrt(static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k));
    return std::clamp(eff_max * saturate(size, fit->knee), 1e-6, 1.0);
  }
  const double top = fp8 ? CostDefaults::gemm_eff_max_fp8 : CostDefaults::gemm_eff_max_bf16;
  if (m <= 0 || n <= 0 || k <= 0) return top;
  const double size = std::cbrt(static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k));
  // Small m and n are paid for by tile padding and idle SMs (quantisation);
  // a short k by the tile's fixed prologue/epilogue, k / (k + k_knee).
  const double eff = top * saturate(size, CostDefaults::gemm_size_knee) *
                     static_cast<double>(k) / (static_cast<double>(k) + CostDefaults::gemm_k_knee) * quantisation(m, n, k, sms_);
  return std::clamp(eff, 1e-6, 1.0);
}

// Efficiency of one matrix of a batched GEMM over the s x s scores (QK^T, attn*V and
// their gradients): the same total-work saturation and tile/wave quantisation as
// gemm_efficiency, without the k / (k + k_knee) epilogue term. With k = head_dim
// (128) that epilogue is the write (or read) of the s x s scores itself, which the
// kernel's bytes already charge at HBM bandwidth; counting it twice made these
// pieces run at ~190 TFLOP/s on H100 where the H200 here measured them
// memory-bound (32 heads, s = 4096: 0.69 ms for both bmm, ~3.1 TB/s).
double CostModel::batched_gemm_efficiency(std::int64_t m, std::int64_t n, std::int64_t k, bool fp8) const {
  const double top = fp8 ? CostDefaults::gemm_eff_max_fp8 : CostDefaults::gemm_eff_max_bf16;
  if (m <= 0 || n <= 0 || k <= 0) return top;
  const double size = std::cbrt(static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k));
  const GemmFit* fit = nullptr;
  if (cal_ && fp8 && cal_->has_gemm_fp8) fit = &cal_->gemm_fp8;
  if (cal_ && !fp8 && cal_->has_gemm) fit = &cal_->gemm;
  if (fit && fit->eff_max > 0 && fit->knee > 0)
    return std::clamp(std::min(fit->eff_max, 1.0) * saturate(size, fit->knee), 1e-6, 1.0);
  return std::clamp(top * saturate(size, CostDefaults::gemm_size_knee) * quantisation(m, n, k, sms_), 1e-6, 1.0);
}

// A measured exact shape's seconds on this GPU. The table was measured on the calibration's
// GPU at fit.peak_flops; what transfers to another GPU of the same architecture is the
// fraction of peak the kernel reached, not its seconds: the time above the fit's fixed
// per-call overhead scales by the ratio of peaks (1 on H100 / H200 / H800 bf16 and fp8,
// 6.7 on the H20). A table used on the GPU it was measured on is returned as measured.
static double table_seconds(double measured, const GemmFit& fit, double peak) {
  if (!(fit.peak_flops > 0) || !(peak > 0) || std::abs(fit.peak_flops / peak - 1.0) < 1e-3) return measured;
  const double fixed = std::clamp(fit.overhead_s, 0.0, measured);
  return fixed + (measured - fixed) * fit.peak_flops / peak;
}

double CostModel::gemm_seconds(const Kernel& kn) const {
  // Accumulating into the output (Kernel::accumulate_bytes): the epilogue's extra traffic over every
  // weight matrix the call writes, its exposed share as measured (CostDefaults, run 19). A grouped call's
  // rate (grouped_eff) is a tile efficiency of its main loop: it divides the GEMM, not this traffic.
  double epilogue = 0;
  if (kn.accumulate_bytes > 0) {
    const bool f32 = kn.accumulate_bytes >= 4;
    const double extra = static_cast<double>(kn.m) * static_cast<double>(kn.n) * std::max(1, kn.accumulate_outputs) *
                         (f32 ? 6.0 : 2.0);
    epilogue = extra * (f32 ? CostDefaults::wgrad_accumulate_share_fp32 : CostDefaults::wgrad_accumulate_share_bf16) /
               bandwidth_;
  }
  const double rate = kn.mxfp8 && runs_fp8(kn) ? CostDefaults::mxfp8_gemm_rate : 1.0;
  return gemm_core_seconds(kn) / (kn.grouped_eff > 0 ? kn.grouped_eff : 1.0) / rate + epilogue;
}

double CostModel::gemm_core_seconds(const Kernel& kn) const {
  const double flops = kn.flops > 0 ? kn.flops : 2.0 * static_cast<double>(kn.m) * kn.n * kn.k;
  const bool fp8 = runs_fp8(kn);
  const double bytes = kn.bytes > 0 ? kn.bytes : 2.0 * (static_cast<double>(kn.m) * kn.k +
                                                        static_cast<double>(kn.k) * kn.n +
                                                        static_cast<double>(kn.m) * kn.n);
  const double memory = bytes / bandwidth_;
  const double peak = peak_of(kn);
  // The profile's ceiling at a training step's clock (hardware.gemm_sustained_eff_*, §2h): no GEMM, measured
  // alone at the unloaded clock or on the datasheet curve, runs faster than that fraction of the peak.
  const double ceiling = hw_.gemm_sustained_eff(fp8 ? Precision::fp8 : Precision::bf16);
  const double sustained = ceiling > 0 ? flops / (peak * ceiling) * power_scale_ : 0.0;   // at the datasheet limit
  const double floor = std::max(memory, sustained);
  const bool measured = cal_ && (fp8 ? cal_->has_gemm_fp8 : cal_->has_gemm);
  if (measured) {
    const GemmFit& fit = fp8 ? cal_->gemm_fp8 : cal_->gemm;
    const std::vector<TableEntry>& table = fp8 ? table_fp8_ : table_;
    if (!table.empty()) {
      const TableEntry key{kn.m, kn.n, kn.k, 0};
      auto it = std::lower_bound(table.begin(), table.end(), key, [](const TableEntry& a, const TableEntry& b) {
        return std::tie(a.m, a.n, a.k) < std::tie(b.m, b.n, b.k);
      });
      if (it != table.end() && it->m == kn.m && it->n == kn.n && it->k == kn.k)
        return std::max(table_seconds(it->seconds, fit, peak) * clock_scale_ * power_scale_, floor);
    }
    const double compute = fit.overhead_s + flops / (peak * gemm_eff(fp8, kn.m, kn.n, kn.k));
    return std::max(compute * clock_scale_ * power_scale_, floor);
  }
  return std::max(flops / (peak * gemm_eff(fp8, kn.m, kn.n, kn.k)) * power_scale_, floor);
}

double CostModel::attention_seconds(const Kernel& kn) const {
  const bool bwd = kn.kind == KernelKind::attention_bwd;
  const bool has_shape = kn.batch > 0 && kn.heads > 0 && kn.seq_q > 0 && kn.seq_kv > 0 && kn.head_dim > 0;
  // Score and context matmuls: 2 * b * heads * s_q * s_kv * (d_qk + d_v) per forward (4 * ... * d when
  // the value head is as wide as the query's; MLA's is narrower: 192 + 128).
  const double full_fwd =
      has_shape ? 2.0 * static_cast<double>(kn.batch) * kn.heads * kn.seq_q * kn.seq_kv * (kn.head_dim + kn.v_dim()) : 0.0;
  const bool cal = cal_ && cal_->has_attention;
  // A FlashAttention-2 call takes the calibration's FlashAttention-2 fit when it has one (run 31); a call of
  // FlashAttention in Triton its own fit (run 42), else FlashAttention-2's, the faster kernel (a lower bound).
  const AttentionFit* fit = cal ? &cal_->attention : nullptr;
  if (cal && kn.flash && kn.triton_fa && cal_->has_attention_triton) fit = &cal_->attention_triton;
  else if (cal && kn.flash && (kn.fa2 || kn.triton_fa) && cal_->has_attention_fa2) fit = &cal_->attention_fa2;
  // bf16 unless the kernel runs in fp8 (features.fp8_attention; models/ marks the others keep_bf16).
  const double peak = peak_of(kn);
  const bool fp8 = runs_fp8(kn);
  const double overhead = cal ? fit->overhead_s : 0.0;

  if (kn.flash) {
    // At a training step's clock (hardware.attention_sustained_ratio, docs/cost-model.md §2h): only a fit of
    // calls timed one at a time (the sequence-knee form, as cuDNN frontend's tables are fitted) is at the
    // unloaded clock; a back-to-back fit (the tile and program forms, as the probe measures) already holds the
    // step's clock, and the datasheet defaults are fractions measured that way on the H200.
    const double clock = cal && !fit->tile_form && !(fit->bwd_program_tile_s > 0) ? attn_clock_ : 1.0;
    // Dropout on the probabilities inside the call (calibration.h AttentionFit, run 48): the measured time per
    // counted score, on this GPU's SMs against the measured GPU's; not priced without a measurement.
    // FlashAttention in Triton has no measurement of its own: FlashAttention-2's, as its fit falls back (a lower bound).
    const AttentionFit* dfit = fit;
    if (cal && kn.triton_fa && cal_->has_attention_fa2) dfit = &cal_->attention_fa2;
    double dropout = 0;
    if (cal && kn.dropout && has_shape && dfit->dropout_sms > 0)
      dropout = (bwd ? dfit->dropout_bwd_s_per_score : dfit->dropout_fwd_s_per_score) * static_cast<double>(kn.batch) *
                kn.heads * kn.seq_q * kn.seq_kv * (kn.causal ? 0.5 : 1.0) * dfit->dropout_sms / std::max(1, sms_) *
                power_scale_ * clock;
    // Executed FLOPs follow from the shape: causal halves the score and
    // context matmuls, and the backward recomputes the scores (2.5x the
    // forward). Megatron's model-FLOP count in kn.flops (full s^2, 2x) is used
    // only when no shape is given.
    double flops = has_shape ? full_fwd * (kn.causal ? 0.5 : 1.0) * (bwd ? CostDefaults::flash_bwd_flop_ratio : 1.0)
                             : kn.flops;
    double eff = 0;
    const double cal_eff = cal ? (bwd ? fit->flash_bwd_eff : fit->flash_fwd_eff) : 0.0;
    if (cal && bwd && has_shape && fit->bwd_program_tile_s > 0 && fit->program_sms > 0 && fit->peak_flops > 0) {
      // The backward's program form (calibration.h AttentionFit, runs 42-43): its launch in waves of programs
      // on this GPU's SMs, each SM's rate the measured GPU's scaled by this GPU's peak per SM (the kernel runs
      // bf16: models/ marks it keep_bf16); its launches' own intercepts stand for the overhead.
      const double sm_speed = (peak / sms_) / (fit->peak_flops / fit->program_sms);
      const double scale = (static_cast<double>(kn.head_dim) + kn.v_dim()) / 256.0 * power_scale_ / sm_speed;
      const double t = triton_bwd_program_seconds(*fit, static_cast<double>(kn.batch), static_cast<double>(kn.heads),
                                                  static_cast<double>(kn.seq_q), static_cast<double>(kn.seq_kv), kn.causal,
                                                  scale, sms_);
      return std::max(t, kn.bytes / bandwidth_) + dropout;
    }
    if (cal_eff > 0 && fit->tile_form && has_shape) {
      // The tile form (calibration.h AttentionFit): executed tiles over counted ones, the knee on the
      // call's whole work.
      const auto& a = *fit;
      const AttentionTiles tl = attention_tiles(static_cast<double>(kn.batch), static_cast<double>(kn.heads),
                                                static_cast<double>(kn.seq_q), static_cast<double>(kn.seq_kv), kn.causal,
                                                a.diagonal_tile_weight);
      const double knee = bwd ? a.flash_bwd_tile_knee : a.flash_fwd_tile_knee;
      eff = cal_eff * tl.executed / (tl.executed + knee);
      flops *= tl.executed / tl.counted;
    } else if (cal_eff > 0) {
      // The calibration fits both efficiencies against the FLOPs counted here
      // (hardware/calibration.cpp: causal halves, backward = 2.5 x forward).
      eff = cal_eff;
      const double knee = bwd ? fit->flash_bwd_seq_knee : fit->flash_fwd_seq_knee;
      if (knee > 0 && kn.seq_kv > 0) eff *= static_cast<double>(kn.seq_kv) / (static_cast<double>(kn.seq_kv) + knee);
    } else {
      const double s = kn.seq_kv > 0 ? static_cast<double>(kn.seq_kv) : 1e9;
      eff = (bwd ? CostDefaults::flash_bwd_eff : CostDefaults::flash_fwd_eff) * s / (s + CostDefaults::flash_seq_knee);
    }
    return overhead + std::max(flops / (peak * std::min(eff, 1.0)) * power_scale_ * clock, kn.bytes / bandwidth_) +
           dropout;
  }

  // One piece of the materialised path (models/ emits QK^T, attn*V and their
  // gradients as separate batched GEMMs, each with its FLOPs and bytes, and the
  // softmax passes as memory kernels): a batched GEMM over the s x s scores.
  if (kn.flops > 0 && kn.bytes > 0) {
    double bw = bandwidth_;
    if (cal && cal_->attention.materialized_bw_eff > 0) bw = hw_.hbm_bandwidth * cal_->attention.materialized_bw_eff;
    // The piece's own m, n, k (QK^T: s_q x s_kv x d; attn*V: s_q x d x s_kv; ...) are not
    // carried; the s x s side sets the tile count, d the reduction or the output width.
    const double eff = has_shape ? batched_gemm_efficiency(kn.seq_q, kn.seq_kv, kn.head_dim, fp8)
                                 : (fp8 ? CostDefaults::gemm_eff_max_fp8 : CostDefaults::gemm_eff_max_bf16);
    // An fp32 matmul (SDPA's math backend) runs on the CUDA cores at their fp32 peak;
    // the tile efficiency of the bf16 fit stands in for cuBLAS's SGEMM (config/checks.cpp
    // refuses such a scenario on a profile without peak_tflops_fp32).
    const double piece_peak = kn.fp32 && hw_.peak_flops_fp32 > 0 ? hw_.peak_flops_fp32 : peak;
    return std::max(kn.flops / (piece_peak * eff) * power_scale_, kn.bytes / bw);
  }
  // The whole materialised attention given by its shape only: batched matmuls
  // on the full s x s (the mask is applied, not skipped) plus softmax/dropout
  // passes over the scores in HBM.
  const double matmul_flops = has_shape ? full_fwd * (bwd ? 2.0 : 1.0) : kn.flops;
  const double matmul =
      matmul_flops / (peak * batched_gemm_efficiency(kn.seq_q, kn.seq_kv, kn.head_dim, fp8)) * power_scale_;
  const double per_score = bwd ? CostDefaults::materialized_bwd_bytes_per_score
                               : CostDefaults::materialized_fwd_bytes_per_score;
  const double scores = has_shape ? static_cast<double>(kn.batch) * kn.heads * kn.seq_q * kn.seq_kv * per_score : 0.0;
  double bw = bandwidth_;
  if (cal && cal_->attention.materialized_bw_eff > 0) bw = hw_.hbm_bandwidth * cal_->attention.materialized_bw_eff;
  return overhead + matmul + std::max(scores, kn.bytes) / bw;
}

double CostModel::memory_seconds(const Kernel& kn) const {
  const double fb = family_bw_[static_cast<int>(kn.family)];
  return std::max(kn.bytes / (fb > 0 ? fb : bandwidth_), kn.flops / (peak_ * gemm_eff_max_) * power_scale_);
}

int CostModel::launches_per_kernel(const Kernel& kn) const {
  if (kn.flops > 0 && kn.bytes > 0) return 1;   // one piece of the materialised path
  if (kn.kind == KernelKind::attention_fwd && !kn.flash) return CostDefaults::materialized_fwd_kernels;
  if (kn.kind == KernelKind::attention_bwd && !kn.flash) return CostDefaults::materialized_bwd_kernels;
  return 1;
}

double CostModel::launch_time(const Kernel& kn) const {
  return std::max(kn.count, 0) * launches_per_kernel(kn) * launch_;
}

StreamTime CostModel::stream_time(const std::vector<const Kernel*>& ks, double extra_host) const {
  double exec = 0, launches = 0, host = extra_host;
  for (const Kernel* k : ks) {
    if (k->count <= 0) continue;
    exec += time(*k) - launch_time(*k);
    launches += static_cast<double>(k->count) * launches_per_kernel(*k);
    host += host_time(*k);
  }
  StreamTime st;
  st.gpu_seconds = exec + launches * gap_;
  st.host_seconds = host;
  st.exec_seconds = exec;
  st.seconds = std::max(st.gpu_seconds, host);
  return st;
}

double CostModel::host_time(const Kernel& kn) const {
  if (kn.compiled) return std::max(kn.count, 0) * host_compiled_;   // one guarded call per region
  return std::max(kn.count, 0) * launches_per_kernel(kn) * (kn.autograd ? host_backward_ : host_);
}

double CostModel::time(const Kernel& kn) const {
  if (kn.count <= 0) return 0;
  double one = 0;
  switch (kn.kind) {
    case KernelKind::gemm: one = gemm_seconds(kn); break;   // grouped_eff applied inside
    case KernelKind::attention_fwd:
    case KernelKind::attention_bwd: one = attention_seconds(kn); break;
    case KernelKind::memory: one = memory_seconds(kn); break;
  }
  return kn.count * (one * pace_ + launches_per_kernel(kn) * launch_);
}

void CostModel::set_sync_group(int ranks, int job_ranks, std::optional<double> board_spread) {
  pace_ = job_pace(cal_, ranks, job_ranks, board_spread);
}

}  // namespace mfusim::hardware
