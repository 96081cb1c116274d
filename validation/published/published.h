#pragma once
// Published Megatron-LM runs (validation/published/published.csv, rows NAR21-*
// and KOR22-*) as Scenarios built in code, simulated, and compared in the
// metric each row publishes. Shared by validate_published (the full table,
// docs/validation.md) and tests/validation/test_published.cpp (a few rows).
//
// Configuration per row = the published one (csv columns: gpus, shape, tp,
// pp, dp, vpp, mbs, gbs, schedule, recompute) plus these assumptions, each
// chosen once for a whole table, never per row:
//  * hardware: hardware/a100-sxm-80gb.toml (Selene DGX A100, 312 TFLOP/s 16-bit);
//    no calibration (datasheet roofline).
//  * 2021/2022 Megatron: no FlashAttention (materialised softmax, fused
//    scale-mask-softmax kernel), fused bias-GeLU (fused_kernels), bf16 for the
//    papers' "16-bit mixed precision", no distributed optimizer (it came later),
//    dataloader off the critical path.
//  * NAR21 Table 1: micro-batch, layers per virtual stage and DDP from the
//    authors' run script for that table (NVIDIA/Megatron-LM
//    examples/sc21/run_table_1.sh): mbs 16/16/16/8/4/2/2/1/1/1; interleaved
//    with 5/5/3/1 layers per virtual stage for 76B/145B/310B/530B, 1F1B
//    otherwise; DDP=torch (gradient all-reduce overlapped with backward) for
//    pp = 1, DDP=local (all-reduce after backward) otherwise; full
//    ("uniform") recompute everywhere.
//  * NAR21 Table 2 (PTD-P rows): tp = 8 (the paper's tp for every large model),
//    pp = model-parallel size / 8, mbs 1 as published, full recompute,
//    DDP=local, interleaved with the 530B script's 1 layer per virtual stage
//    for 530B (vpp 3) and vpp 2 for 175B (96 layers / pp 12 = 8 per rank;
//    not published). ZeRO-3 rows: tp 1, pp 1, dp = gpus, the published mbs,
//    zero_stage 3 (per-layer gathers and reduce-scatters, docs/fsdp.md), full
//    recompute, gradient reduction overlapped.
//  * KOR22: configuration as in Table 3/5 (tp, pp, vpp, mbs, gbs), gradient
//    all-reduce not overlapped (stated in §6.3 of the paper); 1T: 1F1B (vpp
//    not stated). Appendix C's micro-batch-level recompute is out of scope.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/loader.h"
#include "config/scenario.h"
#include "step/simulate.h"

namespace mfusim::validation {

struct PublishedRow {
  std::string id, metric_text, schedule_text, recompute_text;
  int gpus = 0, layers = 0, heads = 0, tp = 0, pp = 0, dp = 0, vpp = 0, mbs = 0, gbs = 0, seq = 0;
  long long hidden = 0, ffn = 0, vocab = 0;
  double value = 0;
};

enum class Metric { tflops_eq3, iteration_s, mfu_pct, layer_ms };

struct Comparison {
  PublishedRow row;
  Metric metric = Metric::tflops_eq3;
  bool in_scope = true;
  std::string reason;           // why out of scope, or the configuration used
  double predicted = 0, error = 0;   // error = predicted / published - 1
};

inline std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') { cur += '"'; ++i; }
      else if (c == '"') quoted = false;
      else cur += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

inline int to_int(const std::string& s) {
  try { return s.empty() ? 0 : std::stoi(s); } catch (...) { return 0; }
}

// NAR21-* and KOR22-* rows of the csv, in file order.
inline std::vector<PublishedRow> read_published(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::string line;
  std::getline(in, line);
  const auto head = split_csv_line(line);
  auto col = [&](const std::string& name) {
    const auto it = std::find(head.begin(), head.end(), name);
    if (it == head.end()) throw std::runtime_error(path + ": no column '" + name + "'");
    return static_cast<std::size_t>(it - head.begin());
  };
  const std::size_t c_id = col("id"), c_gpus = col("gpus"), c_layers = col("layers"), c_hidden = col("hidden"),
                    c_ffn = col("ffn_hidden"), c_heads = col("heads"), c_vocab = col("vocab"), c_seq = col("seq"),
                    c_tp = col("tp"), c_pp = col("pp"), c_dp = col("dp"), c_vpp = col("vpp"), c_mbs = col("mbs"),
                    c_gbs = col("gbs"), c_sched = col("schedule"), c_rec = col("recompute"), c_metric = col("metric"),
                    c_value = col("value");
  std::vector<PublishedRow> rows;
  // Quoted fields never span lines in this file.
  while (std::getline(in, line)) {
    if (line.rfind("NAR21-", 0) != 0 && line.rfind("KOR22-", 0) != 0) continue;
    const auto f = split_csv_line(line);
    if (f.size() < head.size()) throw std::runtime_error(path + ": short row " + f[0]);
    PublishedRow r;
    r.id = f[c_id];
    r.gpus = to_int(f[c_gpus]);
    r.layers = to_int(f[c_layers]);
    r.hidden = to_int(f[c_hidden]);
    r.ffn = to_int(f[c_ffn]);
    r.heads = to_int(f[c_heads]);
    r.vocab = to_int(f[c_vocab]);
    r.seq = to_int(f[c_seq]);
    r.tp = to_int(f[c_tp]);
    r.pp = to_int(f[c_pp]);
    r.dp = to_int(f[c_dp]);
    r.vpp = to_int(f[c_vpp]);
    r.mbs = to_int(f[c_mbs]);
    r.gbs = to_int(f[c_gbs]);
    r.schedule_text = f[c_sched];
    r.recompute_text = f[c_rec];
    r.metric_text = f[c_metric];
    r.value = std::stod(f[c_value]);
    rows.push_back(r);
  }
  return rows;
}

inline std::string source_path(const std::string& rel) { return std::string(MFUSIM_SOURCE_DIR) + "/" + rel; }

// The GPT of a row: ffn = 4h MLP with GeLU, multi-head attention, tied embeddings (Megatron GPT).
inline models::ModelSpec gpt_model(const PublishedRow& r, int layers) {
  models::ModelSpec m;
  m.name = "GPT h" + std::to_string(r.hidden) + " l" + std::to_string(layers);
  m.layers = layers;
  m.hidden = r.hidden;
  m.ffn_hidden = r.ffn > 0 ? r.ffn : 4 * r.hidden;
  m.heads = r.heads;
  m.kv_heads = r.heads;
  m.head_dim = r.hidden / r.heads;
  m.vocab = r.vocab;
  m.activation = models::Activation::gelu;
  m.tied_embeddings = true;
  return m;
}

struct RowConfig {
  int tp = 1, pp = 1, dp = 1, vpp = 1, mbs = 1, gbs = 1;
  bool sequence_parallel = false, overlap_grad = false;
  config::Recompute recompute = config::Recompute::full;
  int zero_stage = 0;   // 3: ZeRO-3 (the NAR21 Table 2 DeepSpeed rows, docs/fsdp.md)
};

inline config::Scenario row_scenario(const PublishedRow& r, const RowConfig& c, int layers,
                                     const hardware::HardwareSpec& a100) {
  config::Scenario s;
  s.name = r.id;
  s.model_ref = "(inline)";
  s.hardware_ref = "a100-sxm-80gb";
  s.model = gpt_model(r, layers);
  s.hardware = a100;
  s.gpus = c.tp * c.pp * c.dp;
  s.training.seq_len = r.seq;
  s.training.global_batch = c.gbs;
  s.training.micro_batch = c.mbs;
  s.training.precision = hardware::Precision::bf16;
  s.parallel.tp = c.tp;
  s.parallel.pp = c.pp;
  s.parallel.dp = c.dp;
  s.parallel.vpp = c.vpp;
  s.parallel.sequence_parallel = c.sequence_parallel;
  s.parallel.distributed_optimizer = c.zero_stage >= 1;
  s.parallel.zero_stage = c.zero_stage;
  s.schedule.name = c.vpp > 1 ? config::ScheduleKind::interleaved_1f1b : config::ScheduleKind::one_f_one_b;
  s.features.flash_attention = false;
  s.features.fused_kernels = true;
  s.features.overlap_grad_reduce = c.overlap_grad;
  s.features.overlap_param_gather = false;
  s.features.tp_comm_overlap = false;
  s.features.recompute = c.recompute;
  s.features.python_gc = false;
  s.features.dataloader_workers = 8;
  return s;
}

inline void check_valid(const config::Scenario& s) {
  const auto diags = config::validate(s);
  if (!diags.empty()) {
    std::string msg = s.name + ": invalid scenario:";
    for (const auto& d : diags) msg += " " + d.message + ";";
    throw std::runtime_error(msg);
  }
}

// Narayanan 2021 eq. (3): FLOPs per iteration with full recompute.
inline double nar21_eq3(double B, double s, double l, double h, double V) {
  return 96.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * l * h));
}
// Korthikanti 2022 eq. (7): model FLOPs per iteration.
inline double kor22_eq7(double B, double s, double l, double h, double V) {
  return 72.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (12.0 * h * l));
}
constexpr double kA100Peak = 312e12;   // 16-bit dense, used by both papers

// NAR21 Table 1 run script (examples/sc21/run_table_1.sh), keyed by layers.
struct Nar21Script { int layers, mbs, layers_per_virtual_stage; };
inline const std::vector<Nar21Script>& nar21_script() {
  static const std::vector<Nar21Script> v = {{24, 16, 0}, {30, 16, 0}, {36, 16, 0}, {40, 8, 0},  {48, 4, 0},
                                             {60, 2, 5},  {80, 2, 5},  {96, 1, 3},  {105, 1, 1}, {128, 1, 0}};
  return v;
}

inline Comparison compare(const PublishedRow& r, const hardware::HardwareSpec& a100) {
  Comparison out;
  out.row = r;
  const std::string& id = r.id;
  RowConfig c;
  c.gbs = r.gbs;
  auto simulate = [&](const config::Scenario& s) {
    check_valid(s);
    step::SimulateOptions o;
    o.keep_timeline = false;
    o.per_layer = true;
    return step::simulate(s, o);
  };
  auto finish = [&](double predicted) {
    out.predicted = predicted;
    out.error = predicted / r.value - 1.0;
    return out;
  };
  auto sched = [&] {
    return "tp " + std::to_string(c.tp) + " pp " + std::to_string(c.pp) + " dp " + std::to_string(c.dp) +
           (c.vpp > 1 ? " vpp " + std::to_string(c.vpp) : std::string()) + " mbs " + std::to_string(c.mbs) +
           (c.sequence_parallel ? " SP" : "") +
           (c.recompute == config::Recompute::full ? " full-rc" : c.recompute == config::Recompute::selective ? " sel-rc" : "") +
           (c.overlap_grad ? " overlap-dp" : "");
  };

  if (id.rfind("NAR21-T1-", 0) == 0) {
    out.metric = Metric::tflops_eq3;
    c.tp = r.tp; c.pp = r.pp; c.dp = r.dp;
    const auto it = std::find_if(nar21_script().begin(), nar21_script().end(),
                                 [&](const Nar21Script& x) { return x.layers == r.layers; });
    if (it == nar21_script().end()) throw std::runtime_error(id + ": no run-script entry");
    c.mbs = it->mbs;
    c.vpp = it->layers_per_virtual_stage > 0 ? r.layers / r.pp / it->layers_per_virtual_stage : 1;
    c.overlap_grad = r.pp == 1;   // DDP=torch for the pp = 1 rows, DDP=local otherwise
    c.recompute = config::Recompute::full;
    const auto res = simulate(row_scenario(r, c, r.layers, a100));
    out.reason = sched();
    return finish(nar21_eq3(c.gbs, r.seq, r.layers, r.hidden, r.vocab) / res.step_time_s / r.gpus / 1e12);
  }
  if (id.rfind("NAR21-T2-", 0) == 0) {
    out.metric = Metric::tflops_eq3;
    if (r.schedule_text.find("ZeRO-3") != std::string::npos) {
      // DeepSpeed ZeRO-3 without model parallelism (docs/fsdp.md): every layer's parameters
      // all-gathered before its forward and its backward, gradients reduce-scattered after it;
      // the paper's micro-batch, full recompute (§3.5), gradient reduction overlapped.
      c.tp = 1; c.pp = 1; c.dp = r.gpus;
      c.mbs = r.mbs > 0 ? r.mbs : 1;
      c.zero_stage = 3;
      c.overlap_grad = true;
      c.recompute = config::Recompute::full;
      const auto res = simulate(row_scenario(r, c, r.layers, a100));
      out.reason = sched() + " ZeRO-3";
      return finish(nar21_eq3(c.gbs, r.seq, r.layers, r.hidden, r.vocab) / res.step_time_s / r.gpus / 1e12);
    }
    const int mp = r.layers == 96 ? 96 : 280;   // model-parallel size printed in Table 2
    c.tp = 8; c.pp = mp / 8; c.dp = r.gpus / mp;
    c.mbs = r.mbs > 0 ? r.mbs : 1;
    c.vpp = r.layers == 105 ? 3 : 2;
    c.overlap_grad = false;
    c.recompute = config::Recompute::full;
    const auto res = simulate(row_scenario(r, c, r.layers, a100));
    out.reason = sched();
    return finish(nar21_eq3(c.gbs, r.seq, r.layers, r.hidden, r.vocab) / res.step_time_s / r.gpus / 1e12);
  }
  if (id.rfind("KOR22-", 0) != 0) throw std::runtime_error(id + ": not a NAR21/KOR22 row");
  if (id.rfind("KOR22-AppC-", 0) == 0) {
    out.metric = Metric::mfu_pct;
    out.in_scope = false;
    out.reason = "micro-batch-level recompute (some micro-batches keep all activations) is not a mfusim recompute mode";
    return out;
  }
  const bool baseline = r.recompute_text.find("full recompute") != std::string::npos ||
                        r.recompute_text.find("Baseline with recompute") != std::string::npos;
  const bool selective = r.recompute_text.find("elective") != std::string::npos;
  const bool sp = r.recompute_text.find("equence") != std::string::npos && !baseline;
  c.tp = r.tp; c.pp = r.pp; c.dp = r.dp > 0 ? r.dp : 1;
  c.vpp = r.vpp > 0 ? r.vpp : 1;
  c.mbs = r.mbs;
  c.sequence_parallel = sp;
  c.overlap_grad = false;
  c.recompute = baseline ? config::Recompute::full : selective ? config::Recompute::selective : config::Recompute::none;
  if (id.rfind("KOR22-T4-", 0) == 0) {
    // One transformer layer's forward + backward: the difference between the
    // same run with 2 layers and with 1, so embedding, head and optimizer cancel.
    out.metric = Metric::layer_ms;
    c.gbs = c.mbs;
    auto one = [&](int layers) {
      const auto res = simulate(row_scenario(r, c, layers, a100));
      return res.step_time_s - res.breakdown.optimizer;
    };
    out.reason = sched();
    return finish((one(2) - one(1)) * 1e3);
  }
  const auto res = simulate(row_scenario(r, c, r.layers, a100));
  out.reason = sched();
  if (r.metric_text.rfind("MFU", 0) == 0) {
    out.metric = Metric::mfu_pct;
    return finish(100.0 * kor22_eq7(c.gbs, r.seq, r.layers, r.hidden, r.vocab) / res.step_time_s / r.gpus / kA100Peak);
  }
  out.metric = Metric::iteration_s;
  return finish(res.step_time_s);
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace mfusim::validation
