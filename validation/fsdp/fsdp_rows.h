#pragma once
// Published FSDP runs (validation/fsdp/rows.csv: torchtitan, llm-foundry, IBM
// fms-fsdp) as scenarios, and their comparison with the simulator: tokens/s
// per GPU and, where published, peak memory (docs/fsdp.md).
//
// Row -> scenario (the rules, the same for every row; no per-row factor):
//  * hardware: "A100" a100-sxm-80gb (40 GB rows: 40 GiB), "H200" h200, "H100"
//    h100-sxm (the 94-96 GB HBM2e parts: 94 GiB capacity; the 96 GB Grand Teton parts
//    2.4 TB/s HBM as torchtitan's benchmark doc states; the 80 GB part's peak otherwise).
//  * model: inline from the row (layers, hidden, ffn, heads, kv heads, vocab);
//    MPT: GELU MLP, tied embeddings; Llama: SwiGLU, untied.
//  * layout: tp, pp, cp as published, dp = gpus / (tp pp cp); HSDP rows
//    (dp_replicate > 1) shard within dp_shard ranks; micro-batch = the local
//    batch, global batch as published.
//  * FSDP: zero_stage 3; SHARD_GRAD_OP ("zero_stage 2" rows of llm-foundry) is
//    zero_stage 3 with reshard_after_forward = false (FSDP's semantics:
//    parameters sharded at rest, kept gathered from forward to backward);
//    rows whose reshard column says no/False: reshard_after_forward = false.
//  * activation checkpointing: full / selective / none as published (torchtitan's selective
//    layer: full every 2nd block; fms-fsdp's AC True: full, Mechanisms::framework_ac); float8
//    rows: precision fp8; torch.compile on: fused_kernels; async TP:
//    tp_comm_overlap. Everything else: the simulator's defaults.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/loader.h"
#include "step/simulate.h"
#include "validation/h200_compare.h"
#include "validation/published/published.h"

namespace mfusim::validation::fsdp {

struct Row {
  std::map<std::string, std::string> f;
  std::string half;
  const std::string& at(const std::string& k) const {
    auto i = f.find(k);
    if (i == f.end()) throw std::runtime_error("rows.csv: no column " + k);
    return i->second;
  }
  int num(const std::string& k) const { return to_int(at(k)); }
  double real(const std::string& k) const { return at(k).empty() ? 0.0 : std::stod(at(k)); }
  bool has(const std::string& k, const std::string& text) const { return at(k).find(text) != std::string::npos; }
};

inline std::vector<Row> read_rows(const std::string& csv, const std::string& split) {
  std::map<std::string, std::string> halves;
  {
    std::ifstream in(split);
    if (!in) throw std::runtime_error("cannot read " + split);
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
      const auto f = split_csv_line(line);
      if (f.size() >= 2) halves[f[0]] = f[1];
    }
  }
  std::ifstream in(csv);
  if (!in) throw std::runtime_error("cannot read " + csv);
  std::string line;
  std::getline(in, line);
  const auto head = split_csv_line(line);
  std::vector<Row> rows;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto f = split_csv_line(line);
    if (f.size() != head.size()) throw std::runtime_error(csv + ": a row with " + std::to_string(f.size()) + " fields");
    Row r;
    for (std::size_t i = 0; i < head.size(); ++i) r.f[head[i]] = f[i];
    r.half = halves.count(r.at("id")) ? halves[r.at("id")] : "";
    rows.push_back(std::move(r));
  }
  return rows;
}

// The mechanisms the row mapping applies, each switchable for the before/after tables of
// docs/fsdp.md (validate_fsdp --without NAME). All on is the mapping.
struct Mechanisms {
  // Hopper rows run with the shipped measured calibration, the choice `run` makes for a
  // scenario without a calibration line (hardware::default_calibration_file); off: the
  // datasheet roofline.
  bool calibrated = true;
  // Activation checkpointing as the row's framework applies it: torchtitan's "selective layer"
  // is full AC on every 2nd block (selective_ac_option default "2": ac_freq 2,
  // torchtitan/parallelisms/parallelize_llama.py _apply_ac_to_transformer_block); fms-fsdp's
  // "AC True" is full AC on every block (selective_checkpointing default 1,
  // fms_fsdp/config/training.py). Off: both as the plain recompute names (the "selective
  // layer" rows as Megatron's core-attention selective, the "on" rows as none).
  bool framework_ac = true;
  // torchtitan's per-op selective AC (the rows' "selective op"): recompute = "selective-op"
  // (models/layer_kernels.cpp). Off: Megatron's core-attention selective recompute.
  bool op_sac = true;
  // The FSDP implementation: torchtitan rows FSDP2 (features.fsdp_version = 2: the per-parameter
  // copy-out after each gather, the reduce-scatter copy-in), llm-foundry and fms-fsdp rows FSDP1
  // (Composer / FullyShardedDataParallel: FlatParameter, no copies). Off: every row as FSDP1.
  bool fsdp2_copies = true;
  // torchtitan's loss: F.cross_entropy(pred.flatten(0, 1).float(), labels) (train.py / loss.py;
  // features.cross_entropy = "fp32"). llm-foundry and fms-fsdp rows keep the fused loss (their
  // losses are not restated by the rows). Off: every row with the fused loss.
  bool torch_loss = true;
  // torchtitan compiles that loss with the model since bbb1b616e (2025-04-02, components/loss.py
  // build_cross_entropy_loss: torch.compile(loss_fn) when training.compile; before it the compile
  // was commented out, "causes CUDA errors"): rows run from 2025-04 with torch.compile on take
  // features.cross_entropy = "compiled" (run 34: the logits kept in bf16, no fp32 copies). Off:
  // those rows with the eager loss.
  bool compiled_loss = true;
  // Eager PyTorch's host issue cost (docs/fidelity.md section 1): every row runs PyTorch from
  // Python without CUDA graphs, so the H200 validation's measured host costs apply
  // (validation/h200_compare.h: 31.0 us per forward op, 26.2 us per backward op, 728 / 951 us
  // per checkpointed block's forward / recomputation). Off: no host cost (the bare launch gaps).
  bool eager_host = true;
  // torchtitan's block (features.model_code = "torchtitan", docs/fsdp.md): its eager kernels (fp32
  // RMSNorm and complex RoPE with their casts, repeat_kv, the input-gradient sums of separate
  // linears; with torch.compile repeat_kv only) and per-op SAC's replay ending before the last
  // residual add. Checked against run 23's kernel trace. Off: the Megatron block.
  bool torchtitan_block = true;
  // The memory figure compared: rows whose published memory is the caching allocator's max_reserved
  // (mem_kind names it: torchtitan's console line, validation/fsdp/SOURCES.md) against the simulated
  // reserved peak (memory.peak_reserved_gib: the timeline's allocations through sim/caching_allocator.h);
  // the others against the allocated peak. Off: every row against the allocated peak (peak_gib).
  bool reserved_memory = true;
  // The attention kernel: torchtitan's and fms-fsdp's rows call F.scaled_dot_product_attention, whose
  // default backend on Hopper before torch 2.10 is FlashAttention-2 (cuDNN's is opt-in there:
  // pytorch/pytorch#138522; #142132 measured default SDPA at 329 against cuDNN's 631 TFLOP/s on H100);
  // fms-fsdp states "SDPA flash attention v2". features.attention = "flash2" (the calibration's
  // [attention_fa2], run 31). llm-foundry's rows: triton_at_fa2 below (its Triton kernel,
  // attn_impl = triton, is not measured here). Off: every row at the calibration's cuDNN fused attention.
  bool sdpa_fa2 = true;
  // The board power limit the row's GPUs ran at, where the row states one (torchtitan's Grand Teton
  // H100s: "500 W power limit", rows.csv `gpu`): hardware.power_limit_w, whose clock the calibration's
  // [power] fit gives (run 33, docs/cost-model.md §2e). Off: every row at its profile's 700 W.
  bool power_limit = true;
  // The inter-node network the row's `gpu` column states (validation/fsdp/SOURCES.md): hardware.nic_bandwidth
  // per GPU. "N Gb/s ... per GPU" is one GPU's (torchtitan's Grand Teton and WhiteFiber H100/H200: 400 Gb/s, the
  // profiles' own 50 GB/s); a figure not said to be per GPU is the node's, shared by its 8 GPUs: fms-fsdp's
  // "A100 80G 128 GPUs with 400Gbps" and "H100 96 GPUs with 800 Gbps" (README table header) and llm-foundry's
  // "1600 Gbps node-node interconnect (RoCE)". Read per GPU, 400 and 800 Gb/s would be two NICs per A100 / H100
  // (one ConnectX-6 carries 200 Gb/s, one ConnectX-7 400); a node's total they fit one NIC per GPU at 50 and
  // 100 Gb/s, and llm-foundry's says node-to-node. Off: every row at its profile's NIC bandwidth.
  bool stated_network = true;
  // llm-foundry's attention (attn_impl = triton: its copy of FlashAttention's Triton kernel, no bias: the
  // benchmark models set no ALiBi, SOURCES.md; on triton-pre-mlir) at FlashAttention-2's rate, the nearest
  // measured kernel of the same tiling: run 38 prices the rest of the MPT block within -4 .. +3% on the H200, and
  // FlashAttention-2 is 1.3-2.5x faster than FlashAttention in Triton (Dao 2023, arXiv 2307.08691, section
  // 4.1, A100), so FA2's time is a lower bound on the Triton kernel's, where the calibration's cuDNN fused
  // attention ("flash") ran 1.6-2.2x faster still (run 31). Off: llm-foundry's rows at the cuDNN rate.
  bool triton_at_fa2 = true;
  // llm-foundry's attention at its own measured rate (run 42: a kernel with the algorithm and launch shape of
  // llm-foundry's flash_attn_triton.py, measured with an ALiBi vector the rows did not set (under 1% of a
  // tile), built for Ampere's mma.sync as triton-pre-mlir emitted on Hopper; 2.2-2.9x FlashAttention-2's time
  // at the rows' shapes): features.attention = "triton_flash", the calibration's [attention_triton]. Still a
  // lower bound (today's compiler). Off: the rows at FlashAttention-2's rate (triton_at_fa2).
  bool triton_measured = true;
  // The gradient reduction precision each source's code sets (features.reduce_dtype): llm-foundry's rows by the
  // Composer mixed-precision mode the row states (DEFAULT: fp32 reduction; PURE: bf16 params, reduction and
  // buffers), fms-fsdp's by its bfSixteen policy (MixedPrecision(param_dtype, reduce_dtype, buffer_dtype all
  // bfloat16), fms_fsdp/policies/mixed_precision.py, chosen by get_policies when mixed_precision is on, the
  // config's default), torchtitan's by its mixed_precision_reduce default "float32". Off: every row with
  // the fp32 reduction (the key's default).
  bool stated_reduce_dtype = true;
};

// The inter-node bandwidth per GPU a row's `gpu` column states, bytes/s one direction; 0 when it states none
// (Mechanisms::stated_network): the first figure in Gb/s, Gbps, Tb/s or Tbps (decimals and thousands commas read),
// per GPU when "per GPU" (or "per-GPU", "/GPU") follows it before the clause ends (at ';', ')' or '('), else the
// node's over gpus_per_node. A unit without a number before it is an error (rows.csv is hand-written).
inline double stated_nic_bandwidth(const std::string& gpu, int gpus_per_node) {
  std::size_t at = std::string::npos, unit = 0;
  double scale = 1e9;
  for (const char* u : {"Gb/s", "Gbps", "Tb/s", "Tbps"}) {
    const std::size_t k = gpu.find(u);
    if (k != std::string::npos && k < at) {
      at = k;
      unit = std::string(u).size();
      scale = u[0] == 'T' ? 1e12 : 1e9;
    }
  }
  if (at == std::string::npos) return 0;
  std::size_t e = at;
  while (e > 0 && gpu[e - 1] == ' ') --e;
  std::size_t b = e;
  while (b > 0 && (std::isdigit(static_cast<unsigned char>(gpu[b - 1])) || gpu[b - 1] == '.' || gpu[b - 1] == ',')) --b;
  std::string num;
  for (std::size_t i = b; i < e; ++i)
    if (gpu[i] != ',') num += gpu[i];
  if (num.empty() || !std::isdigit(static_cast<unsigned char>(num.front())))
    throw std::runtime_error("rows.csv gpu column: a bandwidth unit without a number before it: '" + gpu + "'");
  const double bits = std::stod(num) * scale;
  const std::size_t end = gpu.find_first_of(";)(", at + unit);
  const std::string rest = gpu.substr(at + unit, end == std::string::npos ? std::string::npos : end - at - unit);
  const bool per_gpu = rest.find("per GPU") != std::string::npos || rest.find("per-GPU") != std::string::npos ||
                       rest.find("/GPU") != std::string::npos;
  return bits / 8.0 / (per_gpu ? 1 : std::max(1, gpus_per_node));
}

// The power limit a row's `gpu` column states ("..., 500 W power limit"), W; 0 when it states none.
inline double stated_power_limit_w(const std::string& gpu) {
  const std::size_t at = gpu.find(" W power limit");
  if (at == std::string::npos) return 0;
  std::size_t b = at;
  while (b > 0 && (std::isdigit(static_cast<unsigned char>(gpu[b - 1])) || gpu[b - 1] == '.')) --b;
  while (b < at && gpu[b] == '.') ++b;
  return b < at ? std::stod(gpu.substr(b, at - b)) : 0;
}

inline const hardware::Calibration& shipped_calibration(const std::string& rel) {
  static std::map<std::string, hardware::Calibration> cache;
  auto it = cache.find(rel);
  if (it == cache.end()) it = cache.emplace(rel, hardware::read_calibration(source_path(rel))).first;
  return it->second;
}

inline config::Scenario row_scenario(const Row& r, const Mechanisms& mech = {}) {
  config::Scenario s;
  s.name = r.at("id");
  s.model_ref = "(inline)";
  const std::string gpu = r.at("gpu");
  std::string hw = gpu.find("A100") != std::string::npos ? "a100-sxm-80gb" : gpu.find("H200") != std::string::npos ? "h200" : "h100-sxm";
  s.hardware_ref = hw;
  s.hardware = config::load_hardware(source_path("hardware/" + hw + ".toml"));
  const double gib = 1024.0 * 1024.0 * 1024.0;
  if (gpu.find("A100 40GB") != std::string::npos) s.hardware.hbm_bytes = 40 * gib;
  if (gpu.find("96GB") != std::string::npos || gpu.find("94/95GB") != std::string::npos) s.hardware.hbm_bytes = 94 * gib;
  // Meta's Grand Teton H100s: "96GB HBM2e with 2.4 TB/sec peak memory bandwidth", "the default 500W power
  // limit" (pytorch/torchtitan benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md @2887250bb, Hardware):
  // memory-bound kernels run against that bandwidth (the calibration's fractions apply to it); the power
  // limit sets the SM clock (Mechanisms::power_limit). The 94/95 GB rows' bandwidth is not stated.
  if (gpu.find("96GB HBM2e") != std::string::npos) s.hardware.hbm_bandwidth = 2.4e12;
  if (mech.power_limit && stated_power_limit_w(gpu) > 0) s.hardware.power_limit_w = stated_power_limit_w(gpu);
  if (mech.stated_network && stated_nic_bandwidth(gpu, s.hardware.gpus_per_node) > 0)
    s.hardware.nic_bandwidth = stated_nic_bandwidth(gpu, s.hardware.gpus_per_node);
  if (mech.eager_host) {
    s.hardware.host_overhead = validation::kEagerHostOverheadS;
    s.hardware.host_compiled_overhead = validation::kCompiledHostOverheadS;
    s.hardware.host_backward_overhead = validation::kBackwardHostOverheadS;
    s.hardware.host_checkpoint_overhead = validation::kCheckpointHostS;
    s.hardware.host_recompute_overhead = validation::kRecomputeHostS;
  }
  const std::string cal = hardware::default_calibration_file(s.hardware);
  if (mech.calibrated && !cal.empty()) {
    s.calibration = shipped_calibration(cal);
    s.calibration_path = source_path(cal);
    s.calibration_choice = "default";
  }
  models::ModelSpec m;
  const bool mpt = r.has("model", "MPT");
  m.name = r.at("model");
  m.layers = r.num("layers");
  m.hidden = r.num("hidden");
  m.ffn_hidden = r.num("ffn_hidden");
  m.heads = r.num("heads");
  m.kv_heads = r.num("kv_heads");
  m.head_dim = m.hidden / m.heads;
  m.vocab = r.num("vocab");
  m.activation = mpt ? models::Activation::gelu : models::Activation::swiglu;
  m.tied_embeddings = mpt;
  // MPT trains without dropout: resid_pdrop and emb_pdrop default 0.0 (llmfoundry/models/mpt/configuration_mpt.py)
  // and attn_pdrop 0.0 (llmfoundry/models/layers/blocks.py attn_config_defaults) at 5e85bd62d, the benchmark
  // tables' commit (and at v0.1.0 .. v0.4.0); scripts/train/yamls/pretrain/mpt-*.yaml set none of them. The GELU
  // family's default (GPT's dropout) does not hold; its biases do (no_bias defaults to False, unset there).
  if (mpt) m.dropout = false;
  s.model = m;
  s.gpus = r.num("gpus");
  s.training.seq_len = r.num("seq_len");
  s.training.micro_batch = r.num("local_batch");
  // With a pipeline, torchtitan splits the local batch into pp micro-batches (its default
  // pipeline_parallel_microbatches = pp; the rows say so where it is not stated).
  if (r.num("pp") > 1 && s.training.micro_batch % r.num("pp") == 0) s.training.micro_batch /= r.num("pp");
  s.training.global_batch = r.num("global_batch");
  s.training.precision = r.at("float8") == "none" ? hardware::Precision::bf16 : hardware::Precision::fp8;
  auto& P = s.parallel;
  P.tp = r.num("tp");
  P.pp = r.num("pp");
  P.cp = r.num("cp");
  P.dp = s.gpus / (P.tp * P.pp * P.cp);
  P.sequence_parallel = P.tp > 1;
  P.distributed_optimizer = true;
  P.zero_stage = 3;
  if (r.num("dp_replicate") > 1) P.shard_degree = r.num("dp_shard");
  const std::string sched = r.at("pp_schedule");
  s.schedule.name = sched.find("Interleaved") != std::string::npos ? config::ScheduleKind::interleaved_1f1b
                                                                   : config::ScheduleKind::one_f_one_b;
  if (s.schedule.name == config::ScheduleKind::interleaved_1f1b) P.vpp = 2;
  // Layers that do not split evenly: one fewer on the first and the last stage when that evens
  // the rest (the rule of `plan`; Llama 3 paper §3.3.2).
  const int vstages = P.pp * P.vpp;
  if (P.pp > 1 && m.layers % vstages != 0 && (m.layers + 2) % vstages == 0) {
    P.first_stage_layers = (m.layers + 2) / vstages - 1;
    P.last_stage_layers = P.first_stage_layers;
  }
  auto& F = s.features;
  F.flash_attention = true;
  F.fused_kernels = r.at("torch_compile").rfind("on", 0) == 0;
  F.overlap_grad_reduce = true;
  F.overlap_param_gather = true;
  F.tp_comm_overlap = r.at("async_tp").rfind("yes", 0) == 0;
  const std::string ac = r.at("activation_checkpointing");
  F.recompute = ac.rfind("full", 0) == 0 ? config::Recompute::full
                : ac.rfind("selective", 0) == 0 ? config::Recompute::selective : config::Recompute::none;
  if (mech.framework_ac && ac.rfind("selective layer", 0) == 0) {
    F.recompute = config::Recompute::full;
    F.recompute_every = 2;
  }
  if (mech.framework_ac && ac.rfind("on (AC True", 0) == 0) F.recompute = config::Recompute::full;
  if (mech.op_sac && (ac.rfind("selective op", 0) == 0 || ac.rfind("selective (op", 0) == 0))
    F.recompute = config::Recompute::selective_op;
  const std::string rs = r.at("reshard_after_forward");
  F.reshard_after_forward = !(rs.rfind("no", 0) == 0 || rs.rfind("False", 0) == 0);
  const bool torchtitan = r.at("id").rfind("TT", 0) == 0;
  F.fsdp_version = mech.fsdp2_copies && torchtitan ? 2 : 1;
  if (mech.torch_loss && torchtitan) F.cross_entropy = config::CrossEntropy::fp32;
  if (mech.torch_loss && mech.compiled_loss && torchtitan && F.fused_kernels && r.at("date") >= "2025-04")
    F.cross_entropy = config::CrossEntropy::compiled;
  if (mech.torchtitan_block && torchtitan) F.model_code = config::ModelCode::torchtitan;
  if (mech.sdpa_fa2 && (torchtitan || r.at("id").rfind("FMS", 0) == 0)) F.attention = config::Attention::flash2;
  if (mech.triton_at_fa2 && r.at("id").rfind("LF", 0) == 0) F.attention = config::Attention::flash2;
  if (mech.triton_measured && r.at("id").rfind("LF", 0) == 0) F.attention = config::Attention::triton_flash;
  if (mech.stated_reduce_dtype &&
      (r.at("precision").find("mixed_precision PURE") != std::string::npos || r.at("precision").find("bfSixteen") != std::string::npos))
    F.reduce_fp32 = false;
  F.python_gc = false;
  F.dataloader_workers = 2;
  return s;
}

struct Comparison {
  std::string id, half;
  double published_tps = 0, predicted_tps = 0, tps_error = 0;
  double published_mem = 0, predicted_mem = 0, mem_error = 0;   // published_mem 0: not reported
  std::string note;
  bool expressible = true;   // false: the row cannot be a valid scenario (note says why)
};

inline Comparison compare(const Row& r, const Mechanisms& mech = {}) {
  Comparison c;
  c.id = r.at("id");
  c.half = r.half;
  c.published_tps = r.real("tokens_per_s_per_gpu");
  c.published_mem = r.real("peak_mem_gib");
  const auto s = row_scenario(r, mech);
  const auto diags = config::validate(s);
  if (!diags.empty()) {
    c.expressible = false;
    c.note = "not expressible:";
    for (const auto& d : diags) c.note += " " + d.message + ";";
    return c;
  }
  step::SimulateOptions o;
  o.keep_timeline = false;
  const auto res = step::simulate(s, o);
  c.predicted_tps = res.tokens_per_s_per_gpu;
  c.tps_error = c.predicted_tps / c.published_tps - 1.0;
  const bool reserved = mech.reserved_memory && r.at("mem_kind").find("max_reserved") != std::string::npos;
  c.predicted_mem = reserved ? res.memory.peak_reserved_gib : res.memory.peak_gib;
  if (c.published_mem > 0) c.mem_error = c.predicted_mem / c.published_mem - 1.0;
  const auto& P = s.parallel;
  c.note = "tp " + std::to_string(P.tp) + " pp " + std::to_string(P.pp) + " cp " + std::to_string(P.cp) + " dp " +
           std::to_string(P.dp) + (P.shard_degree > 0 ? " shard " + std::to_string(P.shard_degree) : "") + " mbs " +
           std::to_string(s.training.micro_batch) + " " + config::to_string(s.features.recompute) +
           (s.features.recompute_every > 1 ? "/" + std::to_string(s.features.recompute_every) : "") +
           (s.training.precision == hardware::Precision::fp8 ? " fp8" : "") +
           (s.features.fused_kernels ? " compile" : "") + (s.features.reshard_after_forward ? "" : " no-reshard");
  return c;
}

}  // namespace mfusim::validation::fsdp
