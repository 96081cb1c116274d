#pragma once
// Measured vs simulated training steps on one H200 (validation/runs/run01-full/h200_steps.csv,
// written by validation/train_step.py). Header-only so that both the
// `validation_compare` program and the doctest (tests/validation/test_h200_compare.cpp)
// run the very same comparison.
//
// For each measured row: a single-GPU Scenario built in code (tp = pp = dp = 1,
// global batch = micro-batch = mbs, model shape from the row, hardware/h200.toml
// with a calibration file), step::simulate, and the relative error
// (predicted - measured) / measured of the step time, forward and backward.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <tuple>

#include "config/loader.h"
#include "config/scenario.h"
#include "hardware/calibration.h"
#include "hardware/cost_model.h"
#include "models/accounting.h"
#include "step/simulate.h"

namespace mfusim::validation {

struct MeasuredRow {
  std::string model;
  int layers = 0, heads = 0, kv_heads = 0;
  std::int64_t hidden = 0, ffn = 0, vocab = 0, head_dim = 0;
  int seq = 0, mbs = 0;
  bool flash = true, recompute = false, fused = true;
  std::string attn_impl, status;
  double step_ms = 0, fwd_ms = 0, bwd_ms = 0, opt_ms = 0;
  double peak_mem_gib = 0;   // torch.cuda.max_memory_allocated
};

struct ComparedRow {
  MeasuredRow m;
  double pred_step_ms = 0, pred_fwd_ms = 0, pred_bwd_ms = 0, pred_opt_ms = 0;
  double pred_peak_gib = 0;                        // simulated peak memory (static + activations)
  double err_step = 0, err_fwd = 0, err_bwd = 0;   // (predicted - measured) / measured
};

struct Summary {
  std::vector<ComparedRow> rows;
  double median_abs_step = 0, max_abs_step = 0;
  double median_abs_fwd = 0, max_abs_fwd = 0, median_abs_bwd = 0, max_abs_bwd = 0;
};

// CSV split with double-quoted fields ("a, b" stays one field).
inline std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool q = false;
  for (char c : line) {
    if (c == '"') q = !q;
    else if (c == ',' && !q) { out.push_back(cur); cur.clear(); }
    else if (c != '\r') cur += c;
  }
  out.push_back(cur);
  return out;
}

// One data row of a CSV file with a header line; columns read by name, errors as path:line:1.
struct CsvRow {
  const std::string& path;
  int line;
  const std::vector<std::string>& head;
  const std::vector<std::string>& v;
  const std::string& str(const char* name) const {
    auto it = std::find(head.begin(), head.end(), name);
    if (it == head.end()) throw std::runtime_error(path + ":" + std::to_string(line) + ":1: error: no column " + name);
    std::size_t i = std::size_t(it - head.begin());
    if (i >= v.size()) throw std::runtime_error(path + ":" + std::to_string(line) + ":1: error: short row");
    return v[i];
  }
  double num(const char* name) const { return std::stod(str(name)); }
};

// f(row) for every data row of the CSV file at path ('#' lines and blank lines skipped; the first
// other line is the header).
template <class F>
void for_each_csv_row(const std::string& path, F&& f) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": error: cannot read");
  std::string line;
  std::vector<std::string> head;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    const auto v = split_csv(line);
    if (head.empty()) { head = v; continue; }
    f(CsvRow{path, lineno, head, v});
  }
}

// Rows of h200_steps.csv with status "ok" (oom / error / skipped rows carry no time).
inline std::vector<MeasuredRow> read_measured(const std::string& path) {
  std::vector<MeasuredRow> out;
  for_each_csv_row(path, [&](const CsvRow& c) {
    MeasuredRow r;
    r.status = c.str("status");
    if (r.status != "ok") return;
    r.model = c.str("model");
    r.layers = std::stoi(c.str("layers"));
    r.hidden = std::stoll(c.str("hidden"));
    r.ffn = std::stoll(c.str("ffn"));
    r.heads = std::stoi(c.str("heads"));
    r.kv_heads = std::stoi(c.str("kv_heads"));
    r.vocab = std::stoll(c.str("vocab"));
    r.head_dim = std::stoll(c.str("head_dim"));
    r.seq = std::stoi(c.str("seq"));
    r.mbs = std::stoi(c.str("mbs"));
    r.flash = c.str("flash") == "1";
    r.recompute = c.str("recompute") == "1";
    r.fused = c.str("fused") == "1";
    r.attn_impl = c.str("attn_impl");
    r.step_ms = c.num("step_ms");
    r.fwd_ms = c.num("fwd_ms");
    r.bwd_ms = c.num("bwd_ms");
    r.opt_ms = c.num("opt_ms");
    r.peak_mem_gib = c.num("peak_mem_gib");
    out.push_back(r);
  });
  return out;
}

// Host (CPU) time of the runs' ops (docs/fidelity.md): eager PyTorch issues each op from
// Python (module call, autocast, autograd recording) while the GPU runs earlier ones
// (hardware.host_overhead); autograd's engine issues the backward's ops
// (host_backward_overhead); a torch.compile'd region costs one much dearer call (guards over
// dynamic shapes, AOTAutograd wrapper, Triton launcher: host_compiled_overhead).
// Measured by host microbenchmarks at seq 128 (every kernel a few microseconds, so the host
// sets the pace), not on the compared steps:
//  compiled call: validation/host_bench.py (runs/run04-fidelity/host_bench.csv), the torch.compile'd
//    SwiGLU / RoPE calls alone: mean of fwd 383.2, 353.2 and bwd 399.6, 401.1 us;
//  eager ops: validation/host_step.py (runs/run07-host-step/host_step.csv): the host time of whole
//    training steps of train_step.py's Model (s1.3b, 24 and 12 layers, fused 0/1 x flash 1/0,
//    2 passes: 16 forwards and 16 backwards), least squares through the origin of
//    host - layers x compiled calls x kCompiledHostOverheadS = modelled ops x c, with
//    models::layer_kernels' op counts (fp32 residual stream included) plus the embedding and
//    head ops: forward 31.0 us per eager op, backward (autograd engine; B + W ops) 34.4 us with
//    the run-4 op counts; run 8 added the backward kernels the H200 trace lists and the model
//    lacked (eager RMSNorm backward 13 launches per norm instead of 5, the QKV split and
//    gate/up chunk backward cats: fused 0 +18 ops per layer, fused 1 +2), and the same fit on
//    the same samples with the new counts gives 26.2 us per backward op (26.5 without the
//    embedding / head ops); the forward is unchanged.
//  The same fit on one layer alone (host_bench.py, a backward() call per layer, grads never
//  zeroed) gives 53.3 / 71.3 us: the per-call overheads of that harness, not of a step; the
//  whole-step samples scatter from 9 to 47 us per op between repeats (host noise of this
//  machine, validation/README.md).
constexpr double kCompiledHostOverheadS = (383.2 + 353.2 + 399.6 + 401.1) / 4 * 1e-6;
constexpr double kEagerHostOverheadS = 31.02e-6;
constexpr double kBackwardHostOverheadS = 26.24e-6;
// Activation checkpointing (torch.utils.checkpoint, use_reentrant=False, around every layer):
// validation/host_ckpt.py (runs/run10-inproc/host_ckpt.csv and host_ckpt_b.csv: s1.3b at seq 128,
// fused 1 / 0, 24 and 12 layers, 4 passes; each checkpointed step paired with the plain step
// next to it), fitted by fit_checkpoint_host below: forward = layers x c_f (least squares
// through the origin); backward = layers x (the recomputed forward ops' host cost, modelled
// at the rates above, + c_r). 16 samples each; per-layer samples scatter 532-1067 us (forward)
// and 410-1603 us (backward beyond the ops): the host's own noise.
constexpr double kCheckpointHostS = 728.3e-6;
constexpr double kRecomputeHostS = 951.3e-6;

// The single-GPU scenario of one measured row.
inline config::Scenario scenario_for(const MeasuredRow& r, const hardware::HardwareSpec& hw,
                                     const hardware::Calibration& cal, const std::string& cal_path) {
  config::Scenario s;
  s.name = r.model + " seq " + std::to_string(r.seq) + " mbs " + std::to_string(r.mbs);
  s.model_ref = "(inline)";
  s.hardware_ref = hw.name;
  s.model.name = r.model;
  s.model.layers = r.layers;
  s.model.hidden = r.hidden;
  s.model.ffn_hidden = r.ffn;
  s.model.heads = r.heads;
  s.model.kv_heads = r.kv_heads;
  s.model.head_dim = r.head_dim;
  s.model.vocab = r.vocab;
  s.model.activation = models::Activation::swiglu;
  s.model.tied_embeddings = false;
  s.hardware = hw;
  s.hardware.host_overhead = kEagerHostOverheadS;   // eager PyTorch, no CUDA graphs
  s.hardware.host_compiled_overhead = kCompiledHostOverheadS;
  s.hardware.host_backward_overhead = kBackwardHostOverheadS;
  s.hardware.host_checkpoint_overhead = kCheckpointHostS;
  s.hardware.host_recompute_overhead = kRecomputeHostS;
  s.calibration = cal;
  s.calibration_path = cal_path;
  s.gpus = 1;
  s.training.seq_len = r.seq;
  s.training.micro_batch = r.mbs;
  s.training.global_batch = r.mbs;
  s.training.precision = hardware::Precision::bf16;
  s.training.master_weights = config::MasterWeights::fp32_autocast;   // torch.autocast over fp32 params
  s.parallel.tp = s.parallel.pp = s.parallel.cp = s.parallel.ep = s.parallel.vpp = 1;
  s.parallel.dp = 1;
  s.parallel.sequence_parallel = false;
  s.parallel.distributed_optimizer = false;
  s.schedule.name = config::ScheduleKind::one_f_one_b;
  s.features.flash_attention = r.flash;
  s.features.fused_kernels = r.fused;
  s.features.recompute = r.recompute ? config::Recompute::full : config::Recompute::none;
  s.features.cuda_graphs = false;
  s.features.python_gc = false;          // train_step.py times steps with no collection in between
  s.features.dataloader_workers = 8;     // tokens already on the GPU: no loader stall
  s.features.overlap_grad_reduce = s.features.overlap_param_gather = true;
  return s;
}

inline double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The model shapes of validation/train_step.py MODELS (layers, hidden, ffn, heads, kv_heads,
// vocab; head_dim = hidden / heads), as a MeasuredRow without times; throws for another name.
inline MeasuredRow model_row(const std::string& name) {
  struct Shape { const char* name; int layers; std::int64_t hidden, ffn; int heads, kv; std::int64_t vocab; };
  static const Shape shapes[] = {{"s0.5b", 16, 1536, 4096, 12, 4, 32000},
                                 {"s1.3b", 24, 2048, 5632, 16, 8, 32000},
                                 {"s3b", 26, 3072, 8192, 24, 8, 32000},
                                 {"s7b-8L", 8, 4096, 14336, 32, 8, 128256}};
  for (const Shape& s : shapes)
    if (name == s.name) {
      MeasuredRow m;
      m.model = s.name;
      m.layers = s.layers;
      m.hidden = s.hidden;
      m.ffn = s.ffn;
      m.heads = s.heads;
      m.kv_heads = s.kv;
      m.vocab = s.vocab;
      m.head_dim = s.hidden / s.heads;
      m.status = "ok";
      return m;
    }
  throw std::runtime_error("error: unknown model '" + name + "' (train_step.py MODELS: s0.5b, s1.3b, s3b, s7b-8L)");
}

// The fit behind kCheckpointHostS / kRecomputeHostS, from validation/host_ckpt.py's CSVs:
// per row (model, fused, layers L and half_layers L/2, paired median host differences of a
// checkpointed step over the plain one, ms) two samples per direction. Forward: diff = L c_f;
// backward: diff = L (r + c_r), r = the host seconds the model charges one layer's recomputed
// forward ops (CostModel::host_time over layer_kernels().r at the row's shape, seq 128, with
// the host rates above). Least squares through the origin.
struct CheckpointHostFit {
  double forward_s = 0, recompute_s = 0;
  int samples = 0;
};
inline CheckpointHostFit fit_checkpoint_host(const std::vector<std::string>& csvs, const std::string& source_dir) {
  const hardware::HardwareSpec hw = config::load_hardware(source_dir + "/hardware/h200.toml");
  const hardware::Calibration none;
  double sf = 0, sr = 0, sl = 0;
  CheckpointHostFit fit;
  for (const std::string& path : csvs)
    for_each_csv_row(path, [&](const CsvRow& c) {
      // The row's model (train_step.py MODELS) at seq 128, recompute on.
      MeasuredRow m = model_row(c.str("model"));
      m.seq = 128; m.mbs = 1; m.flash = true; m.recompute = true; m.fused = c.num("fused") != 0;
      const config::Scenario s = scenario_for(m, hw, none, "");
      const hardware::CostModel cost(s.hardware, s.training.precision, nullptr, false);
      double r = 0;
      for (const hardware::Kernel& k : models::layer_kernels(s.model, 0, models::rank_shape(s)).r) r += cost.host_time(k);
      for (const auto& [L, df, db] : {std::tuple{c.num("layers"), c.num("paired_fwd_diff_ms"), c.num("paired_bwd_diff_ms")},
                                      std::tuple{c.num("half_layers"), c.num("half_paired_fwd_diff_ms"),
                                                 c.num("half_paired_bwd_diff_ms")}}) {
        sf += L * df * 1e-3;
        sr += L * (db * 1e-3 - L * r);
        sl += L * L;
        ++fit.samples;
      }
    });
  if (sl > 0) {
    fit.forward_s = sf / sl;
    fit.recompute_s = sr / sl;
  }
  return fit;
}

// Predicted step / forward / backward / optimizer ms of one configuration (the row's times are
// not read). The measured passes are CUDA-event spans on the one stream: forward = up to the
// loss, backward = loss.backward() (recompute included), optimizer = step + zero_grad.
// Predicted: the simulated compute-stream tasks of each pass, launch overhead and the GPU's
// wait for the host included (one GPU, one micro-batch: the passes run in turn).
struct Predicted { double step_ms = 0, fwd_ms = 0, bwd_ms = 0, opt_ms = 0, peak_gib = 0; };
inline Predicted predict(const MeasuredRow& m, const hardware::HardwareSpec& hw, const hardware::Calibration& cal,
                         const std::string& cal_path) {
  const config::Scenario s = scenario_for(m, hw, cal, cal_path);
  step::SimulateOptions opt;
  opt.keep_timeline = true;
  const step::StepResult res = step::simulate(s, opt);
  double fwd = 0, bwd = 0, optm = 0;
  for (const auto& iv : res.timeline->intervals) {
    const auto& task = res.graph->task(iv.task);
    if (!res.graph->streams()[task.stream].compute) continue;
    const double d = (iv.end.ns - iv.start.ns) * 1e-9;
    switch (task.category) {
      case sim::Category::forward: fwd += d; break;
      case sim::Category::backward:
      case sim::Category::weight_grad:
      case sim::Category::recompute: bwd += d; break;
      case sim::Category::optimizer: optm += d; break;
      default: break;
    }
  }
  return Predicted{res.step_time_s * 1e3, fwd * 1e3, bwd * 1e3, optm * 1e3, res.memory.peak_gib};
}

// The profile hardware/NAME.toml of the repository at `source_dir`, as validation_compare's --hardware names it.
inline hardware::HardwareSpec hardware_profile(const std::string& source_dir, const std::string& name) {
  return config::load_hardware(source_dir + "/hardware/" + name + ".toml");
}

// Runs the comparison. `source_dir`: the repository root (hardware/h200.toml).
// `hardware_name`: the profile under hardware/ the steps ran on (h200; h100-sxm for run 54's steps).
inline Summary compare(const std::string& csv_path, const std::string& calibration_path, const std::string& source_dir,
                       const std::string& hardware_name = "h200") {
  const hardware::HardwareSpec hw = hardware_profile(source_dir, hardware_name);
  const hardware::Calibration cal = hardware::read_calibration(calibration_path);
  Summary sum;
  std::vector<double> es, ef, eb;
  for (const MeasuredRow& m : read_measured(csv_path)) {
    const Predicted pr = predict(m, hw, cal, calibration_path);
    ComparedRow c;
    c.m = m;
    c.pred_step_ms = pr.step_ms;
    c.pred_fwd_ms = pr.fwd_ms;
    c.pred_bwd_ms = pr.bwd_ms;
    c.pred_opt_ms = pr.opt_ms;
    c.pred_peak_gib = pr.peak_gib;
    c.err_step = (c.pred_step_ms - m.step_ms) / m.step_ms;
    c.err_fwd = (c.pred_fwd_ms - m.fwd_ms) / m.fwd_ms;
    c.err_bwd = (c.pred_bwd_ms - m.bwd_ms) / m.bwd_ms;
    es.push_back(std::abs(c.err_step));
    ef.push_back(std::abs(c.err_fwd));
    eb.push_back(std::abs(c.err_bwd));
    sum.rows.push_back(c);
  }
  sum.median_abs_step = median_of(es);
  sum.median_abs_fwd = median_of(ef);
  sum.median_abs_bwd = median_of(eb);
  for (double e : es) sum.max_abs_step = std::max(sum.max_abs_step, e);
  for (double e : ef) sum.max_abs_fwd = std::max(sum.max_abs_fwd, e);
  for (double e : eb) sum.max_abs_bwd = std::max(sum.max_abs_bwd, e);
  return sum;
}

}  // namespace mfusim::validation
