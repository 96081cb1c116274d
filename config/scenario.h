#pragma once
// A resolved scenario: everything one simulated training step needs, after
// defaults, named-file resolution, [[whatif]] overlays and --set overrides.
// Plain structs; only config/loader.* knows TOML.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hardware/calibration.h"
#include "hardware/hardware_spec.h"
#include "models/model_spec.h"

namespace mfusim::config {

using hardware::Precision;

enum class ScheduleKind { gpipe, one_f_one_b, interleaved_1f1b, zb_h1, zb_h2, zb_v, dualpipe, dualpipev,
                         zb_auto, v_half, v_min };
enum class Recompute { none, selective, full };
enum class NcclAlgo { auto_, ring, tree };
// Where the weights live and what the framework runs (docs/fidelity.md):
//  bf16_params   Megatron-LM mixed precision: bf16 weights, fp32 main grads, fp32 master + Adam state
//                (distributed optimizer), Megatron/Apex fused softmax and vocab-parallel cross entropy.
//  fp32_autocast plain PyTorch AMP: fp32 parameters under torch.autocast(bf16); every forward casts each
//                weight to bf16, the bf16 weight gradients are cast to fp32 .grad, the loss is
//                torch cross entropy on .float() logits, attention without flash is the eager chain.
enum class MasterWeights { bf16_params, fp32_autocast };
// The attention core's implementation (features.attention; kernels and bytes of each in
// models/attention_kernels.cpp, docs/scenario.md):
//  flash                  FlashAttention (fused: Q, K, V read once; no s x s matrix in HBM)
//  cudnn                  cuDNN fused attention (SDPA's CUDNN_ATTENTION, TE's fused attention):
//                         the same kernels and bytes as flash; its speed is the calibration's
//  hf_eager               Hugging Face eager_attention_forward: repeat_kv, matmul, * scale,
//                         + additive mask, cast to fp32, softmax in fp32, .to(bf16), matmul
//  sdpa_math              PyTorch's SDPA MATH backend (torch >= 2.5): q, k, v upcast to fp32, fp32
//                         matmuls, additive fp32 mask, _safe_softmax, output cast back
//  megatron_unfused       Megatron-LM's unfused core attention (baddbmm with the scale folded in)
//                         with its fused scale-mask-softmax kernel (masked_softmax_fusion, the default)
//  megatron_unfused_fp32  the same with --no-masked-softmax-fusion: torch softmax in fp32
//  torch_eager            validation/train_step.py's eager chain (the fp32-autocast recipe's)
// Absent: derived from flash_attention (true: flash; false: torch_eager under fp32-autocast,
// else megatron_unfused when fused_kernels, megatron_unfused_fp32 when not): attention_of().
enum class Attention { flash, cudnn, hf_eager, sdpa_math, megatron_unfused, megatron_unfused_fp32, torch_eager };

// "gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "zb-h2", "zb-v", "dualpipe", "dualpipev", "zb-auto", "v-half", "v-min"
const char* to_string(ScheduleKind);
std::optional<ScheduleKind> schedule_from_string(const std::string&);
const std::vector<ScheduleKind>& all_schedules();
const char* to_string(Recompute);
const char* to_string(NcclAlgo);
const char* to_string(Precision);
const char* to_string(MasterWeights);   // "bf16-params", "fp32-autocast"
const char* to_string(Attention);       // "flash", "cudnn", "hf_eager", ...
const std::vector<std::string>& attention_names();   // in Attention order

struct Training {
  int seq_len = 4096;
  int global_batch = 0;     // sequences per optimizer step
  int micro_batch = 1;      // sequences per micro-batch
  Precision precision = Precision::bf16;
  MasterWeights master_weights = MasterWeights::bf16_params;
  double tokens_to_train = 0;      // optional: for days-to-train and cost (0 = not given)
};

struct Parallel {
  int tp = 1, pp = 1, cp = 1, ep = 1, vpp = 1;
  int dp = 0;                       // derived: gpus / (tp * pp * cp) unless given
  bool sequence_parallel = true;
  bool distributed_optimizer = true;
  // Layer split over pipeline stages. Empty `stage_layers` and zero first/last:
  // even split. first/last_stage_layers fix the end stages and split the rest
  // evenly. stage_layers: explicit per-stage list (length pp, sums to layers).
  int first_stage_layers = 0;
  int last_stage_layers = 0;
  std::vector<int> stage_layers;
};

// Schedule-lab mode: fixed op times (seconds) per micro-batch per stage chunk.
struct ScheduleCosts {
  double f = 0, b = 0;
  std::optional<double> w;          // absent: b is the whole backward
  double comm = 0;
  std::optional<double> fb;         // DualPipe's overlapped F&B pair; default f + b + w
};

struct Schedule {
  ScheduleKind name = ScheduleKind::one_f_one_b;
  std::optional<ScheduleCosts> costs;
};

struct Features {
  bool flash_attention = true;
  bool fused_kernels = true;
  bool overlap_grad_reduce = true;
  bool overlap_param_gather = true;
  bool tp_comm_overlap = false;
  // Pipeline sends and receives overlapped with compute. Megatron's default
  // (ModelParallelConfig.overlap_p2p_comm = False, batch_p2p_comm = True) posts
  // them as a batch and waits: the sending rank's next compute waits for its send.
  bool overlap_p2p_comm = false;
  Recompute recompute = Recompute::none;
  bool cuda_graphs = false;
  bool python_gc = false;
  int dataloader_workers = 8;
  NcclAlgo nccl_algo = NcclAlgo::auto_;
  // CPU time to load, tokenise and collate one sequence; -1: derived from the
  // sequence length (docs/levers.md: seq_len / 1M tokens/s + 1 ms).
  double dataloader_ms_per_sample = -1;
  // Python GC model (docs/levers.md): a full collection of gc_pause_ms, on
  // average every gc_interval_s of training, per process.
  double gc_pause_ms = 100;
  double gc_interval_s = 3400;
  // features.attention; absent: derived from flash_attention (attention_of below).
  std::optional<Attention> attention;
};

struct Cost {
  double price_per_gpu_hour = 0;   // optional, USD (0 = not given)
};

struct Scenario {
  std::string name;
  std::string source;               // scenario file path ("" when built in code)
  std::string model_ref;            // "llama2-70b" or "(inline)"
  std::string hardware_ref;         // "h100-sxm" or "(inline)"
  models::ModelSpec model;
  hardware::HardwareSpec hardware;
  std::optional<hardware::Calibration> calibration;
  std::string calibration_path;     // `calibration = "..."` resolved to an existing file ("" = none); not read by config/
  int gpus = 0;
  Training training;
  Parallel parallel;
  Schedule schedule;
  Features features;
  Cost cost;
  std::uint64_t seed = 1;           // for seeded stochastic effects (GC pauses)

  int microbatches() const {        // per pipeline per step
    return training.global_batch / (training.micro_batch * parallel.dp);
  }
};

// The attention variant a scenario runs: features.attention, or derived from
// flash_attention, fused_kernels and the weights recipe (see Attention).
Attention attention_of(const Scenario&);

// One rung of the [[whatif]] ladder, already resolved (each overlays the one before).
struct WhatIf {
  std::string name;
  Scenario scenario;
};

}  // namespace mfusim::config
