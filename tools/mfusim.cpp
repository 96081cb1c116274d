// The mfusim command line (SPEC §2). The only file that knows CLI11.
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "config/loader.h"
#include "hardware/calibration.h"
#include "models/params.h"
#include "report/json.h"
#include "io/output_file.h"
#include "step/simulate.h"
#include "report/text.h"
#include "schedules/schedule.h"
#include "sim/time.h"
#include "sim/process_memory.h"
#include "study/sweep.h"
#include "tools/commands.h"

namespace {

using namespace mfusim;

int bad_input(const std::string& msg) {
  std::cerr << msg << "\n";
  return 2;
}

// A progress bar on stderr when it is a terminal.
study::Progress progress_bar(const char* what) {
  if (!isatty(2)) return {};
  return [what](std::size_t done, std::size_t total) {
    const int width = 40;
    const int filled = static_cast<int>(width * done / std::max<std::size_t>(1, total));
    std::fprintf(stderr, "\r%s [%.*s%*s] %zu/%zu", what, filled, "########################################",
                 width - filled, "", done, total);
    if (done == total) std::fprintf(stderr, "\r%*s\r", width + 40, "");
    std::fflush(stderr);
  };
}

int cmd_check(const std::string& path, const config::LoadOptions& lo) {
  const auto loaded = config::load_scenario(path, lo);
  std::cout << config::describe(loaded.base);
  for (const auto& w : loaded.whatifs) std::cout << "whatif: " << w.name << " (valid)\n";
  std::cout << path << ": ok\n";
  return 0;
}

int cmd_list(const std::string& what, const config::LoadOptions& lo) {
  // NAME first on each line (scripts: `mfusim list models | cut -d' ' -f1`), then its size.
  auto fmt = [](const char* f, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, f, v);
    return std::string(buf);
  };
  if (what == "models") {
    for (const auto& m : config::list_models(lo)) {
      std::string line = m;
      try {
        const auto spec = config::load_model(config::model_file(m, lo));
        const auto pc = models::count_params(spec);
        line += "  " + report::format_count(pc.total) + " params";
        if (spec.is_moe()) line += " (" + report::format_count(pc.activated) + " activated)";
        line += ", " + std::to_string(spec.layers) + " layers, hidden " + std::to_string(spec.hidden);
      } catch (const std::exception&) {
        line += "  (unreadable: mfusim check a scenario that uses it for the error)";
      }
      std::cout << line << "\n";
    }
  } else if (what == "hardware") {
    for (const auto& h : config::list_hardware(lo)) {
      std::string line = h;
      try {
        const auto hw = config::load_hardware(config::hardware_file(h, lo));
        line += "  bf16 " + fmt("%.0f", hw.peak_flops_bf16 / 1e12) + " TFLOP/s";
        if (hw.peak_flops_fp8 > 0) line += ", fp8 " + fmt("%.0f", hw.peak_flops_fp8 / 1e12);
        line += ", HBM " + fmt("%.0f", hw.hbm_bytes / (1024.0 * 1024 * 1024)) + " GiB " +
                fmt("%.2f", hw.hbm_bandwidth / 1e12) + " TB/s, NVLink " + fmt("%.0f", hw.nvlink_bandwidth / 1e9) +
                " GB/s x " + std::to_string(hw.gpus_per_node) + " GPUs, NIC " + fmt("%.0f", hw.nic_bandwidth / 1e9) +
                " GB/s per GPU";
        if (hw.price_per_gpu_hour > 0) line += ", list price " + fmt("%g", hw.price_per_gpu_hour) + " USD/GPU-h";
        if (hw.has_sustained_rates()) {
          // The rates at a training step's clock (docs/cost-model.md 2h).
          line += ", at a step's clock:";
          if (hw.gemm_sustained_eff_bf16 > 0) line += " GEMM bf16 <= " + fmt("%.3f", hw.gemm_sustained_eff_bf16);
          if (hw.gemm_sustained_eff_fp8 > 0) line += " GEMM fp8 <= " + fmt("%.3f", hw.gemm_sustained_eff_fp8);
          if (hw.attention_sustained_ratio > 0)
            line += " attention at " + fmt("%.1f", hw.attention_sustained_ratio * 100) + "% of an isolated call's rate";
        }
      } catch (const std::exception&) {
        line += "  (unreadable: mfusim check a scenario that uses it for the error)";
      }
      std::cout << line << "\n";
    }
  } else if (what == "schedules") {
    for (const auto& s : schedules::schedule_names()) std::cout << s << "\n";
  } else {
    return bad_input("mfusim list: error: expected models, hardware or schedules, got '" + what + "'");
  }
  return 0;
}

int cmd_calibrate(const std::string& probe, const std::string& out) {
  if (out == probe || io::same_file(probe, out))
    return bad_input(out + ": error: --out names the probe file itself; write the calibration to another file");
  std::string report;
  const auto cal = hardware::fit_probe(probe, &report);
  hardware::write_calibration(cal, out);
  std::cout << report << "wrote " << out << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  sim::tune_process_memory();   // freed step arrays are reused by the next step of a sweep/plan
  // `mfusim SCENARIO.toml ...` is `mfusim run SCENARIO.toml ...`.
  std::vector<std::string> args(argv, argv + argc);
  static const std::vector<std::string> commands = {"run",       "sweep", "plan", "diagnose", "check",
                                                    "calibrate", "list",  "merge"};
  if (args.size() > 1 && args[1].rfind("-", 0) != 0 &&
      std::find(commands.begin(), commands.end(), args[1]) == commands.end())
    args.insert(args.begin() + 1, "run");

  CLI::App app{"mfusim: simulate one training step of an LLM on a GPU cluster"};
  app.set_version_flag("--version", std::string("mfusim ") + MFUSIM_VERSION);
  app.require_subcommand(1);
  std::vector<std::string> sets;
  std::string scenario, trace, svg, csv, calibration, out, probe, what, gpus_list, rank_by = "step";
  std::vector<std::string> vary;
  std::vector<std::string> parts;   // merge
  tools::SweepArgs sweep_args;
  tools::PlanExtras plan_extras;
  bool json = false, per_rank = false, coarse = false;
  int top = 10;
  int gpus = 0;

  auto add_common = [&](CLI::App* c) {
    c->add_option("scenario", scenario, "scenario TOML file")->required();
    c->add_option("--set", sets, "override a scenario key: KEY=VALUE (repeatable)");
    c->add_option("--calibration", calibration, "calibration file (hardware/calibration/*.toml)");
  };
  auto* run = app.add_subcommand("run", "simulate one training step");
  add_common(run);
  run->add_flag("--json", json, "print the SPEC JSON report");
  run->add_option("--trace", trace, "write a Chrome trace (Perfetto) of the step");
  run->add_option("--svg", svg, "write the pipeline timeline as SVG");
  run->add_flag("--per-rank", per_rank, "print the per-pipeline-rank table also when pp > 16");
  run->add_flag("--coarse", coarse, "one task per pipeline op instead of per layer (less work and memory)");
  auto* sweep = app.add_subcommand("sweep", "simulate the cartesian product of --vary values");
  add_common(sweep);
  sweep->add_option("--vary", vary, "KEY=V1,V2,... (repeatable)")->required();
  sweep->add_option("--csv", csv, "write the table as CSV");
  sweep->add_flag("--json", json, "print a JSON array of reports");
  sweep->add_option("--shard", sweep_args.shard,
                    "K/N: run only the K-th of N slices of the points (K from 1) and print a part for `mfusim merge` "
                    "(with --json)");
  auto* plan = app.add_subcommand("plan", "search parallel layouts for the scenario's model and GPUs");
  add_common(plan);
  plan->add_option("--gpus", gpus_list, "GPU counts to plan for, e.g. 64,128,256");
  plan->add_option("--top", top, "how many layouts to show")->check(CLI::PositiveNumber);
  plan->add_option("--vary", vary, "hardware=NAME[@USD_PER_GPU_HOUR],... compare hardware, each at its profile's list price or the given one (e.g. hardware=h100-sxm,b200@5)");
  plan->add_flag("--json", json, "print the ranked JSON array");
  plan->add_option("--rank-by", rank_by, "step | days | cost: what 'best' means (default step)");
  plan->add_option("--shard", plan_extras.shard,
                   "K/N: search only the K-th of N slices of the layouts (K from 1) and print a part for "
                   "`mfusim merge` (with --json)");
  plan->add_option("--headroom", plan_extras.headroom,
                   "GIB or P%: memory each GPU keeps free beyond the simulated peak (default 0; the peak already "
                   "holds a 2 GiB runtime reserve)");
  plan->add_option("--framework", plan_extras.framework,
                   "megatron | torchtitan | deepspeed | any: search only what that framework ships (docs/plan.md)");
  auto* diag = app.add_subcommand("diagnose", "rank the MFU levers for this scenario");
  add_common(diag);
  diag->add_flag("--json", json, "print a JSON array");
  auto* check = app.add_subcommand("check", "validate a scenario and print it resolved");
  add_common(check);
  auto* cal = app.add_subcommand("calibrate", "fit a probe output into a calibration file");
  cal->add_option("probe", probe, "probe output TOML")->required();
  cal->add_option("--out", out, "calibration file to write")->required();
  auto* merge = app.add_subcommand("merge", "merge the parts of a sharded sweep or plan (--shard K/N --json)");
  merge->add_option("parts", parts, "part files, in any order")->required();
  auto* list = app.add_subcommand("list", "list models, hardware or schedules");
  list->add_option("what", what, "models | hardware | schedules")->required();
  (void)gpus;

  try {
    std::vector<const char*> cargs;
    for (const auto& a : args) cargs.push_back(a.c_str());
    app.parse(static_cast<int>(cargs.size()), const_cast<char**>(cargs.data()));
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }

  config::LoadOptions lo;
  lo.overrides = sets;
  if (!calibration.empty()) lo.overrides.push_back("calibration=" + calibration);
  int rc = 0;
  try {
    if (run->parsed()) rc = tools::cmd_run(scenario, lo, json, trace, svg, std::cout, per_rank, coarse);
    else if (sweep->parsed()) {
      sweep_args.vary = vary;
      sweep_args.csv = csv;
      sweep_args.json = json;
      rc = tools::cmd_sweep(scenario, lo, sweep_args, progress_bar("sweep"));
    } else if (plan->parsed()) {
      if (plan->count("--headroom") > 0 && plan_extras.headroom.empty())
        throw tools::UserError("--headroom: error: expected GiB to keep free per GPU (e.g. 8) or a percentage of HBM (e.g. 10%)");
      rc = tools::cmd_plan(scenario, lo, gpus_list, vary, top, json, rank_by, progress_bar("plan"), plan_extras);
    }
    else if (merge->parsed()) rc = tools::cmd_merge(parts);
    else if (diag->parsed()) rc = tools::cmd_diagnose(scenario, lo, json, progress_bar("diagnose"));
    else if (check->parsed()) rc = cmd_check(scenario, lo);
    else if (cal->parsed()) rc = cmd_calibrate(probe, out);
    else if (list->parsed()) rc = cmd_list(what, lo);
    // What was printed must have reached its destination (a full disk, a closed pipe).
    io::flush_stdout();
  } catch (const config::ConfigError& e) {
    for (const auto& d : e.diagnostics()) std::cerr << d.str() << "\n";
    return 2;
  } catch (const tools::UserError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const io::OutputError& e) {
    // An output that cannot be written: exit 2, as for any unusable path the user gave.
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const sim::TimeLimitError& e) {
    std::cerr << "mfusim: " << e.what() << "\n";
    return 2;
  } catch (const std::runtime_error& e) {
    // Unreadable calibration/probe files and the like carry "file:line:col: error:".
    const std::string m = e.what();
    if (m.find(": error:") != std::string::npos) {
      std::cerr << m << "\n";
      return 2;
    }
    std::cerr << "mfusim: internal error: " << m << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "mfusim: internal error: " << e.what() << "\n";
    return 1;
  }
  return rc;
}
