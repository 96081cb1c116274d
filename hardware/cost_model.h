#pragma once
// Kernel time = max(FLOPs / (peak * efficiency(shape)), bytes / achieved HBM bandwidth)
// + launch overhead (dropped under CUDA graphs), times the kernel's count.
// Efficiency curves default to documented datasheet-relative values
// (docs/cost-model.md) and are replaced, family by family, by a Calibration
// when one is given (has_gemm / has_attention / has_memory).
//
// Invariants: every time is finite and >= 0; gemm_efficiency is in (0, 1].
// time() and launch_time() do not allocate; the only lookup is a binary
// search in the calibration's exact-shape table (sorted in the constructor).
// The Calibration, when given, must outlive the CostModel.
#include <cstdint>
#include <vector>

#include "hardware/calibration.h"
#include "hardware/hardware_spec.h"
#include "hardware/kernel.h"

namespace mfusim::hardware {

// Default curve parameters, documented with their sources in docs/cost-model.md.
struct CostDefaults {
  static constexpr double gemm_eff_max_bf16 = 0.84;   // so 8192^3 bf16 -> 0.80 of peak (H200 measured 787 TF/s)
  static constexpr double gemm_eff_max_fp8 = 0.70;    // cuBLASLt fp8 on H100: ~1.3-1.4 PF/s of 1979
  // The share of a wgrad GEMM's extra epilogue traffic when it accumulates into main_grad (beta = 1)
  // that is not hidden under the main loop: extra bytes per output element 6 (fp32: read 4, write 4
  // instead of a bf16 write of 2) or 2 (bf16: the read); run 19 (validation/runs/run19-wgrad-acc, one
  // H200, 12 wgrad GEMMs of three Megatron layouts inside a sustained layer sequence, against the
  // calibrated copy bandwidth): fp32 0.44-0.72, median 0.59; bf16 0.21-0.48, median 0.34.
  static constexpr double wgrad_accumulate_share_fp32 = 0.59;
  static constexpr double wgrad_accumulate_share_bf16 = 0.34;
  // An MXFP8 GEMM's rate as a fraction of the per-tensor fp8 GEMM's at the same shape (Kernel::mxfp8):
  // Transformer Engine's published GEMM profile on a B300 (docs/examples/gemm_profiling/gemm_profiling.rst
  // @d0067d0, pre-quantized operands, the twelve GEMMs of an h4096 / ffn 16384 layer at 15,872 tokens):
  // per-tensor current scaling 6.812 ms, MXFP8 7.161 ms per layer; 6.812 / 7.161 (validation/te_gemm_profiling).
  static constexpr double mxfp8_gemm_rate = 6.812 / 7.161;
  static constexpr double gemm_size_knee = 512;       // (mnk)^(1/3) scale of the total-work saturation
  static constexpr double gemm_k_knee = 380;          // k / (k + knee): epilogue cost in k units (fit to H200 shapes)
  static constexpr double flash_fwd_eff = 0.65;       // FA3 / cuDNN bf16 fwd, long sequences (H200 measured 0.64-0.67)
  static constexpr double flash_bwd_eff = 0.52;       // FA3 / cuDNN bf16 bwd (H200 measured 0.50-0.54)
  static constexpr double flash_seq_knee = 256;       // eff * s / (s + knee): short sequences run slower
  static constexpr double flash_bwd_flop_ratio = 2.5; // bwd FLOPs = 2.5 x fwd (FA2 paper, 5 vs 2 matmuls)
  static constexpr double materialized_fwd_bytes_per_score = 12;  // s x s traffic, see docs
  static constexpr double materialized_bwd_bytes_per_score = 16;
  static constexpr int materialized_fwd_kernels = 4;  // bmm, fused scale-mask-softmax, dropout, bmm
  static constexpr int materialized_bwd_kernels = 6;
  static constexpr double hbm_eff = 0.89;             // device copy on the H200 here: 4.26 of 4.8 TB/s
  static constexpr double kernel_gap_s = 0.7e-6;      // GPU-side cost per kernel with the host out of the
                                                      // loop: 0.69 us under CUDA-graph replay, H200 here
};

// Kernels issued back to back by one CPU thread into one stream (docs/levers.md,
// "launch overhead"): the GPU runs them in order, each after a front-end gap,
// and cannot start a kernel before the host has issued it. The lowering hands the
// GPU side and the host side to the engine, whose host clock runs ahead over a
// stream's tasks (sim TaskSpec::host_ns); `seconds` is the run alone, from an idle
// GPU and host:
//   seconds = max(sum(exec) + n * gap, n * issue)
// issue = the host launch cost per kernel (0 under CUDA graphs: one graph launch).
struct StreamTime {
  double seconds = 0;
  double gpu_seconds = 0;    // execution + per-kernel gaps (the GPU side of the max)
  double host_seconds = 0;   // host issue (the host side)
  double exec_seconds = 0;   // execution alone
};

class CostModel {
 public:
  CostModel(const HardwareSpec&, Precision, const Calibration* = nullptr, bool cuda_graphs = false);
  // Seconds for all `count` kernels, launch overhead included.
  double time(const Kernel&) const;
  // Seconds of the above that are launch overhead (for the breakdown).
  double launch_time(const Kernel&) const;
  // The kernels in order on one stream, with the CPU-issue / GPU-gap roofline above.
  // extra_host: host seconds the run costs beyond its kernels' issue (a checkpointed
  // region's own work, checkpoint_host() / recompute_host()).
  StreamTime stream_time(const std::vector<const Kernel*>&, double extra_host = 0) const;
  double kernel_gap() const { return gap_; }   // GPU-side seconds per kernel
  // Host (CPU) seconds to issue all `count` kernels: launches x hardware.host_overhead
  // (0 under CUDA graphs: a graph replay is one launch). The host runs ahead of the GPU
  // asynchronously, so a sequence of kernels takes max(sum of time(), sum of host_time())
  // (layer/pass_cost.cpp seg_of; docs/fidelity.md).
  double host_time(const Kernel&) const;
  double host_overhead() const { return host_; }   // seconds per launch
  // Host seconds of one checkpointed region in the forward and of its recomputation in the
  // backward, beyond its ops (hardware.host_checkpoint_overhead_us / host_recompute_overhead_us;
  // 0 under CUDA graphs).
  double checkpoint_host() const { return host_checkpoint_; }
  double recompute_host() const { return host_recompute_; }
  // Fraction of the scenario precision's peak: for an fp8 recipe the calibration's [gemm_fp8]
  // fit when measured, else the datasheet fp8 curve (never the bf16 fit).
  double gemm_efficiency(std::int64_t m, std::int64_t n, std::int64_t k) const;
  double memory_bandwidth() const;      // achieved bytes/s for memory-bound kernels
  double launch_overhead() const;       // seconds per kernel (0 under CUDA graphs)
  // The GEMM duty (share of the step's GPU time in GEMMs) of the step this model prices: with a
  // measured Calibration::gemm_clock, every GEMM's time scales by gemm_clock_ratio(cal, duty) (the
  // power-capped clock follows the kernel mix; docs/cost-model.md §2d). Default 1: GEMMs only.
  void set_gemm_duty(double duty);
  double gemm_duty() const { return gemm_duty_; }
  double gemm_clock_scale() const { return clock_scale_; }
  // Time factor of the SM-clock-paced compute (GEMMs, attention) under hardware.power_limit_w.
  double power_time_scale() const { return power_scale_; }
  // The ranks this model's rank waits for at least once per micro-batch (models::sync_group_ranks) and the
  // boards of the whole job, whose slowest the step waits for once per step: every kernel's time runs at
  // hardware::job_pace (the expected slowest of the group's wander, slowest_of_n of the calibration, and, with
  // its [board_spread], of the job's boards; 1 without either or for one rank).
  void set_sync_group(int ranks, int job_ranks, std::optional<double> board_spread = std::nullopt);
  double sync_pace() const { return pace_; }
  bool has_gemm_clock() const { return cal_ && cal_->has_gemm_clock; }
  double peak_flops() const;
  int sm_count() const { return sms_; }
  const HardwareSpec& hardware() const { return hw_; }

 private:
  double gemm_seconds(const Kernel&) const;        // one kernel, no launch overhead
  double gemm_core_seconds(const Kernel&) const;   // gemm_seconds without an accumulating epilogue
  double gemm_eff(bool fp8, std::int64_t m, std::int64_t n, std::int64_t k) const;
  double batched_gemm_efficiency(std::int64_t m, std::int64_t n, std::int64_t k, bool fp8) const;
  bool runs_fp8(const Kernel& kn) const { return fp8_ && !kn.keep_bf16; }
  double peak_of(const Kernel& kn) const { return runs_fp8(kn) ? peak_ : hw_.peak_flops_bf16; }
  double attention_seconds(const Kernel&) const;
  double memory_seconds(const Kernel&) const;
  int launches_per_kernel(const Kernel&) const;

  struct TableEntry { std::int64_t m, n, k; double seconds; };
  HardwareSpec hw_;
  Precision precision_;
  const Calibration* cal_;
  bool cuda_graphs_;
  double peak_ = 0;          // FLOP/s of the precision (bf16 when the GPU has no fp8)
  bool fp8_ = false;         // fp8 recipe on a GPU with fp8 tensor cores
  double bandwidth_ = 0;     // achieved HBM bytes/s
  double launch_ = 0;        // seconds per kernel launch (0 under CUDA graphs)
  double gap_ = CostDefaults::kernel_gap_s;
  double host_ = 0;          // host seconds to issue one kernel (0 under CUDA graphs)
  double host_compiled_ = 0; // host seconds of one torch.compile'd call (0 under CUDA graphs)
  double host_backward_ = 0; // host seconds per op issued by autograd's engine (0 under CUDA graphs)
  double host_checkpoint_ = 0, host_recompute_ = 0;   // per checkpointed region (0 under CUDA graphs)
  double family_bw_[kMemFamilies] = {};   // achieved bytes/s per MemFamily (0: use bandwidth_)
  double gemm_eff_max_ = 0;
  double gemm_duty_ = 1.0, clock_scale_ = 1.0;
  // Compute-bound kernels' time under the hardware's power limit against the calibration's
  // (power_time_scale; 1 at the calibration's own limit).
  double power_scale_ = 1.0;
  // Flash attention's time at a training step's clock against an isolated call's (1 / the hardware's
  // attention_sustained_ratio; 1 when not given), for fits of isolated calls only (docs/cost-model.md §2h).
  double attn_clock_ = 1.0;
  double pace_ = 1.0;   // set_sync_group
  int sms_ = 132;
  // Calibration exact shapes, sorted by (m, n, k): bf16 and fp8 (the fp8 one only from the
  // calibration's [gemm_fp8]). Seconds as measured, rescaled to this GPU's peak (gemm_seconds).
  std::vector<TableEntry> table_, table_fp8_;
};

// Streaming multiprocessors of the GPU named in the hardware spec (H100/H200: 132,
// A100: 108, B200: 148); 132 when the name is not recognised.
int sm_count_for(const HardwareSpec&);

}  // namespace mfusim::hardware
