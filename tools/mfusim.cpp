// The mfusim command line (SPEC §2). The only file that knows CLI11.
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "config/loader.h"
#include "hardware/calibration.h"
#include "report/json.h"
#include "report/output_file.h"
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

// An output path that names an input file (the scenario) would destroy it.
void refuse_overwrite(const std::string& out, const char* flag, const std::string& input) {
  if (!out.empty() && (out == input || report::same_file(out, input)))
    throw tools::UserError(out + ": error: " + flag + " names the scenario file itself; write to another file");
}

int cmd_run(const std::string& path, const config::LoadOptions& lo, bool json, const std::string& trace,
            const std::string& svg, bool coarse = false) {
  refuse_overwrite(trace, "--trace", path);
  refuse_overwrite(svg, "--svg", path);
  const auto loaded = config::load_scenario(path, lo);
  step::SimulateOptions base_opt;
  base_opt.per_layer = !coarse;   // --coarse: one task per op (docs/scenario.md, Limits)
  const auto base = step::simulate(loaded.base, base_opt);
  std::vector<step::WhatIfResult> ladder;
  double prev_mfu = base.mfu;
  for (const auto& w : loaded.whatifs) {
    step::SimulateOptions so;
    so.keep_timeline = false;
    so.per_layer = !coarse;
    const auto r = step::simulate(w.scenario, so);
    ladder.push_back({w.name, r.step_time_s, r.mfu, r.mfu - prev_mfu, r.memory.fits});
    prev_mfu = r.mfu;
  }
  // Every output file complete before any replaces its old version.
  std::vector<report::OutputFile> files;
  if (!trace.empty()) files.push_back({trace, tools::chrome_trace_of(base), "the trace file"});
  if (!svg.empty()) files.push_back({svg, tools::svg_of(base), "the SVG file"});
  report::write_files(files);
  std::cout << (json ? report::to_json(base, ladder) : report::text_report(base, ladder));
  return 0;
}

std::string table_row(const std::vector<std::string>& cells, const std::vector<std::size_t>& widths) {
  std::string s = " ";
  for (std::size_t i = 0; i < cells.size(); ++i) {
    std::string c = cells[i];
    if (c.size() < widths[i]) c.append(widths[i] - c.size(), ' ');
    s += " " + c;
  }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s + "\n";
}

int cmd_sweep(const std::string& path, const config::LoadOptions& lo, const std::vector<std::string>& vary_args,
              const std::string& csv, bool json) {
  refuse_overwrite(csv, "--csv", path);
  std::vector<study::Vary> vary;
  for (const auto& a : vary_args) vary.push_back(study::parse_vary(a));
  config::load_scenario(path, lo);   // the base must be valid on its own
  study::check_vary_keys(path, vary, lo);   // a typo in a --vary key is an error, not a column of failures
  const auto points = study::sweep(path, vary, lo, progress_bar("sweep"));
  char buf[64];
  auto f = [&](const char* fmt, double v) {
    std::snprintf(buf, sizeof buf, fmt, v);
    return std::string(buf);
  };
  std::vector<std::string> header;
  for (const auto& v : vary) header.push_back(v.key);
  for (const char* h : {"step", "MFU", "bubble", "exp. comm", "peak GiB", "fits"}) header.push_back(h);
  std::vector<std::vector<std::string>> rows;
  std::ostringstream csvs;
  for (std::size_t i = 0; i < header.size(); ++i) csvs << (i ? "," : "") << header[i];
  csvs << ",tokens_per_s,error\n";
  for (const auto& p : points) {
    std::vector<std::string> row;
    for (const auto& kv : p.point) row.push_back(kv.second);
    if (p.ok) {
      const auto& r = p.result;
      const auto& b = r.breakdown;
      const double comm = b.tp_comm_exposed + b.pp_comm_exposed + b.dp_comm_exposed + b.ep_comm_exposed + b.cp_comm_exposed;
      row.push_back(report::format_seconds(r.step_time_s));
      row.push_back(f("%.1f%%", 100 * r.mfu));
      row.push_back(f("%.1f%%", 100 * r.bubble_fraction));
      row.push_back(report::format_seconds(comm));
      row.push_back(f("%.1f", r.memory.peak_gib));
      row.push_back(r.memory.fits ? "yes" : "NO");
      for (const auto& kv : p.point) csvs << kv.second << ",";
      csvs << r.step_time_s << "," << r.mfu << "," << r.bubble_fraction << "," << comm << "," << r.memory.peak_gib << ","
           << (r.memory.fits ? "yes" : "no") << "," << r.tokens_per_s << ",\n";
    } else {
      row.push_back("infeasible: " + p.error);
      for (const auto& kv : p.point) csvs << kv.second << ",";
      std::string err = p.error;
      for (auto& c : err)
        if (c == '"') c = '\'';
      csvs << ",,,,,,,\"" << err << "\"\n";
    }
    rows.push_back(row);
  }
  if (!csv.empty()) report::write_file(csv, csvs.str(), "the CSV file");
  if (json) {
    report::JsonWriter w;
    w.begin_array();
    for (const auto& p : points) {
      if (p.ok) {
        report::write_step(w, p.result, {}, study::point_json(p));
      } else {
        w.begin_object();
        w.key("point").raw(study::point_json(p));
        w.key("error").value(p.error);
        w.end_object();
      }
    }
    w.end_array();
    std::cout << w.str() << "\n";
    return 0;
  }
  std::vector<std::size_t> widths(header.size(), 0);
  for (std::size_t i = 0; i < header.size(); ++i) widths[i] = header[i].size();
  for (const auto& row : rows)
    for (std::size_t i = 0; i + 1 < row.size() && i < widths.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  std::cout << table_row(header, widths);
  for (const auto& row : rows) std::cout << table_row(row, widths);
  return 0;
}

int cmd_check(const std::string& path, const config::LoadOptions& lo) {
  const auto loaded = config::load_scenario(path, lo);
  std::cout << config::describe(loaded.base);
  for (const auto& w : loaded.whatifs) std::cout << "whatif: " << w.name << " (valid)\n";
  std::cout << path << ": ok\n";
  return 0;
}

int cmd_list(const std::string& what, const config::LoadOptions& lo) {
  if (what == "models") {
    for (const auto& m : config::list_models(lo)) std::cout << m << "\n";
  } else if (what == "hardware") {
    for (const auto& h : config::list_hardware(lo)) std::cout << h << "\n";
  } else if (what == "schedules") {
    for (const auto& s : schedules::schedule_names()) std::cout << s << "\n";
  } else {
    return bad_input("mfusim list: error: expected models, hardware or schedules, got '" + what + "'");
  }
  return 0;
}

int cmd_calibrate(const std::string& probe, const std::string& out) {
  if (out == probe || report::same_file(probe, out))
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
  static const std::vector<std::string> commands = {"run", "sweep", "plan", "diagnose", "check", "calibrate", "list"};
  if (args.size() > 1 && args[1].rfind("-", 0) != 0 &&
      std::find(commands.begin(), commands.end(), args[1]) == commands.end())
    args.insert(args.begin() + 1, "run");

  CLI::App app{"mfusim: simulate one training step of an LLM on a GPU cluster"};
  app.set_version_flag("--version", std::string("mfusim ") + MFUSIM_VERSION);
  app.require_subcommand(1);
  std::vector<std::string> sets;
  std::string scenario, trace, svg, csv, calibration, out, probe, what, gpus_list, rank_by = "step";
  std::vector<std::string> vary;
  bool json = false, coarse = false;
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
  run->add_flag("--coarse", coarse, "one task per pipeline op instead of per layer (less work and memory)");
  auto* sweep = app.add_subcommand("sweep", "simulate the cartesian product of --vary values");
  add_common(sweep);
  sweep->add_option("--vary", vary, "KEY=V1,V2,... (repeatable)")->required();
  sweep->add_option("--csv", csv, "write the table as CSV");
  sweep->add_flag("--json", json, "print a JSON array of reports");
  auto* plan = app.add_subcommand("plan", "search parallel layouts for the scenario's model and GPUs");
  add_common(plan);
  plan->add_option("--gpus", gpus_list, "GPU counts to plan for, e.g. 64,128,256");
  plan->add_option("--top", top, "how many layouts to show")->check(CLI::PositiveNumber);
  plan->add_option("--vary", vary, "hardware=NAME[@USD_PER_GPU_HOUR],... compare hardware (e.g. hardware=h100-sxm@2.5,b200@5)");
  plan->add_flag("--json", json, "print the ranked JSON array");
  plan->add_option("--rank-by", rank_by, "step | days | cost: what 'best' means (default step)");
  auto* diag = app.add_subcommand("diagnose", "rank the MFU levers for this scenario");
  add_common(diag);
  diag->add_flag("--json", json, "print a JSON array");
  auto* check = app.add_subcommand("check", "validate a scenario and print it resolved");
  add_common(check);
  auto* cal = app.add_subcommand("calibrate", "fit a probe output into a calibration file");
  cal->add_option("probe", probe, "probe output TOML")->required();
  cal->add_option("--out", out, "calibration file to write")->required();
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
    if (run->parsed()) rc = cmd_run(scenario, lo, json, trace, svg, coarse);
    else if (sweep->parsed()) rc = cmd_sweep(scenario, lo, vary, csv, json);
    else if (plan->parsed())
      rc = tools::cmd_plan(scenario, lo, gpus_list, vary, top, json, rank_by, progress_bar("plan"));
    else if (diag->parsed()) rc = tools::cmd_diagnose(scenario, lo, json, progress_bar("diagnose"));
    else if (check->parsed()) rc = cmd_check(scenario, lo);
    else if (cal->parsed()) rc = cmd_calibrate(probe, out);
    else if (list->parsed()) rc = cmd_list(what, lo);
    // What was printed must have reached its destination (a full disk, a closed pipe).
    report::flush_stdout();
  } catch (const config::ConfigError& e) {
    for (const auto& d : e.diagnostics()) std::cerr << d.str() << "\n";
    return 2;
  } catch (const tools::UserError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const report::OutputError& e) {
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
