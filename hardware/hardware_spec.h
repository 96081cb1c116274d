#pragma once
// A GPU and its interconnect, as read from hardware/*.toml. SI units inside
// the program (FLOP/s, bytes, bytes/s, seconds); the TOML files use the
// datasheet units named in each key (tflops, gib, gbs = GB/s, us).
#include <string>

namespace mfusim::hardware {

enum class Precision { bf16, fp8 };

struct HardwareSpec {
  std::string name;
  double peak_flops_bf16 = 0;      // dense, FLOP/s            (peak_tflops_bf16)
  double peak_flops_fp8 = 0;       // dense, FLOP/s; 0 = none   (peak_tflops_fp8)
  // FP32 on the CUDA cores (no tensor cores: an fp32 matmul under PyTorch's default
  // allow_tf32 = False), FLOP/s; 0 = not given (peak_tflops_fp32). Needed only by
  // fp32 attention matmuls (features.attention = "sdpa_math").
  double peak_flops_fp32 = 0;
  double hbm_bytes = 0;            // capacity                  (hbm_gib)
  double hbm_bandwidth = 0;        // bytes/s                   (hbm_bandwidth_gbs)
  int gpus_per_node = 8;           // GPUs per NVLink domain    (gpus_per_node)
  double nvlink_bandwidth = 0;     // bytes/s per GPU, one direction (nvlink_bandwidth_gbs)
  double nvlink_latency = 0;       // seconds                   (nvlink_latency_us)
  double nic_bandwidth = 0;        // bytes/s per GPU, one direction (nic_bandwidth_gbs)
  double nic_latency = 0;          // seconds                   (nic_latency_us)
  double pcie_bandwidth = 0;       // bytes/s host<->GPU, one direction; 0 = not given (pcie_bandwidth_gbs)
  // Host DRAM bandwidth per GPU (the node's CPU memory bandwidth / GPUs per node): the host's
  // Adam under features.offload runs at it; 0 = not given (host_memory_bandwidth_gbs).
  double host_memory_bandwidth = 0;
  double launch_overhead = 0;      // seconds per kernel        (launch_overhead_us)
  // Host (CPU) time to issue one eager op (framework dispatch + launch call), running
  // ahead of the GPU asynchronously; 0 = never host bound (host_overhead_us; docs/fidelity.md).
  double host_overhead = 0;
  // Host time of one call into a torch.compile'd region (guards, AOTAutograd wrapper, Triton
  // launcher), for kernels marked `compiled` (host_compiled_overhead_us); 0 = host_overhead.
  double host_compiled_overhead = 0;
  // Host time per op issued by autograd's backward engine (kernels marked `autograd`): the
  // engine's C++ thread, not Python, issues them (host_backward_overhead_us); 0 = host_overhead.
  double host_backward_overhead = 0;
  // Host time of activation checkpointing, per checkpointed region (one per layer when
  // recompute is on), beyond the ops the region issues: in the forward, the checkpoint
  // wrapper's own work (torch.utils.checkpoint, use_reentrant=False: context set-up, RNG
  // state stash, a Python pack hook per saved tensor) (host_checkpoint_overhead_us); in the
  // backward, the recomputation's trigger and hooks beyond its re-issued forward ops, which
  // cost host_overhead each (host_recompute_overhead_us). 0 = none (docs/fidelity.md).
  double host_checkpoint_overhead = 0;
  double host_recompute_overhead = 0;
  // Streaming multiprocessors (sms); 0 = not given. Used for the share of SMs that
  // communication kernels hold (DeepEP's dispatch/combine, moe.comm_sms).
  int sms = 0;
  // Published on-demand list price of one GPU for an hour, USD (price_per_gpu_hour; each
  // profile names its source and date); 0 = none published. A scenario's [cost] without a
  // price uses it (docs/scenario.md).
  double price_per_gpu_hour = 0;
  // The board power limit the GPUs run at, W (power_limit_w; the datasheet's maximum unless a site sets
  // a lower one); 0 = not given. With a calibration's [power] fit, a limit other than the one the
  // calibration was measured at scales the compute kernels by the clock it leaves (docs/cost-model.md §2e).
  double power_limit_w = 0;
  // The largest fraction of the dense peak a GEMM reaches at a training step's clock, bf16 and fp8
  // (gemm_sustained_eff_bf16, gemm_sustained_eff_fp8); 0 = not given. A ceiling on every GEMM's rate
  // for parts whose measured GEMMs (or datasheet curve) are of isolated calls at the unloaded clock:
  // the Blackwell profiles take Transformer Engine's warmed B300 profile (docs/cost-model.md §2h).
  double gemm_sustained_eff_bf16 = 0;
  double gemm_sustained_eff_fp8 = 0;
  // The fraction of an isolated call's rate a flash attention kernel keeps at a training step's clock
  // (attention_sustained_ratio, 0 .. 1); 0 = not given (1). For parts whose attention measurements are isolated
  // calls at the unloaded clock: the B200 takes flashinfer's back-to-back measurement (docs/cost-model.md §2h).
  double attention_sustained_ratio = 0;

  double peak_flops(Precision p) const { return p == Precision::fp8 ? peak_flops_fp8 : peak_flops_bf16; }
  double gemm_sustained_eff(Precision p) const {
    return p == Precision::fp8 ? gemm_sustained_eff_fp8 : gemm_sustained_eff_bf16;
  }
  bool has_sustained_rates() const {
    return gemm_sustained_eff_bf16 > 0 || gemm_sustained_eff_fp8 > 0 || attention_sustained_ratio > 0;
  }
};

}  // namespace mfusim::hardware
