#pragma once
// Modern published training runs (validation/modern/rows.csv, 157 rows: H100,
// B200, GB200, GB300; bf16 and fp8; context-parallel and interleaved layouts)
// as Scenarios built in code, simulated, and compared with the published step
// time. Shared by validate_modern (the full table, docs/validation-modern.md)
// and tests/validation/test_modern.cpp (the regression guard).
//
// Configuration per row = the published layout (rows.csv: model_file, layers,
// gpu_type, precision, seq, tp, pp, cp, vpp, dp, mbs, gbs) plus these
// assumptions, each chosen once for the whole set, never per row:
//  * hardware by gpu_type: H100 -> hardware/h100-sxm.toml, B200 -> b200.toml,
//    GB200 -> gb200-nvl72.toml, GB300 -> gb300-nvl72.toml (datasheet figures).
//  * profile "datasheet": no calibration. Profile "calibrated": the H100 rows
//    use hardware/calibration/h100.toml (measured on an H100 SXM, run 54; profile "h200"
//    prices them as before it, on the H200's file carried by the HBM datasheet ratio);
//    the B200 rows use hardware/calibration/b200-xla.toml (`mfusim calibrate`'s fit of OpenXLA's
//    published B200 GEMM measurements, validation/xla/SOURCES.md, and of cuDNN frontend's published
//    B200 SDPA table, validation/cudnn_sdpa/SOURCES.md; every other family on the datasheet); the GB200
//    and GB300 rows gb200-cudnn.toml / gb300-cudnn.toml (their cuDNN SDPA tables alone: GEMMs and
//    every other family on the datasheet).
//  * what a NeMo / Megatron-Core performance recipe runs (NeMo 24.x-26.x
//    llm recipes, Megatron-Bridge scripts/performance): flash attention,
//    fused kernels, distributed optimizer, overlap_grad_reduce and
//    overlap_param_gather on; sequence parallel and tp_comm_overlap on when
//    tp > 1 (NeMo's performance recipes enable userbuffers TP overlap for
//    every tp > 1 layout); overlap_p2p_comm on when vpp > 1 (Megatron allows it
//    with interleaving only, and NeMo sets it there); no activation recompute
//    (none of the tables states one); no CUDA graphs; Python GC off (NeMo's
//    GarbageCollectionCallback runs a manual collection at a fixed interval).
//  * gradients: bf16 buffers and reduction (features.reduce_dtype = "bf16") on the NeMo rows
//    (DGXC*, NEMO*, NEMOLS*): NeMo's performance scripts set grad_reduce_in_fp32 = False for
//    every run (NVIDIA/NeMo scripts/performance/helpers.py @8cfedd7, line 234; the recipes'
//    performance modes too, e.g. nemo/collections/llm/recipes/llama3_8b.py line 238); NeMo 1.x
//    launcher configs the same with optim.grad_sync_dtype = bf16. The Megatron-Bridge rows
//    (MB*) keep fp32: its recipes default to grad_reduce_in_fp32 = True
//    (src/megatron/bridge/recipes/common.py @067f987) and no performance config of that commit
//    sets it off.
//  * schedule: interleaved-1f1b when vpp > 1, else 1f1b.
//  * Llama 3.1 405B with 126 layers on pp x vpp virtual stages that do not
//    divide 126: Megatron's --account-for-embedding-in-pipeline-split and
//    --account-for-loss-in-pipeline-split count the embedding and the loss as
//    one layer each, so (126 + 2) / (pp*vpp) layers per virtual stage, one
//    fewer on the first and the last; expressed with
//    parallel.account_for_embedding_in_pipeline_split and
//    parallel.account_for_loss_in_pipeline_split.
//  * mbs not stated (NeMo long-sequence tables): 1.
//  * fp8 rows: precision fp8, with the row's stated recipe as features.fp8_recipe (fp8_recipe_of):
//    current scaling "current", MXFP8 "mxfp8", delayed or not stated "tensorwise" (delayed scaling,
//    Transformer Engine's and NeMo's default).
// Megatron-FSDP rows (fsdp > 0): ZeRO-3 over a sharding group of `fsdp` ranks (row_scenario).
// Not expressible (listed with the reason, never dropped): the Llama 3 paper rows (Meta's own stack: micro-batch and
// virtual stages not stated, FSDP-style data parallelism), and any layout the
// scenario validator refuses.
//
// Error convention (as docs/validation.md for its step-time rows): predicted
// step / published step - 1, so -20% means the simulator is too fast (optimistic).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "config/loader.h"
#include "config/scenario.h"
#include "hardware/calibration.h"
#include "step/simulate.h"
#include "validation/published/published.h"

namespace mfusim::validation::modern {

struct ModernRow {
  std::string id, half, source, framework, gpu_type, model, model_file, precision, fp8_recipe, metric_text, stratum;
  int gpus = 0, layers = 0, seq = 0, tp = 1, pp = 1, cp = 1, vpp = 0, dp = 0, fsdp = -1, mbs = 0, gbs = 0;
  double value = 0;
  double tokens_per_s_per_gpu = 0, model_tflops_per_gpu = 0;   // where the source states them (0: not stated)
};

// sustained: as calibrated, with hardware/calibration/h200-sustained.toml (GEMMs measured at the
// power-capped clock of back-to-back GEMM sequences, run 16; every other family as h200.toml).
// h200: as calibrated, with the H100 rows on hardware/calibration/h200.toml carried by the HBM datasheet ratio,
// as the set was priced before run 54 measured the H100 itself (the calibrated profile's h100.toml).
enum class Profile { datasheet, calibrated, sustained, h200 };
inline const char* to_string(Profile p) {
  return p == Profile::datasheet ? "datasheet" : p == Profile::calibrated ? "calibrated" : p == Profile::sustained ? "sustained" : "h200";
}

struct ModernComparison {
  ModernRow row;
  bool expressible = true;
  std::string reason;            // why not expressible, or the configuration simulated
  double published_step_s = 0, predicted_step_s = 0;
  double error = 0;              // predicted step / published step - 1 (-: simulator too fast)
  step::Breakdown breakdown;
  int microbatches = 0;
  double peak_gib = 0;
  bool fits = true;
  bool calibrated = false;       // a measured calibration was applied
};

// Rows of rows.csv with their half from split.csv, in file order.
inline std::vector<ModernRow> read_modern(const std::string& rows_path, const std::string& split_path) {
  auto read_table = [](const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error(path + ": cannot open");
    std::vector<std::vector<std::string>> t;
    std::string line;
    while (std::getline(in, line))
      if (!line.empty()) t.push_back(split_csv_line(line));   // quoted fields never span lines here
    if (t.empty()) throw std::runtime_error(path + ": empty");
    return t;
  };
  const auto rows = read_table(rows_path);
  const auto split = read_table(split_path);
  auto col = [](const std::vector<std::string>& head, const std::string& path, const std::string& name) {
    const auto it = std::find(head.begin(), head.end(), name);
    if (it == head.end()) throw std::runtime_error(path + ": no column '" + name + "'");
    return static_cast<std::size_t>(it - head.begin());
  };
  std::map<std::string, std::pair<std::string, std::string>> half;   // id -> (half, stratum)
  {
    const auto& h = split[0];
    const std::size_t ci = col(h, split_path, "id"), ch = col(h, split_path, "half"), cs = col(h, split_path, "stratum");
    for (std::size_t i = 1; i < split.size(); ++i) half[split[i][ci]] = {split[i][ch], split[i][cs]};
  }
  const auto& h = rows[0];
  auto c = [&](const char* name) { return col(h, rows_path, name); };
  const std::size_t c_id = c("id"), c_src = c("source"), c_fw = c("framework"), c_gpu = c("gpu_type"), c_gpus = c("gpus"), c_model = c("model"),
                    c_file = c("model_file"), c_layers = c("layers"), c_seq = c("seq"), c_tp = c("tp"), c_pp = c("pp"),
                    c_cp = c("cp"), c_vpp = c("vpp"), c_dp = c("dp"), c_fsdp = c("fsdp"), c_mbs = c("mbs"),
                    c_gbs = c("gbs"), c_prec = c("precision"), c_rec = c("fp8_recipe"), c_metric = c("metric"),
                    c_value = c("value"), c_tok = c("tokens_per_s_per_gpu"), c_tfl = c("model_tflops_per_gpu");
  std::vector<ModernRow> out;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const auto& f = rows[i];
    if (f.size() < h.size()) throw std::runtime_error(rows_path + ": short row " + f[0]);
    ModernRow r;
    r.id = f[c_id];
    const auto it = half.find(r.id);
    if (it == half.end()) throw std::runtime_error(split_path + ": no half for " + r.id);
    r.half = it->second.first;
    r.stratum = it->second.second;
    r.source = f[c_src];
    r.framework = f[c_fw];
    r.gpu_type = f[c_gpu];
    r.model = f[c_model];
    r.model_file = f[c_file].empty() ? f[c_model] : f[c_file];
    r.gpus = to_int(f[c_gpus]);
    r.layers = to_int(f[c_layers]);
    r.seq = to_int(f[c_seq]);
    r.tp = std::max(1, to_int(f[c_tp]));
    r.pp = std::max(1, to_int(f[c_pp]));
    r.cp = std::max(1, to_int(f[c_cp]));
    r.vpp = to_int(f[c_vpp]);
    r.dp = to_int(f[c_dp]);
    r.fsdp = f[c_fsdp].empty() ? -1 : to_int(f[c_fsdp]);
    r.mbs = to_int(f[c_mbs]);
    r.gbs = to_int(f[c_gbs]);
    r.precision = f[c_prec];
    r.fp8_recipe = f[c_rec];
    r.metric_text = f[c_metric];
    r.value = std::stod(f[c_value]);
    r.tokens_per_s_per_gpu = f[c_tok].empty() ? 0.0 : std::stod(f[c_tok]);
    r.model_tflops_per_gpu = f[c_tfl].empty() ? 0.0 : std::stod(f[c_tfl]);
    out.push_back(r);
  }
  if (out.size() != half.size()) throw std::runtime_error(split_path + ": row count differs from " + rows_path);
  return out;
}

// Megatron-LM's num_floating_point_operations (training.py) per sequence,
// the formula behind NeMo's "model TFLOP/s/GPU": 12 * s * L * h^2 *
// ((1 + kv/heads + s/h) + ffn/h * gated + V / (2 L h)), gated = 1.5 for
// SwiGLU. Checked in test_modern.cpp against the NeMo 24.07 rows that state
// both tokens/s/GPU and model TFLOP/s/GPU.
inline double megatron_flops_per_sequence(const models::ModelSpec& m, double seq) {
  const double h = static_cast<double>(m.hidden), L = m.layers;
  const double q_ratio = static_cast<double>(m.heads) * static_cast<double>(m.head_dim) / h;
  const double gated = m.activation == models::Activation::swiglu ? 1.5 : 1.0;
  return 12.0 * seq * L * h * h *
         ((1.0 + static_cast<double>(m.kv_heads) / m.heads + seq / h) * q_ratio +
          static_cast<double>(m.ffn_hidden) / h * gated + static_cast<double>(m.vocab) / (2.0 * L * h));
}

// Loaded once: hardware profiles, model files, the H200 calibration.
class Inputs {
 public:
  // The rows' fp8 weights (features.fp8_params) as their sources' launchers set them (row_scenario);
  // false: every row with bf16 weights and TE's fp8 copies (validate_modern --without fp8_params).
  bool fp8_params = true;
  // The rows' activation offloading (features.activation_offload_layers) as their recipes set it
  // (row_scenario); false: none (validate_modern --without activation_offload).
  bool activation_offload = true;
  // The rows' activation recompute as their launchers' model configurations set it (recompute_of); false:
  // none on any row (validate_modern --without row_recompute).
  bool row_recompute = true;
  // The delayed-scaling rows' amax reduction as their launches configured it (amax_reduction_of); false: none
  // on any row, the all-reduce left out (validate_modern --without amax_reduction).
  bool amax_reduction = true;
  // false: every delayed-scaling row on Megatron-Core's default group, tp x dp x cp, whatever its launch set
  // (validate_modern --without row_amax).
  bool row_amax = true;
  // The rows' fp8 recipes as their sources state them (fp8_recipe_of); false: every fp8 row under delayed
  // scaling (validate_modern --without fp8_recipes).
  bool fp8_recipes = true;
  // The Blackwell profiles' GEMM ceilings at a training step's clock (hardware.gemm_sustained_eff_*); false:
  // none, every GEMM on its unloaded-clock curve (validate_modern --without sustained_gemm).
  bool sustained_gemm = true;
  // The profiles' attention rate at a training step's clock (hardware.attention_sustained_ratio); false: none
  // (validate_modern --without sustained_attention).
  bool sustained_attention = true;
  const hardware::HardwareSpec& hardware(const std::string& gpu_type) {
    static const std::map<std::string, std::string> file = {
        {"H100", "h100-sxm"}, {"B200", "b200"}, {"GB200", "gb200-nvl72"}, {"GB300", "gb300-nvl72"}};
    const auto f = file.find(gpu_type);
    if (f == file.end()) throw std::runtime_error("no hardware profile for gpu_type " + gpu_type);
    auto it = hw_.find(f->second);
    if (it == hw_.end()) {
      hardware::HardwareSpec hw = config::load_hardware(source_path("hardware/" + f->second + ".toml"));
      if (!sustained_gemm) hw.gemm_sustained_eff_bf16 = hw.gemm_sustained_eff_fp8 = 0;
      if (!sustained_attention) hw.attention_sustained_ratio = 0;
      it = hw_.emplace(f->second, hw).first;
    }
    return it->second;
  }
  const models::ModelSpec& model(const std::string& name) {
    auto it = models_.find(name);
    if (it == models_.end())
      it = models_.emplace(name, config::load_model(source_path("models/" + name + ".toml"))).first;
    return it->second;
  }
  // A calibration file (relative to the source tree), read once.
  const hardware::Calibration& calibration(const std::string& rel) {
    auto it = cals_.find(rel);
    if (it == cals_.end()) it = cals_.emplace(rel, hardware::read_calibration(source_path(rel))).first;
    return it->second;
  }
  static constexpr const char* kSustainedCalibration = "hardware/calibration/h200-sustained.toml";
  static constexpr const char* kH200Calibration = "hardware/calibration/h200.toml";

 private:
  std::map<std::string, hardware::HardwareSpec> hw_;
  std::map<std::string, models::ModelSpec> models_;
  std::map<std::string, hardware::Calibration> cals_;
};

inline std::string layout_text(const config::Scenario& s) {
  const auto& p = s.parallel;
  std::string t = "tp" + std::to_string(p.tp) + " pp" + std::to_string(p.pp) + " cp" + std::to_string(p.cp) +
                  (p.vpp > 1 ? " vpp" + std::to_string(p.vpp) : std::string()) + " dp" + std::to_string(p.dp) +
                  " mbs" + std::to_string(s.training.micro_batch) + " gbs" + std::to_string(s.training.global_batch) +
                  " " + config::to_string(s.training.precision);
  if (s.features.tp_comm_overlap) t += " tp-overlap";
  if (p.zero() == 3) t += " zero3(shard " + std::to_string(p.shard()) + ")";
  if (p.account_for_embedding_in_pipeline_split || p.account_for_loss_in_pipeline_split) t += " split(emb+loss)";
  return t;
}

// Rows whose launch turned Transformer Engine's cuDNN attention off (NVTE_FUSED_ATTN=0), so that
// DotProductAttention (and its context-parallel ring) ran flash-attn 2 (features.attention = "flash2",
// priced with the calibration's [attention_fa2]: FlashAttention-2's kernels as PyTorch SDPA builds them,
// run 31). Everything else ran cuDNN's fused attention, which Transformer Engine selects on sm90 when
// both are enabled (transformer_engine/pytorch/attention.py @v1.3 and @v1.4, "Select FusedAttention on
// sm90 and FlashAttention on others for performance"; dot_product_attention/utils.py in 2.x). Sources:
//  - dgxc-benchmarking v24.11.1 (@35a9aecc) nemo_megatron/launch.sh: `export NVTE_FUSED_ATTN=0` (GPT-3 175B);
//    nemotron/configure.sh: `export NVTE_FUSED_ATTN=0` in the 340b branch (its 15b branch sets 1;
//    llama3.1/configure.sh sets NVTE_FLASH_ATTN=0, NVTE_FUSED_ATTN=1: cuDNN).
//  - NeMo's documentation tables of the 24.03.01 container (the H100 long-sequence table) and of the 24.07
//    container (the performance summary): NeMo-Framework-Launcher's configuration for each container sets
//    `NVTE_FUSED_ATTN: 0 # Disable cudnn FA until we've tested it more` for every run
//    (launcher_scripts/conf/config.yaml @b434fd3e, `container: nvcr.io/nvidia/nemo:24.03.01.framework`;
//    @23972bc5 and @0b1a110c, the two "24.07 release" commits, `container: nvcr.io/nvidia/nemo:24.07`; the
//    default became cuDNN's on 2024-08-29, @04b8d098 "enable fused attention"). The tables do not name
//    their launcher, so for these rows it is the container's default, not the run's stated setting. Except
//    GPT-3 175B in the 24.07 summary: the launcher's performance work of July 2024 enabled cuDNN's attention
//    for that model alone (@95c77b59 "Enable cuDNN FlashAtt only for 175B": `+env_vars.NVTE_FUSED_ATTN=1` in
//    examples/training/gpt/h100/175b_fp8_16node.sh, after @a6490ffe had enabled it for every model; merged
//    2024-08-13, @20ab57b3), so those two rows stay on cuDNN.
inline bool cudnn_attention_off(const ModernRow& r) {
  const bool dgxc2411 = r.source.find("dgxc-benchmarking @35a9aecc8d5b17d99d80f52f38c75ade0dbab7ae") != std::string::npos;
  if (dgxc2411 && (r.source.find("nemo_megatron/README_175b.md") != std::string::npos ||
                   r.source.find("nemotron/README_340b.md") != std::string::npos))
    return true;
  const bool nemo_docs = r.source.find("NVIDIA/NeMo @") != std::string::npos &&
                         (r.source.find("performance_long_sequence.md") != std::string::npos ||
                          r.source.find("performance_summary.md") != std::string::npos);
  if (r.gpu_type != "H100" || !nemo_docs) return false;
  if (r.framework.find("24.03.01") != std::string::npos) return true;
  return r.framework.find("NeMo 24.07") != std::string::npos && r.model != "gpt3-175b";
}

// Delayed scaling's amax reduction (features.fp8_amax_reduction, docs/cost-model.md 2b) as a row's launch ran
// it. Megatron-Core's TransformerBlock passes Transformer Engine's fp8_autocast the amax reduction group of
// the stage's tensor-, data- and context-parallel ranks (parallel_state.get_amax_reduction_group, core_v0.7.0
// to core_v0.9.0; tp_only_amax_red = False by default), and Transformer Engine from 1.6 all-reduces the amaxes
// over it at every chunk's forward and backward end. Two releases' launches ran a Transformer Engine that
// still read NVTE_DP_AMAX_REDUCE_INTERVAL, which they set to 0 ("AMAX is reduced only in TP domain":
// transformer_engine/pytorch/fp8.py @bfe21c3d6, the tensor-parallel group alone, none at tp 1), with
// NVTE_ASYNC_AMAX_REDUCTION=1 beside it ("tp"); Transformer Engine's commit 73f8d90fe ("cuda graph support",
// 2024-04-12, first in v1.6rc1) removed both variables:
//  - NeMo 24.05 (dgxc-benchmarking v24.11.1 nemo_megatron/launch.sh: `export NVTE_DP_AMAX_REDUCE_INTERVAL=0`,
//    `export NVTE_ASYNC_AMAX_REDUCTION=1`, image nemo:24.05). An inference: the container's Transformer Engine
//    is "1.6.0.dev0" (docs.nvidia.com/nemo-framework/user-guide/24.09/softwarecomponentversions.html), the
//    version string of Transformer Engine's main branch from 2024-03-18 to 2024-04-15, a window that holds
//    73f8d90fe; NeMo's README of that release (v2.0.0rc0) gives bfe21c3d6 (2024-04-06), before it, as the
//    Transformer Engine to build NeMo from.
//  - NeMo 24.03.01 (the long-sequence H100 table): NeMo-Framework-Launcher's config.yaml for that container
//    sets both (`NVTE_DP_AMAX_REDUCE_INTERVAL: 0 # Diable FP8 AMAX reduction in the data-parallel domain`,
//    `NVTE_ASYNC_AMAX_REDUCTION: 1`, @b434fd3e). An inference too: its Transformer Engine is taken to predate
//    24.05's.
// The same variables in the 24.07 launcher (@0b1a110c) and the 24.09 scripts (llama3.1/configure.sh,
// nemotron/configure.sh) met Transformer Engine 1.8.0.dev0 and 1.10 (the same component-versions page), which
// no longer read them: those rows, and NeMo 2's (25.02.01, 25.04.01: bf16_with_fp8_mixed, delayed scaling;
// tp_only_amax_red, added to NeMo on 2024-09-11 @46aa1eef5e, is set only by its GPT-3 175B performance script,
// @58912c415b, no row here), reduce over tp x dp x cp. Rows under current scaling or MXFP8 have no such
// all-reduce. Inputs::row_amax false: every delayed row on Megatron-Core's default group.
inline config::Fp8AmaxReduction amax_reduction_of(const ModernRow& r) {
  const bool dgxc2411 = r.source.find("dgxc-benchmarking @35a9aecc8d5b17d99d80f52f38c75ade0dbab7ae") != std::string::npos;
  if (dgxc2411 && r.source.find("nemo_megatron/README_175b.md") != std::string::npos) return config::Fp8AmaxReduction::tp;
  if (r.framework.find("24.03.01") != std::string::npos) return config::Fp8AmaxReduction::tp;
  return config::Fp8AmaxReduction::tp_dp_cp;
}

// The activation recompute a row's launcher configured, where its model configuration says so. An audit
// of every row's launcher configuration for recompute (activations_checkpoint_granularity in the NeMo 1.x
// launchers' model YAML, recompute_* in Megatron-Bridge's performance configs; not the NeMo long-sequence
// rows, which name no configuration) found one model with it:
//  - Nemotron-4 340B, selective (Megatron-Core's checkpointed core attention: the attention kernels run
//    again in the backward): dgxc-benchmarking v24.11.1 (@35a9aecc) nemotron/nemotron4-340b-synth.yaml
//    `activations_checkpoint_granularity: selective`, which nemotron/configure.sh does not override; the
//    NeMo 24.07 summary's row by inference: NeMo-Framework-Launcher's launcher_scripts/conf/training/nemotron/
//    nemotron_340b.yaml has it at the 24.07 release (@0b1a110c) and after its update to the summary's
//    pp 8 x vpp 12 layout (@630e6544), but the summary's fp8 run at that layout was not the release's YAML as is.
//  Not applied: Megatron-Bridge's Llama 3 8B FP8-CS H100 config recomputes its first 5 layers per chunk at
//  v0.2.0, v0.3.0 and v0.4.1 (recompute_num_layers=5, "full" / "block"), but it took that in place of
//  Megatron-FSDP (commit e3ed3267d, 2025-11-20, "lm3 recomp"), while the published 25.11 table lists the row with
//  FSDP (1, later corrected to 8): the published step ran the earlier configuration, FSDP without recompute.
//  Every other row's configuration recomputes nothing: the Llama 3.1, GPT-3 175B and Nemotron-4 15B YAMLs
//  of v24.11.1 and the launcher's GPT-3, Llama 2 / 3 and Nemotron-3 configurations at @0b1a110c set
//  granularity null; the NeMo 2 scripts of dgxc-benchmarking v25.04 and v25.05.01 set no recompute.
struct RowRecompute {
  config::Recompute recompute = config::Recompute::none;
  int num_layers = 0;   // features.recompute_num_layers (Megatron's block method); 0 = every layer
};
inline RowRecompute recompute_of(const ModernRow& r) {
  if (r.model == "nemotron4-340b" && (r.source.find("nemotron/README_340b.md") != std::string::npos ||
                                      r.framework.find("NeMo 24.07") != std::string::npos))
    return {config::Recompute::selective, 0};
  return {};
}

// The Transformer Engine recipe a row's fp8_recipe column states: MXFP8 block scaling, per-tensor current
// scaling ("FP8-CS", or "current scaling" derived from the release's table and recipes), else delayed
// scaling (stated, or not stated: the NeMo default of those releases).
inline config::Fp8Recipe fp8_recipe_of(const ModernRow& r) {
  if (r.fp8_recipe.find("MXFP8") != std::string::npos) return config::Fp8Recipe::mxfp8;
  if (r.fp8_recipe.find("FP8-CS") != std::string::npos || r.fp8_recipe.find("current scaling") != std::string::npos)
    return config::Fp8Recipe::current;
  return config::Fp8Recipe::tensorwise;
}

// The Scenario of a row, or nullopt with `why` set when it is not expressible.
inline std::optional<config::Scenario> row_scenario(const ModernRow& r, Profile profile, Inputs& in, std::string& why) {
  if (r.id.rfind("LLAMA3-", 0) == 0) {
    why = "Meta's 4D-parallel stack: micro-batch and virtual stages not stated, FSDP-style data parallelism "
          "(parameters sharded, not resharded after forward)";
    return std::nullopt;
  }
  config::Scenario s;
  s.name = r.id;
  s.model_ref = r.model_file;
  s.model = in.model(r.model_file);
  if (r.layers > 0) {
    s.model.layers = r.layers;
    s.model.name += " (" + std::to_string(r.layers) + "-layer proxy)";
  }
  static const std::map<std::string, std::string> hw_name = {
      {"H100", "h100-sxm"}, {"B200", "b200"}, {"GB200", "gb200-nvl72"}, {"GB300", "gb300-nvl72"}};
  s.hardware = in.hardware(r.gpu_type);
  s.hardware_ref = hw_name.at(r.gpu_type);
  // The same choice `run` makes for a scenario without a calibration line (hardware::default_calibration_file):
  // the shipped H200 file on Hopper (its sustained variant in that profile); each Blackwell part's file of
  // published tables (the B200's GEMMs as OpenXLA measured them, validation/xla; each part's cuDNN attention as
  // cuDNN frontend published it, validation/cudnn_sdpa).
  if (profile != Profile::datasheet) {
    const std::string rel = profile == Profile::sustained && r.gpu_type == "H100" ? std::string(Inputs::kSustainedCalibration)
                            : profile == Profile::h200 && r.gpu_type == "H100"   ? std::string(Inputs::kH200Calibration)
                                                                                 : hardware::default_calibration_file(s.hardware);
    if (!rel.empty()) {
      s.calibration = in.calibration(rel);
      s.calibration_path = source_path(rel);
    }
  }
  s.gpus = r.gpus;
  s.training.seq_len = r.seq;
  s.training.global_batch = r.gbs;
  s.training.micro_batch = r.mbs > 0 ? r.mbs : 1;
  if (r.precision == "fp8") s.training.precision = hardware::Precision::fp8;
  else if (r.precision == "bf16") s.training.precision = hardware::Precision::bf16;
  else {
    why = "precision " + r.precision + " not modelled";
    return std::nullopt;
  }
  if (in.fp8_recipes && s.training.precision == hardware::Precision::fp8) s.features.fp8_recipe = fp8_recipe_of(r);
  s.features.fp8_amax_reduction = !in.amax_reduction ? config::Fp8AmaxReduction::none
                                  : in.row_amax      ? amax_reduction_of(r)
                                                     : config::Fp8AmaxReduction::tp_dp_cp;
  auto& p = s.parallel;
  p.tp = r.tp;
  p.pp = r.pp;
  p.cp = r.cp;
  p.vpp = r.vpp > 1 ? r.vpp : 1;
  p.dp = r.dp > 0 ? r.dp : r.gpus / (r.tp * r.pp * r.cp);
  p.sequence_parallel = r.tp > 1;
  p.distributed_optimizer = true;
  s.schedule.name = p.vpp > 1 ? config::ScheduleKind::interleaved_1f1b : config::ScheduleKind::one_f_one_b;
  const int vstages = p.pp * p.vpp;
  if (vstages > 1 && s.model.layers % vstages != 0) {
    // Megatron's account-for-embedding / account-for-loss pipeline split.
    const int total = s.model.layers + 2;
    if (total % vstages != 0) {
      why = std::to_string(s.model.layers) + " layers on pp*vpp = " + std::to_string(vstages) +
            " virtual stages divide neither evenly nor with the embedding and loss counted as layers";
      return std::nullopt;
    }
    p.account_for_embedding_in_pipeline_split = true;
    p.account_for_loss_in_pipeline_split = true;
  }
  auto& f = s.features;
  f.flash_attention = true;
  if (cudnn_attention_off(r)) f.attention = config::Attention::flash2;
  f.fused_kernels = true;
  f.overlap_grad_reduce = true;
  f.overlap_param_gather = true;
  f.tp_comm_overlap = r.tp > 1;
  f.overlap_p2p_comm = p.vpp > 1;
  if (in.row_recompute) {
    const RowRecompute rc = recompute_of(r);
    f.recompute = rc.recompute;
    f.recompute_num_layers = rc.num_layers;
  } else {
    f.recompute = config::Recompute::none;
  }
  f.cuda_graphs = false;
  f.python_gc = false;
  f.dataloader_workers = 8;
  if (r.id.rfind("MB", 0) != 0) f.reduce_fp32 = false;   // NeMo rows: grad_reduce_in_fp32 = False
  // fp8 weights (Megatron's --fp8-param-gather, features.fp8_params) where the row's launcher sets
  // them: Megatron-Bridge's fp8 presets (bf16_with_fp8_current_scaling_mixed, bf16_with_mxfp8_mixed:
  // fp8_param_gather = True in src/megatron/bridge/training/mixed_precision.py at v0.2.0, v0.3.0 and
  // v0.4.1, the NeMo 25.11, 26.02 and 26.04.01 containers; scripts/performance takes them unchanged),
  // dgxc-benchmarking v24.11.1's NeMo-launcher overrides (llama3.1/configure.sh and nemotron/configure.sh:
  // +model.fp8_params=$FP8_ENABLED; nemo_megatron/gpt3_175b_hydra.yaml: fp8_params: true) and its v25.04
  // and v25.05.01 NeMo 2 scripts (bf16_with_fp8_mixed, fp8_param_gather = True:
  // NVIDIA/NeMo nemo/collections/llm/recipes/precision/mixed_precision.py @0a07447). The NeMo
  // documentation tables (24.03.01, 24.07, 25.04.rc2) do not state it: left off.
  if (in.fp8_params && s.training.precision == hardware::Precision::fp8 &&
      (r.source.find("Megatron-Bridge") != std::string::npos || r.source.find("dgxc-benchmarking") != std::string::npos))
    f.fp8_params = true;
  if (r.fsdp > 0) {
    // Megatron-FSDP with optimizer state, gradients and parameters sharded (ZeRO-3,
    // `optim_grads_params`) over a sharding group of `fsdp` dp ranks: per-layer parameter
    // all-gathers and gradient reduce-scatters (docs/fsdp.md). Its buffers are the parameters'
    // own storage ("zero copy communication ... ParamAndGradBuffer", the megatron-fsdp package
    // description, pypi.org/project/megatron-fsdp): features.megatron_fsdp, no copies or casts.
    p.zero_stage = 3;
    p.shard_degree = r.fsdp < p.dp ? r.fsdp : 0;
    f.megatron_fsdp = true;
    // Megatron-Bridge's Llama 3 70B FP8 current-scaling recipes with Megatron-FSDP on the Grace-Blackwell
    // racks offload activations to the Grace CPU: cpu_offloading_num_layers 40 on GB200, 20 on GB300
    // (scripts/performance/configs/llama3/workload_base_configs.py @v0.2.0, LLAMA3_70B_GB{200,300}_FP8_CS_BASE_CONFIG;
    // scripts/performance/configs/llama/llama3_workload_base_configs.py @v0.3.0 and @v0.4.1,
    // LLAMA3_70B_PRETRAIN_CONFIG_GB{200,300}_FP8_CS_V1 and _V2).
    const bool grace = r.gpu_type == "GB200" || r.gpu_type == "GB300";
    if (in.activation_offload && r.id.rfind("MB", 0) == 0 && grace && r.model == "llama3-70b" &&
        s.training.precision == hardware::Precision::fp8 && r.fp8_recipe.find("MXFP8") == std::string::npos)
      f.activation_offload_layers = r.gpu_type == "GB200" ? 40 : 20;
  }
  const auto diags = config::validate(s);
  if (!diags.empty()) {
    why = "scenario refused:";
    for (const auto& d : diags) why += " " + d.message + ";";
    return std::nullopt;
  }
  return s;
}

// The published step time of a row (seconds), from its primary metric.
inline double published_step_s(const ModernRow& r, Inputs& in) {
  const std::string& m = r.metric_text;
  if (m.rfind("training step time", 0) == 0) return r.value;
  if (m == "tokens/s/GPU") return static_cast<double>(r.gbs) * r.seq / (r.value * r.gpus);
  if (m.find("TFLOP/s/GPU") != std::string::npos) {
    models::ModelSpec model = in.model(r.model_file);
    if (r.layers > 0) model.layers = r.layers;
    return megatron_flops_per_sequence(model, r.seq) * r.gbs / (r.value * 1e12 * r.gpus);
  }
  throw std::runtime_error(r.id + ": unknown metric '" + m + "'");
}

inline ModernComparison compare(const ModernRow& r, Profile profile, Inputs& in, bool per_layer = true) {
  ModernComparison out;
  out.row = r;
  std::string why;
  const auto s = row_scenario(r, profile, in, why);
  if (!s) {
    out.expressible = false;
    out.reason = why;
    return out;
  }
  step::SimulateOptions o;
  o.keep_timeline = false;
  o.per_layer = per_layer;
  const auto res = step::simulate(*s, o);
  out.reason = layout_text(*s);
  out.published_step_s = published_step_s(r, in);
  out.predicted_step_s = res.step_time_s;
  out.error = res.step_time_s / out.published_step_s - 1.0;
  out.breakdown = res.breakdown;
  out.microbatches = res.microbatches;
  out.peak_gib = res.memory.peak_gib;
  out.fits = res.memory.fits;
  out.calibrated = s->calibration.has_value();
  return out;
}

// Family keys of a row, as in docs/validation-modern.md.
inline std::string precision_family(const ModernRow& r) {
  return r.precision == "bf16" ? "bf16" : (r.fp8_recipe.find("MXFP8") != std::string::npos ? "fp8 (MXFP8)" : "fp8");
}
inline std::string layout_family(const ModernRow& r) { return r.cp > 1 ? "CP" : "dense (cp 1)"; }
// Whether `t` is a NeMo release as the tables write it: two digits, a dot, two digits ("25.02").
inline bool is_release(const std::string& t) {
  auto dig = [&](std::size_t i) { return i < t.size() && std::isdigit(static_cast<unsigned char>(t[i])); };
  return t.size() == 5 && dig(0) && dig(1) && t[2] == '.' && dig(3) && dig(4);
}
// The software release a row ran (its `framework` field): the NeMo container a launcher script imports
// ("setup.sh imports nvcr.io/nvidia/nemo:24.09") before the release a table's header names ("NeMo 24.11"),
// else the first "NeMo YY.MM" it states; rows of another stack are "other". Reported, never used by a mechanism.
inline std::string container_family(const ModernRow& r) {
  auto release_at = [&](std::size_t p) {
    std::size_t e = p;
    while (e < r.framework.size() && (std::isdigit(static_cast<unsigned char>(r.framework[e])) || r.framework[e] == '.')) ++e;
    while (e > p && r.framework[e - 1] == '.') --e;
    return r.framework.substr(p, e - p);
  };
  if (const auto p = r.framework.find("nemo:"); p != std::string::npos) return "NeMo " + release_at(p + 5);
  // "NeMo YY.MM": two digits, a dot, two digits (not "NeMo 2.0", the API's version).
  for (auto p = r.framework.find("NeMo "); p != std::string::npos; p = r.framework.find("NeMo ", p + 1))
    if (is_release(r.framework.substr(p + 5, 5))) return "NeMo " + release_at(p + 5);
  return "other";
}
// Whether a row ran a NeMo release of `yy_mm` ("25.02") or later (validate_modern --since-release).
inline bool release_at_least(const ModernRow& r, const std::string& yy_mm) {
  const std::string c = container_family(r);
  return c.rfind("NeMo ", 0) == 0 && c.substr(5) >= yy_mm;
}

struct Summary {
  std::size_t n = 0, not_expressible = 0;
  double median_abs = 0, max_abs = 0, mean_signed = 0;
};

inline Summary summarize(const std::vector<ModernComparison>& v) {
  Summary s;
  std::vector<double> a;
  double sum = 0;
  for (const auto& c : v) {
    if (!c.expressible) {
      ++s.not_expressible;
      continue;
    }
    a.push_back(std::fabs(c.error));
    sum += c.error;
    s.max_abs = std::max(s.max_abs, std::fabs(c.error));
  }
  s.n = a.size();
  s.median_abs = median(a);
  s.mean_signed = s.n ? sum / static_cast<double>(s.n) : 0.0;
  return s;
}

// The rows of each GPU x precision family ({gpu_type, precision}), split by half ("tuning", "heldout"): the
// families of report/accuracy_table.inc (validate_modern --accuracy; its guard in tests/validation/test_modern.cpp).
using FamilyHalves = std::map<std::pair<std::string, std::string>, std::map<std::string, std::vector<ModernComparison>>>;
inline FamilyHalves by_family_and_half(const std::vector<ModernComparison>& all) {
  FamilyHalves fam;
  for (const auto& c : all) fam[{c.row.gpu_type, c.row.precision}][c.row.half].push_back(c);
  return fam;
}

inline std::string rows_path() { return source_path("validation/modern/rows.csv"); }
inline std::string split_path() { return source_path("validation/modern/split.csv"); }

}  // namespace mfusim::validation::modern
