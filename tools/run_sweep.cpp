// `mfusim run` and `mfusim sweep` (SPEC §2).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "report/json.h"
#include "io/output_file.h"
#include "report/text.h"
#include "step/simulate.h"
#include "tools/commands.h"

namespace mfusim::tools {

void refuse_overwrite(const std::string& out, const char* flag, const std::string& input) {
  if (!out.empty() && (out == input || io::same_file(out, input)))
    throw UserError(out + ": error: " + flag + " names the scenario file itself; write to another file");
}

std::string json_array(const std::vector<std::string>& items) {
  if (items.empty()) return "[]";
  std::string s = "[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    s += i ? ",\n  " : "\n  ";
    for (char c : items[i]) {   // one level deeper: strings escape their newlines
      s += c;
      if (c == '\n') s += "  ";
    }
  }
  return s + "\n]";
}

int cmd_run(const std::string& path, const config::LoadOptions& lo, bool json, const std::string& trace,
            const std::string& svg, std::ostream& out, bool per_rank, bool coarse) {
  refuse_overwrite(trace, "--trace", path);
  refuse_overwrite(svg, "--svg", path);
  config::LoadedScenario loaded;
  try {
    loaded = config::load_scenario(path, lo);
  } catch (const config::ConfigError& e) {
    // A rung that --set makes infeasible (vpp 5 after --set model=llama3-8b) is
    // a row that says why; a rung that is wrong in the file itself stays an error.
    bool only_rungs = !lo.overrides.empty();
    for (const auto& d : e.diagnostics()) only_rungs = only_rungs && d.message.rfind("in whatif ", 0) == 0;
    if (!only_rungs) throw;
    config::LoadOptions plain = lo;
    plain.overrides.clear();
    try {
      config::load_scenario(path, plain);
    } catch (const config::ConfigError&) {
      throw e;
    }
    config::LoadOptions rows = lo;
    rows.whatif_errors_as_rows = true;
    loaded = config::load_scenario(path, rows);
  }
  step::SimulateOptions base_opt;
  base_opt.per_layer = !coarse;   // --coarse: one task per op (docs/scenario.md, Limits)
  const auto base = step::simulate(loaded.base, base_opt);
  std::vector<step::WhatIfResult> ladder;
  double prev_mfu = base.mfu;
  for (const auto& w : loaded.whatifs) {
    if (!w.error.empty()) {
      step::WhatIfResult x;
      x.name = w.name;
      x.fits = false;
      x.error = w.error;
      ladder.push_back(x);
      continue;
    }
    step::SimulateOptions so;
    so.keep_timeline = false;
    so.per_layer = !coarse;
    const auto r = step::simulate(w.scenario, so);
    ladder.push_back({w.name, r.step_time_s, r.mfu, r.mfu - prev_mfu, r.memory.fits, ""});
    prev_mfu = r.mfu;
  }
  // Every output file complete before any replaces its old version.
  std::vector<io::OutputFile> files;
  if (!trace.empty()) files.push_back({trace, chrome_trace_of(base), "the trace file"});
  if (!svg.empty()) files.push_back({svg, svg_of(base), "the SVG file"});
  io::write_files(files);
  out << (json ? report::to_json(base, ladder) : report::text_report(base, ladder, per_rank));
  return 0;
}

namespace {

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

// One sweep point as its JSON value (top level).
std::string sweep_row_json(const study::SweepPoint& p) {
  report::JsonWriter w;
  if (p.ok) {
    report::write_step(w, p.result, {}, study::point_json(p));
  } else {
    w.begin_object();
    w.key("point").raw(study::point_json(p));
    w.key("error").value(p.error);
    w.end_object();
  }
  return w.str();
}

}  // namespace

int cmd_sweep(const std::string& path, const config::LoadOptions& lo, const SweepArgs& args,
              const study::Progress& progress, std::ostream& out) {
  refuse_overwrite(args.csv, "--csv", path);
  std::vector<study::Vary> vary;
  for (const auto& a : args.vary) vary.push_back(study::parse_vary(a));
  study::Shard shard;
  if (!args.shard.empty()) {
    shard = study::parse_shard(args.shard);
    if (!args.json || !args.csv.empty())
      throw UserError("--shard " + args.shard +
                      ": error: a shard writes a part for `mfusim merge`: add --json (and no --csv)");
  }
  config::load_scenario(path, lo);   // the base must be valid on its own
  study::check_vary_keys(path, vary, lo);   // a typo in a --vary key is an error, not a column of failures
  const std::size_t total = study::sweep_size(vary);
  const auto points = study::sweep(path, vary, lo, progress, shard);
  if (!args.shard.empty()) {
    // The part: which slice, and each row's JSON text as a string (merged byte for byte).
    report::JsonWriter w;
    w.begin_object();
    w.key("mfusim_part").value("sweep");
    w.key("shard").value(static_cast<long long>(shard.k));
    w.key("of").value(static_cast<long long>(shard.n));
    w.key("points").value(static_cast<long long>(total));
    w.key("rows").begin_array();
    for (const auto& p : points) w.value(sweep_row_json(p));
    w.end_array();
    w.end_object();
    out << w.str() << "\n";
    return 0;
  }
  char buf[64];
  auto f = [&](const char* fmt, double v) {
    std::snprintf(buf, sizeof buf, fmt, v);
    return std::string(buf);
  };
  // Days and cost where any point trains a token count (cost where it has a
  // price too); the bf16-peak MFU where any point runs fp8 (its MFU counts
  // against the fp8 peak).
  bool days = false, cost = false, fp8 = false;
  for (const auto& p : points)
    if (p.ok) {
      days = days || p.result.scenario.training.tokens_to_train > 0;
      cost = cost || (p.result.scenario.training.tokens_to_train > 0 && p.result.scenario.cost.price_per_gpu_hour > 0);
      fp8 = fp8 || p.result.scenario.training.precision == hardware::Precision::fp8;
    }
  // --vary hardware prices each GPU at its profile's list price (NAME@PRICE: the user's);
  // say which GPUs have none, and where the prices come from (JSON rows say it in
  // resolved.cost.price_source).
  if (days && !args.json)
    for (const auto& v : vary)
      if (v.key == "hardware") {
        std::vector<std::string> unpriced;
        bool listed = false;
        for (const auto& p : points)
          if (p.ok && p.result.scenario.training.tokens_to_train > 0) {
            if (p.result.scenario.cost.price_per_gpu_hour <= 0) unpriced.push_back(p.result.scenario.hardware_ref);
            listed = listed || p.result.scenario.cost.price_from_hardware;
          }
        std::sort(unpriced.begin(), unpriced.end());
        unpriced.erase(std::unique(unpriced.begin(), unpriced.end()), unpriced.end());
        if (listed)
          std::cerr << "note: --vary hardware: each GPU is priced at its profile's on-demand list price "
                       "(hardware/NAME.toml names the source and date); give your own with "
                       "hardware=NAME@USD_PER_GPU_HOUR (e.g. h100-sxm@2.5,b200@5)\n";
        for (const auto& h : unpriced)
          std::cerr << "note: --vary hardware: " << h
                    << " has no published list price in its profile: no cost; give one with hardware=" << h
                    << "@USD_PER_GPU_HOUR\n";
      }
  std::vector<std::string> header;
  for (const auto& v : vary) header.push_back(v.key);
  for (const char* h : {"step", "MFU", "bubble", "exp. comm", "peak GiB", "fits"}) header.push_back(h);
  if (fp8) header.insert(header.end() - 5, "MFU bf16");
  if (days) header.push_back("days");
  if (cost) header.push_back("cost $M");
  std::vector<std::vector<std::string>> rows;
  std::ostringstream csvs;
  // CSV: one column per --vary key, then the quantities with their units.
  for (std::size_t i = 0; i < vary.size(); ++i) csvs << (i ? "," : "") << vary[i].key;
  csvs << (vary.empty() ? "" : ",")
       << "step_s,mfu_fraction,mfu_bf16_peak_fraction,bubble_fraction,exposed_comm_s,peak_gib,fits,tokens_per_s,"
          "days_to_train,cost_usd,error\n";
  for (const auto& p : points) {
    std::vector<std::string> row;
    for (const auto& kv : p.point) row.push_back(kv.second);
    if (p.ok) {
      const auto& r = p.result;
      const auto& b = r.breakdown;
      const double comm = b.tp_comm_exposed + b.pp_comm_exposed + b.dp_comm_exposed + b.ep_comm_exposed + b.cp_comm_exposed;
      const bool lab = r.scenario.schedule.costs.has_value();   // a schedule-lab row: no model, no memory
      const double mfu_bf16 = report::mfu_bf16_peak(r);
      const bool has_days = r.scenario.training.tokens_to_train > 0;
      const bool has_cost = has_days && r.scenario.cost.price_per_gpu_hour > 0;
      row.push_back(report::format_seconds(r.step_time_s));
      row.push_back(lab ? "n/a" : f("%.1f%%", 100 * r.mfu));
      if (fp8) row.push_back(lab ? "n/a" : f("%.1f%%", 100 * mfu_bf16));
      row.push_back(f("%.1f%%", 100 * r.bubble_fraction));
      row.push_back(report::format_seconds(comm));
      row.push_back(lab ? "n/a" : f("%.1f", r.memory.peak_gib));
      row.push_back(lab ? "n/a" : r.memory.fits ? "yes" : "NO");
      const bool never = has_days && !lab && !r.run.sim.finishes;   // the run does not finish: no days, no cost
      if (days) row.push_back(never ? "never" : has_days && !lab ? f("%.1f", r.days_to_train) : "-");
      if (cost) row.push_back(never ? "never" : has_cost && !lab ? f("%.2f", r.cost_usd / 1e6) : "-");
      for (const auto& kv : p.point) csvs << kv.second << ",";
      csvs << r.step_time_s << ",";
      if (!lab) csvs << r.mfu;
      csvs << ",";
      if (!lab) csvs << mfu_bf16;
      csvs << "," << r.bubble_fraction << "," << comm << ",";
      if (!lab) csvs << r.memory.peak_gib;
      csvs << "," << (lab ? "" : r.memory.fits ? "yes" : "no") << "," << r.tokens_per_s << ",";
      if (has_days && !never) csvs << r.days_to_train;   // empty where the run does not finish
      csvs << ",";
      if (has_cost && !never) csvs << r.cost_usd;
      csvs << ",\n";
    } else {
      row.push_back("infeasible: " + p.error);
      for (const auto& kv : p.point) csvs << kv.second << ",";
      std::string err = p.error;
      for (auto& c : err)
        if (c == '"') c = '\'';
      csvs << ",,,,,,,,,,\"" << err << "\"\n";
    }
    rows.push_back(row);
  }
  if (!args.csv.empty()) io::write_file(args.csv, csvs.str(), "the CSV file");
  if (args.json) {
    std::vector<std::string> items;
    for (const auto& p : points) items.push_back(sweep_row_json(p));
    out << json_array(items) << "\n";
    return 0;
  }
  std::vector<std::size_t> widths(header.size(), 0);
  for (std::size_t i = 0; i < header.size(); ++i) widths[i] = header[i].size();
  for (const auto& row : rows)
    for (std::size_t i = 0; i + 1 < row.size() && i < widths.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  out << table_row(header, widths);
  for (const auto& row : rows) out << table_row(row, widths);
  return 0;
}

}  // namespace mfusim::tools
