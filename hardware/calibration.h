#pragma once
// Measured kernel timings fitted by `mfusim calibrate` (hardware/calibration.cpp)
// from a probe output, and read back from hardware/calibration/*.toml.
// The cost model uses each family that is present in place of the datasheet
// roofline; absent families (has_* false) fall back to the defaults.
#include <optional>
#include <string>
#include <vector>

#include "hardware/hardware_spec.h"
#include "hardware/kernel.h"

namespace mfusim::hardware {

// GEMM efficiency model, fitted by least squares on the probe's samples:
//   time(m, n, k) = overhead + 2mnk / (peak * eff(m, n, k))
//   eff = eff_max * (1 - exp(-(m*n*k)^(1/3) / knee))   (smooth saturation in size)
// plus an optional table of exact shapes measured (looked up first).
struct GemmFit {
  double peak_flops = 0;     // the datasheet peak (FLOP/s) that eff_max is a fraction of
  double eff_max = 0;        // fraction of the datasheet peak
  double knee = 0;           // size scale (elements^(1/3)) where efficiency reaches 63% of eff_max
  double overhead_s = 0;     // fixed time per GEMM call
  double rms_rel_error = 0;  // fit quality, as printed by calibrate
};
struct GemmSample { long long m = 0, n = 0, k = 0; double seconds = 0; };

// Attention (per kernel call, all heads of a micro-batch).
//   flash:        time = flops / (peak_flops * flash_{fwd,bwd}_eff) + overhead_s
//                 flops (fwd) = 4 * batch * heads * seq_q * seq_kv * head_dim, halved when causal;
//                 flops (bwd) = 2.5 x the forward's (dQ, dK, dV, dP and the recompute of P: FA2 paper,
//                 5 vs 2 matmuls; CostDefaults::flash_bwd_flop_ratio, the count the cost model uses)
//   materialized: time = score_bytes / (hbm_bandwidth * materialized_bw_eff) + overhead_s
//                 score_bytes = n * batch * heads * seq_q * seq_kv * 2 (bf16), n = 4 forward
//                 (S written, read; P written, read), 7 backward (dP w, P r x2, dP r, dS w, dS r x2)
struct AttentionFit {
  double peak_flops = 0;                            // FLOP/s the flash efficiencies refer to
  double hbm_bandwidth = 0;                         // bytes/s materialized_bw_eff refers to
  double flash_fwd_eff = 0, flash_bwd_eff = 0;      // achieved fraction of peak on the score/context FLOPs
  double materialized_bw_eff = 0;                   // achieved fraction of HBM bandwidth on the s x s traffic
  double overhead_s = 0;
  double rms_rel_error = 0;
  // Flash efficiency rises with the sequence (per-(b, head) setup and the causal diagonal's
  // partial tiles amortise): eff(s) = flash_*_eff * s / (s + knee). 0 = constant (run 8:
  // the FA2 backward's samples run at 0.7-0.8 of a constant fit at seq 2048, 1.25 at 16384).
  double flash_fwd_seq_knee = 0, flash_bwd_seq_knee = 0;
  // The tile form (`form = "tiles"` in the file), fitted by `mfusim calibrate` from fused samples
  // timed back to back (validation/attention_sdpa.py --back-to-back; runs 21b and 22): a call's work
  // in 128 x 128 tiles of scores, N = attention_tiles(...).executed, and
  //   time = overhead + FLOPs x (executed / counted tiles) / (peak x eff x N / (N + tile knee)),
  // FLOPs the counted ones (causal halved). The knee is on the call's whole work (b x heads x tiles):
  // too little work leaves SMs idle and its fixed costs unamortised; a causal call's diagonal tiles
  // (masked, and the rows' unequal work) cost diagonal_tile_weight full tiles each. Non-square calls
  // (context parallelism's ring steps) follow from their tile counts; the seq form cannot price them.
  bool tile_form = false;
  double flash_fwd_tile_knee = 0, flash_bwd_tile_knee = 0, diagonal_tile_weight = 1;
  // The program form of a backward launched as Dao's 2022 Triton kernel is (runs 42-43, only in
  // [attention_triton]): either one program per (batch, head) walking all its 128 x 128 tiles in turn, in
  // waves of one program per SM, a tile's time rising with the SMs busy, or one program per (key block,
  // batch, head) adding dQ with atomics, its longest program n tiles; the kernel's autotuner keeps the faster:
  //   per head: program_overhead + L x (W x program_tile + (b h / SMs) x program_tile_busy)
  //   split:    split_overhead + max(n, b h x L / SMs) x split_tile
  // with L the tiles per (batch, head) (causal: n_q n_k / 2 + min(n_q, n_k) / 2, the diagonal blocks whole;
  // a query block ahead of the keys (s_q > s_kv) is counted as context parallelism's load-balanced chunks
  // are, not as a top-left mask), W = ceil(b h / SMs) the waves (b h / SMs is the busy share summed over
  // them), SMs the measured GPU's (program_sms), tile times at head dims 128 + 128 on one of its SMs.
  // Each launch has its own intercept; the section's overhead is not added. program_tile = 0: not this form.
  double bwd_program_overhead_s = 0, bwd_program_tile_s = 0, bwd_program_tile_busy_s = 0;
  double bwd_split_overhead_s = 0, bwd_split_tile_s = 0;
  int program_sms = 0;
  // Dropout on the attention probabilities inside the fused call (run 48): the kernel draws one random
  // number per score it computes (Philox) and applies the mask, in the forward and again in the
  // backward, so a call with dropout takes longer by a time per counted score (causal: half of
  // seq_q x seq_kv), per pass:
  //   time(dropout) = time(none) + b x heads x scores per head x dropout_{fwd,bwd}_s_per_score
  // fitted by `mfusim calibrate` from [[attention_dropout]] probe rows (pairs of calls timed with and
  // without dropout) on a GPU of dropout_sms SMs; another GPU's time scales by the SM counts (the random
  // numbers are the SMs' integer work, not the tensor cores'). 0: not measured, not priced.
  double dropout_fwd_s_per_score = 0, dropout_bwd_s_per_score = 0;
  int dropout_sms = 0;
  double dropout_rms_rel_error = 0;   // of the calls' times with dropout, over the fitted samples
};

// The backward program form above for one call on a GPU of `sms` SMs, its tile times multiplied by
// `tile_scale` (head dims d_qk + d_v over 256, over the per-SM speed against the measured GPU's, times a
// power limit's clock scale); seconds, the launches' intercepts included; 0 when the fit has no such form.
double triton_bwd_program_seconds(const AttentionFit&, double batch, double heads, double seq_q, double seq_kv,
                                  bool causal, double tile_scale, int sms);

// The tiles of one fused-attention call (AttentionFit's tile form): `counted` the tiles its counted
// FLOPs cover (a causal call: half of seq_q x seq_kv), `executed` with each query block's diagonal
// tile weighted `diagonal_weight` (a square causal call of n blocks: n (n - 1) / 2 + w n).
struct AttentionTiles { double counted = 0, executed = 0; };
AttentionTiles attention_tiles(double batch, double heads, double seq_q, double seq_kv, bool causal,
                               double diagonal_weight);

struct MemoryFit {
  double achieved_bandwidth = 0;   // bytes/s, read + written, for large copies / elementwise
  double launch_overhead_s = 0;    // per kernel, measured
  double graph_launch_overhead_s = 0;  // per kernel under CUDA graph replay, measured
  double fixed_overhead_s = 0;     // intercept of time = bytes / bandwidth + fixed (small kernels)
  double rms_rel_error = 0;
  // Per eager-kernel family (MemFamily; [memory_families] <name>_gbs): bytes/s on the bytes
  // mfusim counts for that kernel, fitted from probe samples of kind "torch:<name>"
  // (validation/kernel_bw.py); 0 = not measured, the copy fit above applies.
  double family_bandwidth[kMemFamilies] = {};
  double family_rms_rel_error[kMemFamilies] = {};
  int family_samples[kMemFamilies] = {};
  std::string note;                // where the section comes from when not fitted here (written as a comment)
};

// The collectives the probe measures, in hardware::Collective order
// (collectives.h; static_assert there), named as in the probe's `op` and the
// calibration file's [collectives.<name>] tables.
constexpr int kCollectiveOps = 5;
constexpr const char* kCollectiveOpNames[kCollectiveOps] = {"all_reduce", "all_gather", "reduce_scatter",
                                                            "all_to_all", "send_recv"};

// One operation's own alpha-beta line over NVLink, fitted from that operation's
// samples alone (NCCL runs each with its own kernels and protocol choice: on 2
// H200s all-reduce reached 341 GB/s bus bandwidth at 2 GiB, all-gather 291).
// nvlink_bus_bandwidth == 0: not fitted, the overall line applies.
struct CollectiveOpFit {
  double nvlink_bus_bandwidth = 0;  // bytes/s (nccl-tests bus bandwidth)
  double nvlink_latency_s = 0;      // per ring step, as the overall latency
  double rms_rel_error = 0;         // over this operation's samples
  int samples = 0;
};

// Collective bus bandwidth and latency (alpha-beta), per link type; optionally
// per operation over NVLink (op[i], [collectives.<name>]), used for that
// operation in place of the overall NVLink line.
struct CollectiveFit {
  double nvlink_bus_bandwidth = 0; // bytes/s achieved bus bandwidth (nccl-tests definition)
  double nvlink_latency_s = 0;
  double nic_bus_bandwidth = 0;
  double nic_latency_s = 0;
  double rms_rel_error = 0;
  CollectiveOpFit op[kCollectiveOps] = {};
};

// GEMM time against the kernel mix (docs/cost-model.md §2d "Clock and kernel mix"). Under the board's
// power limit the SM clock follows what runs: a sequence of GEMMs alone holds the lowest clock, GEMMs
// mixed with memory-bound kernels or attention (which draw less power per cycle) run faster. Measured
// (probe [[gemm_duty]] samples, validation/runs/run17-duty): one GEMM's time at several GEMM duties (the
// share of GPU time in GEMMs), relative to its time at the largest duty measured (1: GEMMs only, the
// state the [gemm] fit must have been measured in, probe --sustained). time_ratio is non-decreasing
// in duty (fitted: pool-adjacent-violators over the samples).
struct GemmClock {
  std::vector<double> duty, time_ratio;   // ascending duty, in (0, 1]; ratio in (0, 1.5]
  int samples = 0;
};
// Grouped expert GEMMs ([gemm_grouped], fitted from run 14c's measurements,
// validation/runs/run14-interference/results-14c/grouped_gemm.toml): the rate of one grouped
// call over a rank's experts as a fraction of one dense GEMM of the same total size, by tokens
// per expert. The cost model prices a grouped expert GEMM as that dense GEMM divided by
// grouped_gemm_efficiency (piecewise linear in log2(tokens per expert) between the fitted
// points, flat beyond them).
struct GroupedGemmFit {
  std::vector<double> tokens_per_expert;   // ascending
  std::vector<double> efficiency;          // per point, in (0, 1]
  double rms_rel_error = 0;                // of the curve against every measured ratio
  int samples = 0;                         // measured (grouped, dense) pairs
};
double grouped_gemm_efficiency(const GroupedGemmFit&, double tokens_per_expert);

// The SM clock under a board power limit ([power], fitted by `mfusim calibrate` from the probe's
// [[gemm_power]] samples, validation/runs/run33-power): a GEMM loop confined to k of the GPU's SMs
// (cuBLASLt's SM carve-out), the settled SM clock and board power at each k, under the limit the GPU
// ran at. With few SMs the clock holds its maximum and the board's power is a line in k (its
// intercept: base_w); with many the clock falls until the power meets the limit. The model: P(f, k) =
// base_w + k * sm_w * (f / max_clock_mhz)^exponent, the per-SM law fitted on the capped samples; under a
// limit L the clock is the highest f <= max_clock_mhz with P <= L (power_limited_clock_mhz). base_w
// absorbs what does not scale with the SMs running GEMMs (HBM, the uncore, the idle SMs' leakage), as
// measured on the calibration's GPU.
struct PowerFit {
  double limit_w = 0;         // the board power limit the samples ran under
  double base_w = 0;          // intercept of the uncapped samples' board power against k
  double sm_w = 0;            // the capped samples' per-SM GEMM power law at the maximum clock
  double max_clock_mhz = 0;   // the uncapped samples' clock
  double min_clock_mhz = 0;   // the lowest clock measured: below it the curve is extrapolated
  double exponent = 0;        // of the per-SM power in the clock, fitted on the capped samples
  int sms = 0;                // the measured GPU's SMs
  int samples = 0;
  double rms_rel_error = 0;   // of the model's clock against every capped sample's measured clock
};
// The clock (MHz) the model gives k SMs running GEMMs under a board power limit of limit_w; 0 when
// the limit is at or below base_w (no clock meets it).
double power_limited_clock_mhz(const PowerFit&, double limit_w, int sms);
// The exponent a fit may have: dynamic power grows with the clock at least linearly (fixed voltage) and,
// with the voltage rising along the clock, about as its cube; a fit far outside describes noise.
constexpr double kPowerExponentMin = 0.5, kPowerExponentMax = 6.0;
// Whether a PowerFit speaks for `hw`: a power limit given and the same SM count as the fit's GPU (a
// profile without `sms` is not taken to be that GPU).

// The pace of a synchronous group ([slowest_of_n], from the probe's [[slowest_of_n]] rows, validation/runs/
// run40-interval-jitter): identical units of compute back to back on one GPU under sustained load vary from
// one to the next (the power-capped SM clock wanders between 1530 and 1650 MHz on the H200, slowly:
// neighbouring units' durations correlate 0.92). A collective starts when the slowest member of its group
// arrives, so a group of N members, each wandering on its own, runs at the expected slowest of N draws:
// ratio = E[max of N units] / mean, exact for the measured distribution of a Llama-3-70B TP8 layer's
// forward (23,904 units of 1.68 ms), at N = 2 .. 256 (beyond, a handful of outliers decide the tail).
struct SlowestOfN {
  std::vector<double> group;   // ascending, >= 2
  std::vector<double> ratio;   // per group, >= 1, non-decreasing
  int units = 0;               // measured units the ratios come from
};
// The ratio for a group of n ranks: 1 for n <= 1 or without a table; linear in log n between the measured
// points (and from (1, 1) to the first), flat beyond the last.
struct Calibration;
double slowest_of_n(const Calibration*, int n);

// The spread of boards ([board_spread], from the probe's [[board]] rows, validation/runs/run46-boards): the
// same work at the same power cap runs at each board's own sustained clock (ten H200 boards, run 40's layer:
// 1545-1612 MHz, time sd 1.07% of the mean, correlation with the clock -0.98), in every window, so unlike the
// wander above it does not average out over a step.
struct BoardSpread {
  double sd = 0;     // standard deviation of a board's time for the same work, over the boards' mean
  int boards = 0;    // boards measured
};
// The pace of a rank in a job of `job` boards whose ranks wait for `group` of them every micro-batch
// (docs/cost-model.md 2g). Without the calibration's [board_spread] (or for a job of one board):
// slowest_of_n(cal, group), unchanged. With it, a deterministic draw of the boards: the job's step waits once
// per step for the group holding its slowest board (that board's sustained speed at 16 stratified quantiles
// of the slowest of `job` normal draws at sd, its group's other members normal boards below it), and inside
// that group each micro-batch waits for the slowest member, static offset plus the clock's wander (a normal
// whose expected slowest of `group` is the [slowest_of_n] ratio); the expectation of that maximum is integrated
// numerically. A brute-force Monte Carlo in which any group may be the slowest
// (validation/runs/run46-boards/combined_mc.py) runs 0 to 0.09 points above it (tests/hardware/
// test_board_spread.cpp). A scenario's
// cluster.board_spread, where given, replaces the calibration's sd (0: identical boards).
double job_pace(const Calibration*, int group, int job, std::optional<double> scenario_sd = std::nullopt);
// The spread job_pace uses: the scenario's where given, else the calibration's [board_spread], else 0.
double board_sd(const Calibration*, std::optional<double> scenario_sd);

struct Calibration {
  std::string source;      // path of the calibration file
  std::string gpu_name;    // provenance from the probe
  bool has_gemm = false, has_attention = false, has_memory = false, has_collectives = false;
  GemmFit gemm;                        // bf16
  std::vector<GemmSample> gemm_table;  // bf16, exact shapes measured
  bool has_gemm_fp8 = false;           // fp8 e4m3 inputs, bf16 output
  GemmFit gemm_fp8;
  std::vector<GemmSample> gemm_fp8_table;
  AttentionFit attention;
  // FlashAttention-2 (SDPA's FLASH_ATTENTION backend, the default on Hopper before torch 2.10) where
  // the fused attention above is cuDNN's: features.attention = "flash2" (run 31).
  bool has_attention_fa2 = false;
  AttentionFit attention_fa2;
  // FlashAttention written in Triton as llm-foundry's MPT ran it (Dao's 2022 kernel with an ALiBi bias,
  // built for Ampere's mma.sync; run 42, impl "triton_flash"): features.attention = "triton_flash".
  bool has_attention_triton = false;
  AttentionFit attention_triton;
  MemoryFit memory;
  CollectiveFit collectives;
  bool has_gemm_clock = false;
  GemmClock gemm_clock;
  bool has_gemm_grouped = false;       // [gemm_grouped]
  GroupedGemmFit gemm_grouped;
  // fp8 expert GEMMs grouped as Transformer Engine groups them (one fp8 GEMM per expert, one stream or TE's
  // four) against one fp8 GEMM of the same total size ([gemm_grouped_fp8], runs 44 and 45): fp8 expert GEMMs
  // use it where present, [gemm_grouped] otherwise.
  bool has_gemm_grouped_fp8 = false;   // [gemm_grouped_fp8]
  GroupedGemmFit gemm_grouped_fp8;
  bool has_power = false;              // [power]
  PowerFit power;
  bool has_slowest_of_n = false;       // [slowest_of_n]
  SlowestOfN slowest_of_n;
  bool has_board_spread = false;       // [board_spread]
  BoardSpread board_spread;
};

// How much longer a compute-bound kernel (GEMM, attention) runs on `hw` than the calibration's GEMM
// fits say, from the SM clock under the hardware's power_limit_w against the clock under the limit the
// calibration was measured at (PowerFit, all of the GPU's SMs running GEMMs): clock(cal) / clock(hw).
// 1 without a [power] fit, without a power_limit_w, or on a GPU with another SM count than the fit's.
double power_time_scale(const Calibration*, const HardwareSpec&);
bool power_fit_applies(const PowerFit&, const HardwareSpec&);
// A warning when the clock hw's power limit leaves lies below the lowest clock the fit measured (the
// curve extrapolated), or when a limit other than the fit's is given for a GPU the fit does not speak for
// (another SM count, or none given); "" otherwise.
std::string power_extrapolation_warning(const Calibration*, const HardwareSpec&);

// The time ratio of a GEMM at `duty` (GemmClock, linear between the measured points, constant beyond
// them); 1 without a measured curve.
double gemm_clock_ratio(const Calibration*, double duty);

// Physical bounds of every calibrated number, in the units of the calibration
// file (docs/scenario.md, "Limits"). A fit outside them means the
// probe samples were corrupt or too few (calibrate refuses to write it); a file
// outside them was edited by hand into nonsense (read_calibration refuses it).
// Each bound leaves an order of magnitude or more above the fastest part known
// (B200: 2.25 PFLOP/s dense bf16, 8 TB/s HBM, 900 GB/s NVLink per direction).
struct CalibrationBound {
  const char* key;   // the file's key
  double lo;         // lowest value allowed
  bool lo_open;      // lo itself excluded
  double hi;         // highest value allowed
};
constexpr CalibrationBound kPeakTflopsBound{"peak_tflops", 0, true, 1e5};          // 100 PFLOP/s
constexpr CalibrationBound kBandwidthGbsBound{"bandwidth (GB/s)", 0, true, 1e5};   // 100 TB/s
constexpr CalibrationBound kEfficiencyBound{"efficiency", 0, false, 1.5};          // fraction of a datasheet peak
constexpr CalibrationBound kOverheadUsBound{"overhead (us)", 0, false, 1e6};       // 1 s per kernel or step
constexpr CalibrationBound kKneeBound{"knee", 0, false, 1e7};
constexpr CalibrationBound kDiagonalWeightBound{"diagonal tile weight", 0.5, false, 100};   // a masked tile: half to 100 tiles
constexpr CalibrationBound kRmsBound{"rms_rel_error", 0, false, 1e6};
constexpr CalibrationBound kPerScorePsBound{"time per score (ps)", 0, false, 1e3};   // 1 ns per attention score

// Reading and writing calibration files (hardware/calibration/*.toml) and
// fitting a probe output into one (`mfusim calibrate`). Bad files throw
// std::runtime_error with "file:line:col: error: ..." text.
Calibration read_calibration(const std::string& path);
void write_calibration(const Calibration&, const std::string& path);
// Fit a probe output (probe/ TOML); `report` receives the fit error per family.
// GEMM: grid search on knee, linear least squares (Eigen) for overhead and
// 1/eff_max, relative-error weighted; the other families are linear least squares.
// Datasheet references (peak_flops, hbm_bandwidth) come from the GPU name
// (H100/H200 SXM); for an unknown GPU the best measured rate stands in.
// `fused_attention` picks which measured fused-attention implementation stands for
// "flash" (the probe TOML's [[attention]] impl: "flash" = FlashAttention-2 through
// SDPA's FLASH_ATTENTION backend, "cudnn_fused" = cuDNN fused SDPA); empty: cuDNN
// when measured, else "flash". Calibrate the one the modelled runs use.
Calibration fit_probe(const std::string& probe_path, std::string* report = nullptr,
                      const std::string& fused_attention = "");

// Which calibration a scenario uses when it names none (docs/cost-model.md, "Which
// calibration"): the shipped measured file for the GPU's architecture, relative to the data
// roots, or "" for the datasheet roofline. Hopper (GH100: H100 SXM, H200, H800 SXM, H20) uses
// hardware/calibration/h200.toml, measured on an H200; the cost model applies it to another
// Hopper GPU as fractions of that GPU's own peaks and HBM bandwidth (CostModel: GEMM, attention
// and table times rescaled by the ratio of peaks, memory kernels by the ratio of datasheet HBM
// bandwidths). The B200, GB200 and GB300 take the calibrations fitted from published measured tables
// (hardware/calibration/b200-xla.toml: OpenXLA's GEMMs and cuDNN frontend's attention; gb200-cudnn.toml and
// gb300-cudnn.toml: attention only). Other GPUs (A100, B300, MI300X, ...) have no measured file.
std::string default_calibration_file(const HardwareSpec&);
// The GPU architecture family a name belongs to ("hopper", "ampere", "blackwell", "cdna3"), ""
// when not recognised: calibrations transfer within a family only.
std::string gpu_family(const std::string& gpu_name);
// "" when `cal` was measured on the GPU `hw` describes; otherwise one line saying how it is
// applied (same family: efficiencies transferred, scaled to this GPU's peaks and bandwidth) or
// that it comes from another architecture (its efficiencies are then a guess).
std::string calibration_transfer_note(const Calibration&, const HardwareSpec&);

// The model's GEMM time for one call (seconds), for tests and the cost model.
double gemm_fit_seconds(const GemmFit&, double m, double n, double k);

}  // namespace mfusim::hardware
