#include "report/text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "report/accuracy.h"
#include "report/timeline_ascii.h"
#include "hardware/calibration.h"
#include "layer/moe_dispatch.h"
#include "models/rank_shape.h"

namespace mfusim::report {

namespace {
std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
std::string pct(double x) { return fmt("%.1f %%", 100.0 * x); }
std::string bar(double frac, int width) {
  const int n = static_cast<int>(std::lround(std::clamp(frac, 0.0, 1.0) * width));
  std::string s;
  for (int i = 0; i < n; ++i) s += "#";
  return s;
}
std::string pad(std::string s, std::size_t w) {
  if (s.size() < w) s.append(w - s.size(), ' ');
  return s;
}
std::string lpad(std::string s, std::size_t w) {
  if (s.size() < w) s.insert(0, w - s.size(), ' ');
  return s;
}
std::string rstrip(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}
std::string thousands(double v) {
  long long n = std::llround(v);
  std::string s = std::to_string(n < 0 ? -n : n), o;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) o += ',';
    o += s[i];
  }
  return (n < 0 ? "-" : "") + o;
}

// The run around the steps (step/training_run.h): its days, and what the days beyond the steps are.
void write_training_run(std::ostream& o, const step::StepResult& r) {
  const auto& run = r.run;
  const auto& sim = run.sim;
  const auto& rl = r.scenario.reliability;
  const bool llama3 = rl.interruptions_per_1k_gpu_days == config::Reliability{}.interruptions_per_1k_gpu_days;
  if (!sim.finishes) {   // why: the warning above (step/simulate.cpp training_run)
    o << "  time to train    does not finish: " << fmt("%.1f", run.days_of_steps)
      << " days of steps, but interruptions come faster than a checkpoint segment completes (warning above)\n";
    return;
  }
  // Under a day (a short fine-tune, a smoke test): hours or seconds, not "0.0 days".
  auto span = [](double days) {
    return days >= 1 ? fmt("%.1f", days) + " days" : days * 24 >= 1 ? fmt("%.1f", days * 24) + " h" : format_seconds(days * 86400);
  };
  const double gpu_hours = r.days_to_train * 24.0 * r.scenario.gpus;
  o << "  time to train    " << span(r.days_to_train) << ", "
    << (gpu_hours >= 100 ? thousands(gpu_hours) : fmt("%.3g", gpu_hours)) << " GPU-hours";
  if (r.cost_usd > 0) o << ", $" << (r.cost_usd >= 1000 ? thousands(r.cost_usd) : fmt("%.2f", r.cost_usd));
  if (sim.drawn && sim.wall_p95_s > sim.wall_p5_s)
    o << "  (9 runs in 10 within "
      << (sim.wall_p5_s >= 86400 ? fmt("%.1f", sim.wall_p5_s / 86400.0) + "-" + fmt("%.1f", sim.wall_p95_s / 86400.0) + " days"
                                 : span(sim.wall_p5_s / 86400.0) + " - " + span(sim.wall_p95_s / 86400.0))
      << ")";
  o << "\n";
  const double extra = run.days_of_steps > 0 ? r.days_to_train / run.days_of_steps - 1.0 : 0.0;
  o << "                   " << span(run.days_of_steps) << " of steps";
  const bool saves = sim.checkpoint_total_s > 0;
  if (sim.interruptions_mean > 0 || saves) o << " + " << fmt("%.1f", 100.0 * extra) << " %:";
  if (sim.interruptions_mean > 0) {
    o << " " << fmt(sim.interruptions_mean < 10 ? "%.1f" : "%.0f", sim.interruptions_mean) << " interruptions ("
      << fmt("%.3g", rl.interruptions_per_1k_gpu_days) << " per 1,000 GPU-days" << (llama3 ? ", Llama 3's" : "")
      << "), each a " << fmt("%.3g", rl.restart_minutes) << "-min restart and the work since the last save";
  }
  if (saves) {
    o << (sim.interruptions_mean > 0 ? ";" : "");
    if (sim.checkpoints > 1) o << " a save every " << fmt("%.3g", sim.interval_s / 60.0) << " min";
    else o << " one save, at the end,";
    o << " blocking " << fmt("%.2g", run.checkpoint_save_s) << " s"
      << (run.save_from_host_link ? " (" + fmt("%.1f", run.checkpoint_state_gib) + " GiB of state over the host link)" : "");
  }
  if (run.save_unpriced)
    o << "; saves not priced (no host link bandwidth in the profile: set reliability.checkpoint_save_s)"
      << (rl.checkpoint_interval_minutes > 0 ? "" : ", so one is taken every step");
  o << "\n";
}
}  // namespace

std::string format_seconds(double s) {
  if (s >= 1.0) return fmt("%.3f s", s);
  if (s >= 1e-3) return fmt("%.1f ms", s * 1e3);
  return fmt("%.0f us", s * 1e6);
}

std::string format_count(double n) {
  if (n >= 1e12) return fmt("%.2f T", n / 1e12);
  if (n >= 1e9) return fmt("%.2f B", n / 1e9);
  if (n >= 1e6) return fmt("%.2f M", n / 1e6);
  return thousands(n);
}

namespace {
// Which calibration the cost model used (config::Scenario::calibration_choice).
std::string calibration_text(const config::Scenario& s) {
  if (s.calibration) {
    std::string t = !s.calibration_path.empty() ? s.calibration_path : s.calibration->source;
    // A shipped file is named from the data root (hardware/calibration/...), not by this machine's path.
    const auto shipped = t.rfind("hardware/calibration/");
    if (shipped != std::string::npos && shipped > 0) t = t.substr(shipped);
    if (s.calibration_choice == "default") t += " (the shipped measured calibration for this GPU's architecture)";
    if (!s.calibration->gpu_name.empty()) t += ", measured on " + s.calibration->gpu_name;
    return t;
  }
  if (s.calibration_choice == "none") return "none: datasheet roofline (calibration = \"none\")";
  if (!hardware::default_calibration_file(s.hardware).empty()) return "none: datasheet roofline";
  return "none: datasheet roofline (no measured calibration for this GPU's architecture)";
}
// The SM clock a power limit other than the calibration's leaves (calibration [power]); "" when no scale
// applies. (Where that clock lies below the lowest one measured, the step's warnings say so.)
std::string power_text(const config::Scenario& s) {
  const double scale = hardware::power_time_scale(s.calibration ? &*s.calibration : nullptr, s.hardware);
  if (scale == 1.0) return "";
  const auto& w = s.calibration->power;
  const double f = hardware::power_limited_clock_mhz(w, s.hardware.power_limit_w, s.hardware.sms);
  const double ref = hardware::power_limited_clock_mhz(w, w.limit_w, w.sms);
  return "  power     limit " + fmt("%.0f", s.hardware.power_limit_w) + " W: GEMM clock " + fmt("%.0f", f) +
         " MHz against " + fmt("%.0f", ref) + " at the calibration's " + fmt("%.0f", w.limit_w) +
         " W (GEMM and attention time x" + fmt("%.3f", scale) + ")\n";
}

// The hardware profile's rates at a training step's clock (hardware.gemm_sustained_eff_* for the run's precision,
// hardware.attention_sustained_ratio; docs/cost-model.md §2h); "" when the profile gives neither.
std::string sustained_text(const config::Scenario& s) {
  const auto& h = s.hardware;
  const bool fp8 = s.training.precision == hardware::Precision::fp8 && h.peak_flops_fp8 > 0;
  const double a = h.attention_sustained_ratio;
  std::string gemms;
  auto ceiling = [&](hardware::Precision p) {
    const double e = h.gemm_sustained_eff(p);
    if (!(e > 0)) return;
    gemms += std::string(gemms.empty() ? "GEMMs at most " : " and ") + fmt("%.1f", e * 100) + "% of the " +
             config::to_string(p) + " peak (" + fmt("%.0f", e * h.peak_flops(p) / 1e12) + " TFLOP/s)";
  };
  if (fp8) ceiling(hardware::Precision::fp8);   // an fp8 run's kept-bf16 GEMMs (head, router) take the bf16 one
  ceiling(hardware::Precision::bf16);
  if (gemms.empty() && !(a > 0)) return "";
  std::string t = "  clock     at a training step's clock (the profile's, docs/cost-model.md 2h): " + gemms;
  if (a > 0)
    t += std::string(gemms.empty() ? "" : ", ") + "attention at " + fmt("%.1f", a * 100) +
         "% of an isolated call's rate where its fit is of isolated calls";
  return t + "\n";
}

// The fp8 recipe, named and in words, for the cluster line (docs/cost-model.md 2b); delayed scaling with the
// group its amax all-reduce spans at each chunk's forward and backward end (models::fp8_amax_group_ranks).
std::string fp8_recipe_text(const config::Scenario& s) {
  const config::Fp8Recipe r = s.features.fp8_recipe;
  const char* words = r == config::Fp8Recipe::current     ? "per-tensor current scaling"
                      : r == config::Fp8Recipe::mxfp8     ? "MXFP8 1x32 block scaling"
                      : r == config::Fp8Recipe::blockwise ? "DeepSeek-V3 1x128 / 128x128 tiles"
                                                          : "per-tensor delayed scaling";
  std::string t = std::string("recipe ") + config::to_string(r) + " (" + words;
  if (const int n = models::fp8_amax_group_ranks(s); n > 0) {
    const auto mode = s.features.fp8_amax_reduction;
    t += std::string(", amax all-reduce over ") +
         (mode == config::Fp8AmaxReduction::tp_dp_cp ? "tp x dp x cp" : mode == config::Fp8AmaxReduction::tp_cp ? "tp x cp" : "tp") +
         ", " + std::to_string(n) + " ranks, per chunk" + (mode == config::Fp8AmaxReduction::tp ? " forward" : "");
  }
  return t + ")";
}
}  // namespace

double mfu_bf16_peak(const step::StepResult& r) {
  const auto& h = r.scenario.hardware;
  const double bf16 = h.peak_flops_bf16;
  return bf16 > 0 ? r.mfu * h.peak_flops(r.scenario.training.precision) / bf16 : 0;
}

std::string text_report(const step::StepResult& r, const std::vector<step::WhatIfResult>& whatifs, bool per_rank) {
  const auto& s = r.scenario;
  const auto& p = s.parallel;
  std::ostringstream o;
  o << "mfusim: " << s.name << "\n";
  const bool lab = s.schedule.costs.has_value();
  if (lab) {
    // Schedule lab: fixed op costs replace the model; say which.
    const auto& c = *s.schedule.costs;
    o << "  costs     schedule lab: f " << format_seconds(c.f) << ", b " << format_seconds(c.b);
    if (c.w) o << ", w " << format_seconds(*c.w);
    if (c.fb) o << ", f&b " << format_seconds(*c.fb);
    o << ", comm " << format_seconds(c.comm) << " per micro-batch per stage chunk\n";
  } else {
    o << "  model     " << s.model.name << ": " << format_count(r.params) << " parameters";
    if (s.model.is_moe()) o << " (" << format_count(r.activated_params) << " activated)";
    o << ", " << s.model.layers << " layers, hidden " << s.model.hidden << "\n";
  }
  const int nodes = (s.gpus + s.hardware.gpus_per_node - 1) / std::max(1, s.hardware.gpus_per_node);
  o << "  cluster   " << s.gpus << " x " << s.hardware.name << " (" << nodes << " NVLink domain" << (nodes > 1 ? "s" : "")
    << " of " << s.hardware.gpus_per_node << "), " << config::to_string(s.training.precision) << " peak "
    << fmt("%.0f", s.hardware.peak_flops(s.training.precision) / 1e12) << " TFLOP/s";
  if (s.training.precision == hardware::Precision::fp8) o << ", " << fp8_recipe_text(s);
  o << "\n";
  o << "  layout    tp " << p.tp << "  pp " << p.pp << "  dp " << p.dp << "  cp " << p.cp << "  ep " << p.ep << "  vpp "
    << p.vpp << "  |  " << config::to_string(s.schedule.name) << ", " << r.microbatches << " micro-batches of "
    << s.training.micro_batch << " x " << s.training.seq_len << " tokens\n";
  if (!lab) o << "  calib     " << calibration_text(s) << "\n";
  const std::string cal_note = s.calibration ? hardware::calibration_transfer_note(*s.calibration, s.hardware) : "";
  if (!lab && !cal_note.empty()) o << "  warning   " << cal_note << "\n";
  if (!lab) {
    const std::string pw = power_text(s);
    if (!pw.empty()) o << pw;
    o << sustained_text(s);
    o << accuracy_text(s);   // the validated family's error, where the modern set has one (report/accuracy.h)
  }
  for (const auto& w : r.warnings) o << "  warning   " << w << "\n";
  o << "\nStep\n";
  o << "  step time        " << format_seconds(r.step_time_s) << "\n";
  if (r.steady_steps > 1 && format_seconds(r.makespan_s) != format_seconds(r.step_time_s))
    o << "  one step's span  " << format_seconds(r.makespan_s) << "  (consecutive steps overlap; the step time is the period over "
      << r.steady_steps << " simulated steps)\n";
  if (!lab) {
    o << "  tokens/s         " << thousands(r.tokens_per_s) << "  (" << thousands(r.tokens_per_s_per_gpu) << " per GPU)\n";
    o << "  MFU              " << pct(r.mfu) << "   (with attention " << pct(r.mfu_attn) << ", HFU " << pct(r.hfu) << ")\n";
    o << "  TFLOP/s per GPU  " << fmt("%.1f", r.tflops_per_gpu) << "\n";
    // The two conventions, labelled (docs/scenario.md "Outputs").
    o << "  conventions      MFU counts 6 x activated parameters FLOPs per token; 'with attention' and TFLOP/s "
         "add the attention FLOPs; both against the "
      << config::to_string(s.training.precision) << " peak\n";
    if (s.training.precision == hardware::Precision::fp8)
      o << "  MFU (bf16 peak)  " << pct(mfu_bf16_peak(r)) << "   (the same FLOP/s against the bf16 peak)\n";
  }
  if (s.features.activation_offload_layers > 0)   // pp = 1: the idle time is the wait for the host transfers
    o << "  offload wait     " << pct(r.bubble_fraction) << " of the step (waiting for activation offloads and reloads)\n";
  else
    o << "  pipeline bubble  " << pct(r.bubble_fraction) << " of the step (mean over pipeline ranks)\n";
  if (!lab)
    o << "  memory           peak " << fmt("%.1f", r.memory.peak_gib) << " of " << fmt("%.1f", r.memory.capacity_gib)
      << " GiB per GPU: " << (r.memory.fits ? "fits" : "DOES NOT FIT")
      << (r.memory.peak_reserved_gib > 0
              ? "; reserved by the caching allocator " + fmt("%.1f", r.memory.peak_reserved_gib) + " GiB"
              : std::string())
      << "\n";
  if (s.training.tokens_to_train > 0 && (r.days_to_train > 0 || !r.run.sim.finishes)) write_training_run(o, r);
  const auto& b = r.breakdown;
  if (s.parallel.pp > 1)
    o << "\nWhere the time goes (pipeline rank " << r.breakdown_rank
      << ", the slowest: the least idle time; per GPU)\n";
  else
    o << "\nWhere the time goes (per GPU)\n";
  const std::pair<const char*, double> parts[] = {
      {"forward", b.forward},           {"backward", b.backward},
      {"recompute", b.recompute},       {"optimizer", b.optimizer},
      {"TP comm exposed", b.tp_comm_exposed}, {"PP comm exposed", b.pp_comm_exposed},
      {"DP comm exposed", b.dp_comm_exposed}, {"EP comm exposed", b.ep_comm_exposed},
      {"CP comm exposed", b.cp_comm_exposed},
      // pp = 1 with activation offloading (its only configuration): the schedule has no idle time,
      // the compute stream's idle time is its wait for the offloads and reloads (step/act_offload.cpp).
      {s.features.activation_offload_layers > 0 ? "offload wait" : "pipeline bubble", b.bubble},
      {"stage imbalance", b.imbalance},
      {"data loading", b.dataloader},   {"GC pauses", b.gc},
      {"launch overhead", b.launch_overhead},
  };
  const double T = r.step_time_s > 0 ? r.step_time_s : 1;
  for (const auto& [name, v] : parts) {
    if (v <= 0 && std::string(name) != "forward" && std::string(name) != "backward") continue;
    o << rstrip("  " + pad(name, 17) + lpad(format_seconds(v), 10) + lpad(pct(v / T), 9) + "  " + bar(v / T, 40)) << "\n";
  }
  o << "  " << pad("total", 17) << lpad(format_seconds(b.total()), 10) << "\n";
  if (r.interference_s > 0)
    o << "  (of the compute above, " << format_seconds(r.interference_s)
      << " is its slowdown beside overlapped communication: the SMs and HBM traffic of its kernels)\n";
  if (r.sync_pace > 1.0) {
    // The group's wander (run 40) where the rank waits for others every micro-batch; the job's boards (run 46)
    // where the pace includes them.
    const bool group = r.sync_group_ranks > 1, boards = r.job_boards > 1;
    o << "  (the compute above runs at the pace of the slowest";
    if (group) o << " of the " << r.sync_group_ranks << " ranks it waits for every micro-batch";
    if (group && boards) o << " and";
    if (boards) o << " of the " << r.job_boards << " boards it waits for every step";
    o << ", x" << fmt("%.3f", r.sync_pace) << ": ";
    if (group) o << "the power-capped clock wanders on each GPU, run 40";
    if (group && boards) o << ", and ";
    if (boards) o << "each board holds its own, run 46";
    o << ")\n";
  }
  const double imbalance = layer::expert_load_imbalance(r.scenario);
  if (!lab && imbalance > 1.0)
    o << "  (the experts' kernels and EP transfers above run at the slowest of the " << r.scenario.parallel.ep
      << " EP ranks' load, x" << fmt("%.2f", imbalance) << " the mean: moe.imbalance; memory at the mean)\n";
  const auto& m = r.memory;
  if (lab) {
    // No bytes in the lab: activations are counted in micro-batches.
    o << "\nActivations in flight per pipeline rank (peak, in micro-batches)\n";
    for (std::size_t i = 0; i < r.ranks.size(); ++i)
      o << "  rank " << lpad(std::to_string(i), 3) << lpad(std::to_string(r.ranks[i].peak_inflight_microbatches), 6) << "\n";
  } else {
    o << "\nMemory per pipeline stage (capacity " << fmt("%.1f", m.capacity_gib) << " GiB)\n";
    for (std::size_t i = 0; i < m.per_stage_peak_gib.size(); ++i) {
      const double g = m.per_stage_peak_gib[i];
      o << "  stage " << lpad(std::to_string(i), 3) << lpad(fmt("%.1f GiB", g), 12) << "  "
        << (g <= m.capacity_gib ? "fits" : "DOES NOT FIT") << "\n";
    }
    o << "  peak stage: params " << fmt("%.1f", m.params_gib) << ", grads " << fmt("%.1f", m.grads_gib) << ", optimizer "
      << fmt("%.1f", m.optimizer_gib) << ", activations " << fmt("%.1f", m.activations_gib) << " GiB\n";
  }
  if (s.parallel.pp > 1 && (s.parallel.pp <= 16 || per_rank) && r.ranks.size() == static_cast<std::size_t>(s.parallel.pp)) {
    // Per pipeline rank: where its idle time goes; the bubble is the schedule's own idle time, the
    // imbalance the idle time from unequal stage work (embedding, LM head, uneven splits).
    o << "\nPer pipeline rank (per GPU; bubble: the schedule's own idle time, imbalance: idle from unequal stage work)\n";
    o << "  rank" << lpad("busy", 11) << lpad("bubble", 11) << lpad("imbalance", 11) << lpad("exposed comm", 14)
      << lpad(lab ? "peak (mb)" : "peak memory", 13) << "\n";
    for (std::size_t i = 0; i < r.ranks.size(); ++i) {
      const auto& v = r.ranks[i];
      const std::string peak = lab ? std::to_string(v.peak_inflight_microbatches)
                               : i < m.per_stage_peak_gib.size() ? fmt("%.1f GiB", m.per_stage_peak_gib[i]) : "";
      o << "  " << lpad(std::to_string(i), 4) << lpad(format_seconds(v.busy_s), 11) << lpad(format_seconds(v.bubble_s), 11)
        << lpad(format_seconds(v.imbalance_s), 11) << lpad(format_seconds(v.exposed_comm_s), 14) << lpad(peak, 13)
        << (static_cast<int>(i) == r.breakdown_rank ? "  <- breakdown above" : "") << "\n";
    }
  }
  if (r.graph && r.timeline && s.parallel.pp <= 16) {
    // The picture's own legend (below it) names F, B, W, X and idle; the other letters here:
    const std::string ascii = timeline_ascii(*r.graph, *r.timeline, 100);
    if (!ascii.empty())
      o << "\nTimeline (compute stream of each pipeline rank; R recompute, D data loading, G GC pause, O optimizer)\n"
        << ascii;
  }
  if (!whatifs.empty()) {
    std::size_t w0 = 24;   // the name column fits the longest rung
    for (const auto& w : whatifs) w0 = std::max(w0, w.name.size() + 2);
    o << "\nWhat if (each rung adds to the one before)\n";
    o << "  " << pad("", w0) << lpad("step", 11) << lpad("MFU", 9) << lpad("delta", 9) << "\n";
    o << "  " << pad("(base)", w0) << lpad(format_seconds(r.step_time_s), 11) << lpad(pct(r.mfu), 9)
      << (m.fits ? "" : "           (does not fit)") << "\n";
    for (const auto& w : whatifs) {
      if (!w.error.empty()) {   // an infeasible rung: a row that says why
        o << "  " << pad(w.name, w0) << "  infeasible: " << w.error << "\n";
        continue;
      }
      char d[32];
      std::snprintf(d, sizeof d, "%+.1f", 100.0 * w.delta_mfu);
      o << "  " << pad(w.name, w0) << lpad(format_seconds(w.step_time_s), 11) << lpad(pct(w.mfu), 9) << lpad(d, 9)
        << (w.fits ? "" : "  (does not fit)") << "\n";
    }
  }
  return o.str();
}

}  // namespace mfusim::report
