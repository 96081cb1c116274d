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
// selective_op: torchtitan's per-op selective AC ("selective-op"): each block checkpointed,
// the outputs of SDPA and of every other matmul saved, everything else recomputed (docs/fsdp.md).
enum class Recompute { none, selective, full, selective_op };
enum class NcclAlgo { auto_, ring, tree };
// Where the weights live and what the framework runs (docs/fidelity.md):
//  bf16_params   Megatron-LM mixed precision: bf16 weights, fp32 main grads, fp32 master + Adam state
//                (distributed optimizer), Megatron/Apex fused softmax and vocab-parallel cross entropy.
//  fp32_autocast plain PyTorch AMP: fp32 parameters under torch.autocast(bf16); every forward casts each
//                weight to bf16, the bf16 weight gradients are cast to fp32 .grad, the loss is
//                torch cross entropy on .float() logits, attention without flash is the eager chain.
enum class MasterWeights { bf16_params, fp32_autocast };
// ZeRO-Offload (docs/fsdp.md): none, the optimizer state and step on the host, or also the parameters.
enum class Offload { none, optimizer, params };
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
//  flash2                 PyTorch SDPA's FLASH_ATTENTION backend: FlashAttention-2 kernels, SDPA's default on
//                         Hopper before torch 2.10 (cuDNN's is opt-in there: pytorch/pytorch#138522); the
//                         same kernels and bytes as flash at the calibration's [attention_fa2] speed (run 31)
//  triton_flash           FlashAttention written in Triton (llm-foundry's attn_impl = "triton": Dao's 2022
//                         kernel with MPT's ALiBi bias): flash's kernels and bytes at the calibration's
//                         [attention_triton] speed (run 42), else [attention_fa2]'s
// Absent: derived from flash_attention (true: flash; false: torch_eager under fp32-autocast,
// else megatron_unfused when fused_kernels, megatron_unfused_fp32 when not): attention_of().
enum class Attention { flash, cudnn, hf_eager, sdpa_math, megatron_unfused, megatron_unfused_fp32, torch_eager, flash2,
                       triton_flash };
// FlashAttention's kernels and bytes (flash, cudnn, flash2, triton_flash): no s x s matrix in HBM.
inline bool fused_attention(Attention a) {
  return a == Attention::flash || a == Attention::cudnn || a == Attention::flash2 || a == Attention::triton_flash;
}
// The model code a transformer block runs (features.model_code; docs/fsdp.md "torchtitan's eager block"):
//  megatron    Megatron-Core / Transformer Engine's block: fused kernels with fused_kernels, their
//              unfused pieces without (the kernel lists of earlier versions)
//  torchtitan  torchtitan's Llama model.py run eagerly: RMSNorm computing in fp32 (x.float(), type_as),
//              RoPE as a complex fp32 multiply, repeat_kv copies of K and V before SDPA, separate
//              wq/wk/wv and w1/w3 linears; with fused_kernels (torch.compile) Inductor's fused chains
enum class ModelCode { megatron, torchtitan };
// features.cross_entropy: the loss over the logits. fused = a fused vocab-parallel cross entropy
// (Megatron); fp32 = torch's F.cross_entropy over logits.float() run eagerly (torchtitan before
// 2025: the fp32 copy, log_softmax, nll_loss); compiled = the same function under torch.compile
// (torchtitan's build_cross_entropy_loss with training.compile: Inductor's fused kernels, the bf16
// logits kept). Their memory: models/memory.cpp head_memory.
enum class CrossEntropy { fused, fp32, compiled };
// features.fp8_recipe (docs/cost-model.md, "The fp8 recipes"): Transformer Engine's per-tensor delayed
// scaling ("tensorwise"), per-tensor current scaling ("current"), MXFP8 block scaling ("mxfp8", Blackwell),
// or DeepSeek-V3's fine-grained tiles ("blockwise").
enum class Fp8Recipe { tensorwise, current, mxfp8, blockwise };
// features.fp8_amax_reduction (docs/cost-model.md 2b, "The amax reduction of delayed scaling"): under
// per-tensor delayed scaling (Fp8Recipe::tensorwise, Megatron's block code) Transformer Engine all-reduces
// (MAX) the amaxes its modules recorded when a model chunk's fp8_autocast region ends its forward, and
// again when the chunk's backward ends, synchronously on the compute stream, over the stage's tensor-,
// data- and context-parallel ranks ("tp_dp_cp": Megatron-Core's amax reduction group, its default), its
// tensor- and context-parallel ranks ("tp_cp": Megatron-Core's tp_only_amax_red), its tensor-parallel ranks
// ("tp": NVTE_DP_AMAX_REDUCE_INTERVAL=0 with Transformer Engine 1.5 or earlier), or not at all ("none": the
// recipe's reduce_amax = False).
enum class Fp8AmaxReduction { tp_dp_cp, tp_cp, tp, none };

// "gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "zb-h2", "zb-v", "dualpipe", "dualpipev", "zb-auto", "v-half", "v-min"
const char* to_string(ScheduleKind);
std::optional<ScheduleKind> schedule_from_string(const std::string&);
const std::vector<ScheduleKind>& all_schedules();
const char* to_string(Recompute);
const char* to_string(NcclAlgo);
const char* to_string(Precision);
const char* to_string(MasterWeights);   // "bf16-params", "fp32-autocast"
const char* to_string(Offload);         // "none", "optimizer", "params"
const char* to_string(Attention);       // "flash", "cudnn", "hf_eager", ...
const char* to_string(ModelCode);       // "megatron", "torchtitan"
const char* to_string(CrossEntropy);    // "fused", "fp32", "compiled"
const char* to_string(Fp8Recipe);       // "tensorwise", "current", "mxfp8", "blockwise"
const char* to_string(Fp8AmaxReduction);   // "tp_dp_cp", "tp_cp", "tp", "none"
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
  // ZeRO / FSDP (docs/fsdp.md). zero_stage: 0 none, 1 optimizer state sharded (the same as
  // distributed_optimizer = true), 2 + gradients reduce-scattered and sharded, 3 + parameters
  // sharded and gathered per unit (FSDP FULL_SHARD). Derived from distributed_optimizer unless given.
  int zero_stage = 1;
  // HSDP: shard within groups of this many data-parallel ranks, replicate across groups; 0 = all of dp.
  int shard_degree = 0;
  // The effective ZeRO stage: stages 2 and 3 as given, else 1 with the distributed optimizer, else 0.
  int zero() const { return zero_stage >= 2 ? zero_stage : (distributed_optimizer ? 1 : 0); }
  // The ranks one state is sharded over: shard_degree (HSDP) or all of dp.
  int shard() const { return shard_degree > 0 ? shard_degree : dp; }
  // Megatron-LM's --account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-split:
  // the embedding / the loss count as one layer each in the even split over pp x chunks virtual
  // stages (layers + 1 [+ 1] must divide evenly); the first / last virtual stage then holds one
  // transformer layer fewer (126 layers on pp 8 x vpp 8: 128 slots, the first stage the embedding
  // only, the last the loss only). Not with first/last_stage_layers or stage_layers.
  bool account_for_embedding_in_pipeline_split = false;
  bool account_for_loss_in_pipeline_split = false;
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
  // zb-auto's memory limit: micro-batch activations in flight per pipeline rank; 0 = as 1F1B (pp).
  int max_inflight = 0;
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
  // Zero Bubble §4 optimizer post-validation: no cross-stage synchronisation (grad-norm / inf-nan
  // all-reduce) before the optimizer; each rank's optimizer and next step follow its own work only.
  bool optimizer_post_validation = false;
  // torch's foreach AdamW (`foreach=True`; torchtitan's default before its `implementation = "fused"`):
  // `_multi_tensor_adamw` holds one fp32 temporary of the stepped parameters' size (the second moments'
  // square roots) while the step runs (run 35: 4.03 bytes per parameter). false: a fused Adam (Megatron's,
  // torch's fused=True), no temporary.
  bool optimizer_foreach = false;
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
  // FSDP (zero_stage 3, docs/fsdp.md): free the gathered parameters after each unit's forward
  // (FSDP2's default) and gather them again for its backward; units gathered ahead of compute;
  // parameters gathered in fp8 (torchao float8 all-gather); the gradient reduction's precision.
  bool reshard_after_forward = true;
  int fsdp_prefetch = 1;
  Offload offload = Offload::none;
  bool fp8_all_gather = false;
  bool reduce_fp32 = true;          // features.reduce_dtype = "fp32" (FSDP2 MixedPrecisionPolicy) | "bf16"
  // recompute = "full" on every N-th transformer block only (torchtitan's selective layer AC,
  // ac_freq = N: blocks N, 2N, ... counted from 1 are checkpointed); 1 = every block.
  int recompute_every = 1;
  // Megatron's --recompute-method block --recompute-num-layers N: with recompute = "full", only the first N
  // transformer layers of each model chunk (virtual pipeline stage) are checkpointed; the rest keep their
  // activations. 0: every layer (Megatron's uniform method, one layer per group).
  int recompute_num_layers = 0;
  // PyTorch's FSDP implementation (zero_stage 3): 2 = FSDP2 fully_shard (per-parameter sharding:
  // the gathered unit is copied out into per-parameter tensors on the compute stream, gradients
  // copied into the reduce-scatter input in the reduce dtype); 1 = FSDP1 FlatParameter (the
  // gather lands in the flat buffer the parameters view: no copies; the unsharded gradient cast to
  // the reduce dtype and pre-divided on the reduce-scatter stream). Both keep the fp32 shard as the
  // master. docs/fsdp.md.
  int fsdp_version = 2;
  // zero_stage 3 as Megatron-FSDP runs it instead of PyTorch's FSDP (Megatron-Core's megatron_fsdp:
  // the parameters' own storage is the gather buffer, the wgrad GEMMs accumulate into the fp32
  // main_grad that is reduce-scattered, no copies or casts; a bf16 shard beside the fp32 master).
  // fsdp_version is not used then.
  bool megatron_fsdp = false;
  // The loss (CrossEntropy above; docs/fidelity.md section 3's kernels for fp32).
  CrossEntropy cross_entropy = CrossEntropy::fused;
  // fp8 recipes: attention (Transformer Engine's DotProductAttention) in fp8 too (TE's
  // recipe fp8_dpa; default False there): false prices it at the bf16 peak.
  bool fp8_attention = false;
  // fp8 recipes, Megatron's --fp8-param-gather (Megatron-Bridge's and NeMo 2's fp8 precision presets
  // set it): the linear layers' weights are held in fp8 only (Transformer Engine's Float8Tensor,
  // with its transposed copy), no bf16 copy; the distributed optimizer's parameter all-gather (and
  // under zero_stage 3 each unit's gather) moves 1 byte per linear weight. docs/cost-model.md.
  bool fp8_params = false;
  // Megatron's activation CPU offloading (--cpu-offloading, cpu_offloading_num_layers N): the saved
  // activations of the first N transformer layers copied to host memory after their forward and back
  // before their backward, through Transformer Engine's double-buffered handler (docs/cost-model.md).
  // 0 = off. Megatron's conditions: N < layers, pp = 1, no recompute, no CUDA graphs.
  int activation_offload_layers = 0;
  // features.fp8_recipe: "tensorwise" (Transformer Engine's per-tensor delayed scaling: one fused
  // cast(-transpose) per GEMM input, the scale from the amax history), "current" (per-tensor current
  // scaling: an amax pass over the tensor, then the cast), "mxfp8" (Blackwell's MXFP8: 1x32 blocks with
  // an e8m0 scale each, a row-wise and a column-wise copy in one pass, block-scaled GEMMs) or
  // "blockwise" (DeepSeek-V3's fine-grained scaling, arXiv 2412.19437 §3.3.2: activations in 1x128
  // tiles, weights in 128x128 blocks, DeepGEMM's NT-only GEMMs; models/kernel_builders.cpp,
  // linear_blockwise).
  Fp8Recipe fp8_recipe = Fp8Recipe::tensorwise;
  // features.fp8_amax_reduction (Fp8AmaxReduction above): read only under delayed scaling.
  Fp8AmaxReduction fp8_amax_reduction = Fp8AmaxReduction::tp_dp_cp;
  // features.attention; absent: derived from flash_attention (attention_of below).
  std::optional<Attention> attention;
  // features.model_code: whose block code runs (ModelCode above).
  ModelCode model_code = ModelCode::megatron;
};

// Mixture-of-experts dispatch and memory measures ([moe], docs/moe-dualpipe.md).
enum class MoeDispatcher { alltoall, deepep };
const char* to_string(MoeDispatcher);   // "alltoall", "deepep"
struct Moe {
  // alltoall: Megatron's all-to-all token dispatcher (each token sent once per selected
  // expert, bf16, NCCL all-to-all). deepep: DeepEP's normal kernels (node-limited routing,
  // one IB transfer per destination node then NVLink fan-out, fp8 dispatch, bf16 combine,
  // comm_sms SMs held by the communication kernels).
  MoeDispatcher dispatcher = MoeDispatcher::alltoall;
  int max_nodes_per_token = 4;      // deepep: nodes one token is sent to at most (DeepSeek-V3 §2.1.2: M = 4)
  int comm_sms = 20;                // deepep: SMs given to dispatch/combine (DeepSeek-V3 §3.2.2: 20 of 132)
  bool fp8_dispatch = true;         // deepep: dispatch in fp8 (1 byte + one fp32 scale per 128), combine in bf16
  double imbalance = 1.0;           // max over mean tokens per EP rank; the slowest rank gates a2a and expert GEMMs
  // Achieved bandwidths (GB/s, logical, per GPU); 0 = DeepEP's published H800 figures as
  // fractions of the hardware's datasheet links (layer/moe_dispatch.cpp).
  double nvlink_gbs = 0;
  double rdma_gbs = 0;
  // DeepSeek-V3's memory measures (§3.2.3, §3.3.2).
  bool recompute_norm_up_proj = false;   // recompute RMSNorm and MLA up-projections in backward
  bool fp8_activation_cache = false;     // Linear inputs cached in fp8 (1 byte + fp32 scale per 128)
  bool ema_on_cpu = true;                // EMA of the weights kept in CPU memory (false: fp32 copy in HBM)
  bool ema = false;                      // keep an EMA of the weights at all
  // DualPipe's F&B pair with EP transfers: arranged as DeepSeek-V3's Figure 4 (true), or the
  // forward's and backward's segments alternated one by one (false; step/emit.cpp, fb_order).
  bool fb_rearrange = true;
  // Megatron's EP all-to-all overlap (--overlap-moe-expert-parallel-comm, "combined 1F1B"): in the
  // steady state of interleaved-1f1b (or 1f1b at pp = 1) one micro-batch's forward and another's
  // backward run as one F&B pair, each layer's dispatch and combine beside the other's compute
  // (schedules::PipelineShape::combined_1f1b; the pair is arranged as fb_rearrange says).
  bool overlap_ep_comm = false;
  // DeepSeek's code: DeepEP's combine takes the shared experts' output into its reduce (Buffer.combine's
  // `bias`) and, the dispatch's backward being a combine, their input gradient too: one gradient sum and
  // no add of the shared output fewer than Megatron's MoELayer (models/layer_kernels.cpp). Acts with the
  // deepep dispatcher over ep > 1 only, as fp8_dispatch.
  bool shared_in_combine = false;
};

struct Cost {
  double price_per_gpu_hour = 0;   // optional, USD (0 = not given)
  // The price is the hardware profile's list price (hardware.price_per_gpu_hour), the
  // scenario giving none.
  bool price_from_hardware = false;
};

// The run around the steps (used with training.tokens_to_train; docs/training-run.md): interruptions
// stop the job, which restarts and resumes from its last checkpoint (step/training_run.h).
struct Reliability {
  // Job-stopping interruptions per 1,000 GPU-days. Default: the Llama 3 paper's pre-training snapshot
  // (arXiv 2407.21783 §3.3.4: 419 unexpected interruptions in 54 days on 16,384 H100).
  double interruptions_per_1k_gpu_days = 419.0 / (16384.0 * 54.0) * 1000.0;
  // From an interruption to training again (detection, diagnosis, rescheduling, initialisation, loading
  // the checkpoint). Default 10: MegaScale (arXiv 2402.15627 §6.3), over 10,000 GPUs: detection and
  // diagnostic tests under 10 minutes on average, initialisation under 30 s.
  double restart_minutes = 10;
  double checkpoint_interval_minutes = 0;   // 0 = Young's optimum for the save time and the interruption rate
  // Training time one save blocks; absent: the rank's parameters and optimizer state copied to host
  // memory over the hardware's host link (an asynchronous save's blocking part).
  std::optional<double> checkpoint_save_s;
};

struct Scenario {
  std::string name;
  std::string source;               // scenario file path ("" when built in code)
  std::string model_ref;            // "llama2-70b" or "(inline)"
  std::string hardware_ref;         // "h100-sxm" or "(inline)"
  // The named hardware profile is a shipped file (hardware/NAME.toml of the source tree or the installed
  // data) without --set hardware.* (or [[whatif]]) overlays: the GPU the shipped validation ran on.
  bool hardware_as_shipped = false;
  models::ModelSpec model;
  hardware::HardwareSpec hardware;
  std::optional<hardware::Calibration> calibration;
  std::string calibration_path;     // `calibration = "..."` resolved to an existing file ("" = none); not read by config/
  // How the calibration was chosen: "file" (named by the scenario or --calibration), "default"
  // (the shipped file for the GPU's architecture, hardware::default_calibration_file), "none"
  // (`calibration = "none"`: the datasheet roofline), "" (no measured file for this GPU).
  std::string calibration_choice;
  // The calibration in use as the shipped file it is ("hardware/calibration/h200.toml"), "" when none is
  // used or it is a file of the user's (config::detail::shipped_name).
  std::string calibration_shipped;
  int gpus = 0;
  // cluster.board_spread: the standard deviation of a board's sustained speed over the cluster's boards, as a
  // fraction of their mean (docs/cost-model.md 2g); unset: the calibration's [board_spread] (run 46's H200
  // boards), none without one; 0: identical boards (a screened fleet).
  std::optional<double> board_spread;
  Training training;
  Parallel parallel;
  Schedule schedule;
  Features features;
  Cost cost;
  Moe moe;
  Reliability reliability;
  std::uint64_t seed = 1;           // for seeded stochastic effects (the training run's interruptions)

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
  std::string error;   // with LoadOptions::whatif_errors_as_rows: why the rung cannot be resolved
};

}  // namespace mfusim::config
