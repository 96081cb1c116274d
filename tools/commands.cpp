#include "tools/commands.h"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "report/chrome_trace.h"
#include "report/json.h"
#include "report/svg.h"
#include "report/text.h"
#include "study/diagnose.h"
#include "study/plan.h"

namespace mfusim::tools {

namespace {

std::string f(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> w;
  for (const auto& r : rows)
    for (std::size_t i = 0; i < r.size(); ++i) {
      if (w.size() <= i) w.push_back(0);
      w[i] = std::max(w[i], r[i].size());
    }
  std::ostringstream o;
  for (const auto& r : rows) {
    std::string line = " ";
    for (std::size_t i = 0; i < r.size(); ++i) {
      std::string c = r[i];
      if (i + 1 < r.size() && c.size() < w[i]) c.append(w[i] - c.size(), ' ');
      line += " " + c;
    }
    o << line << "\n";
  }
  return o.str();
}

std::vector<int> parse_gpus(const std::string& list, int fallback) {
  std::vector<int> out;
  if (list.empty()) return {fallback};
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      std::size_t used = 0;
      const int n = std::stoi(item, &used);
      if (used != item.size() || n <= 0) throw std::invalid_argument(item);
      out.push_back(n);
    } catch (const std::exception&) {
      throw UserError("--gpus " + list + ": error: expected a comma-separated list of positive integers");
    }
  }
  return out;
}

}  // namespace

std::string chrome_trace_of(const report::StepResult& r) { return report::chrome_trace(*r.graph, *r.timeline); }

std::string svg_of(const report::StepResult& r) {
  report::SvgOptions o;
  o.title = r.scenario.name + " | " + config::to_string(r.scenario.schedule.name) + ", pp " +
            std::to_string(r.scenario.parallel.pp) + ", " + std::to_string(r.microbatches) + " micro-batches";
  o.time_unit = r.step_time_s > 0.5 ? "ms" : "us";
  return report::render_svg(*r.graph, *r.timeline, o);
}

int cmd_diagnose(const std::string& path, const config::LoadOptions& lo, bool json, const study::Progress& progress) {
  const auto d = study::diagnose(path, lo, progress);
  if (json) {
    report::JsonWriter w;
    w.begin_array();
    for (const auto& x : d.levers) {
      w.begin_object();
      w.key("lever").value(x.lever);
      w.key("change").value(x.change);
      w.key("mfu_before").value(x.mfu_before);
      w.key("mfu_after").value(x.mfu_after);
      w.key("delta_mfu").value(x.delta_mfu);
      w.key("step_time_s").value(x.step_time_s);
      w.key("fits").value(x.fits);
      w.key("shrinks").value(x.shrinks);
      w.key("shrinks_s").value(x.shrinks_s);
      w.end_object();
    }
    w.end_array();
    std::cout << w.str() << "\n";
    return 0;
  }
  std::cout << "mfusim diagnose: " << d.base.scenario.name << "\n";
  std::cout << "  base: step " << report::format_seconds(d.base.step_time_s) << ", MFU " << f("%.1f %%", 100 * d.base.mfu)
            << "\n\n";
  std::vector<std::vector<std::string>> rows = {{"#", "lever", "MFU", "delta", "step", "shrinks", "fits", "change"}};
  int i = 0;
  for (const auto& x : d.levers) {
    rows.push_back({std::to_string(++i), x.lever, f("%.1f%%", 100 * x.mfu_after), f("%+.1f", 100 * x.delta_mfu),
                    report::format_seconds(x.step_time_s),
                    x.shrinks.empty() ? "-" : x.shrinks + " -" + report::format_seconds(x.shrinks_s), x.fits ? "yes" : "NO",
                    x.change});
  }
  std::cout << table(rows);
  return 0;
}

int cmd_plan(const std::string& path, const config::LoadOptions& lo, const std::string& gpus_list,
             const std::vector<std::string>& vary, int top, bool json, const study::Progress& progress) {
  const auto loaded = config::load_scenario(path, lo);
  const auto gpus = parse_gpus(gpus_list, loaded.base.gpus);
  std::vector<std::string> hardware_choices;
  for (const auto& v : vary) {
    const auto parsed = study::parse_vary(v);
    if (parsed.key != "hardware")
      throw UserError("--vary " + v + ": error: plan compares hardware only (--vary hardware=h100-sxm,b200,...)");
    hardware_choices = parsed.values;
  }
  std::vector<config::Scenario> bases;
  if (hardware_choices.empty()) {
    bases.push_back(loaded.base);
  } else {
    for (const auto& h : hardware_choices) bases.push_back(config::with_overrides(path, {"hardware=" + h}, lo));
  }
  std::vector<study::PlanResult> results;
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& b : bases)
    for (int g : gpus) {
      study::PlanOptions po;
      po.keep = static_cast<std::size_t>(std::max(top, 1));
      results.push_back(study::plan(b, g, po, progress));
    }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (json) {
    report::JsonWriter w;
    w.begin_array();
    for (const auto& r : results)
      for (const auto& p : r.ranked) {
        report::JsonWriter pw(0);
        pw.begin_object();
        pw.key("hardware").value(r.hardware).key("gpus").value(r.gpus).key("layout").value(study::layout_label(p.scenario));
        pw.key("schedule").value(config::to_string(p.scenario.schedule.name));
        pw.key("recompute").value(config::to_string(p.scenario.features.recompute));
        pw.end_object();
        report::write_step(w, p.result, {}, pw.str());
      }
    w.end_array();
    std::cout << w.str() << "\n";
    return 0;
  }
  std::size_t considered = 0, simulated = 0, pruned = 0, invalid = 0;
  for (const auto& r : results) {
    considered += r.considered;
    simulated += r.simulated;
    pruned += r.pruned;
    invalid += r.invalid;
  }
  std::cout << "mfusim plan: " << loaded.base.name << "\n";
  std::cout << "  " << considered << " layouts considered, " << invalid << " break a shape rule, " << pruned
            << " cannot fit (memory lower bound), " << simulated << " simulated in " << f("%.1f", secs) << " s\n";
  for (const auto& r : results) {
    std::cout << "\n" << r.gpus << " x " << r.hardware << ": " << r.fitting << " layouts fit";
    if (r.failed) std::cout << " (" << r.failed << " failed to simulate)";
    std::cout << "\n";
    std::vector<std::vector<std::string>> rows = {
        {"#", "layout", "schedule", "recompute", "step", "tokens/s", "MFU", "bubble", "exp. comm", "peak GiB"}};
    const bool cost = loaded.base.training.tokens_to_train > 0;
    if (cost) {
      rows[0].push_back("days");
      if (loaded.base.cost.price_per_gpu_hour > 0) rows[0].push_back("cost $M");
    }
    int i = 0;
    for (const auto& p : r.ranked) {
      const auto& x = p.result;
      const auto& b = x.breakdown;
      const double comm = b.tp_comm_exposed + b.pp_comm_exposed + b.dp_comm_exposed + b.ep_comm_exposed + b.cp_comm_exposed;
      rows.push_back({std::to_string(++i), study::layout_label(p.scenario), config::to_string(p.scenario.schedule.name),
                      config::to_string(p.scenario.features.recompute), report::format_seconds(x.step_time_s),
                      f("%.0f", x.tokens_per_s), f("%.1f%%", 100 * x.mfu), f("%.1f%%", 100 * x.bubble_fraction),
                      report::format_seconds(comm), f("%.1f", x.memory.peak_gib)});
      if (cost) {
        rows.back().push_back(f("%.1f", x.days_to_train));
        if (loaded.base.cost.price_per_gpu_hour > 0) rows.back().push_back(f("%.2f", x.cost_usd / 1e6));
      }
    }
    std::cout << table(rows);
  }
  if (results.size() > 1) {
    // Purchase comparison: the best layout of each choice, and which are Pareto-optimal in (days, cost, GPUs).
    std::cout << "\nBest layout per choice\n";
    std::vector<std::vector<std::string>> rows = {{"hardware", "gpus", "best layout", "step", "tokens/s", "MFU", "days", "cost $M", "pareto"}};
    for (const auto& r : results) {
      if (r.ranked.empty()) {
        rows.push_back({r.hardware, std::to_string(r.gpus), "nothing fits", "", "", "", "", "", ""});
        continue;
      }
      const auto& x = r.ranked.front().result;
      bool dominated = false;
      for (const auto& o : results) {
        if (&o == &r || o.ranked.empty()) continue;
        const auto& y = o.ranked.front().result;
        const bool better_or_equal = y.step_time_s * o.gpus <= x.step_time_s * r.gpus && y.step_time_s <= x.step_time_s &&
                                     o.gpus <= r.gpus;
        const bool strictly = y.step_time_s < x.step_time_s || o.gpus < r.gpus;
        if (better_or_equal && strictly && y.cost_usd <= x.cost_usd) dominated = true;
      }
      rows.push_back({r.hardware, std::to_string(r.gpus),
                      study::layout_label(r.ranked.front().scenario) + " " +
                          config::to_string(r.ranked.front().scenario.schedule.name),
                      report::format_seconds(x.step_time_s), f("%.0f", x.tokens_per_s), f("%.1f%%", 100 * x.mfu),
                      x.days_to_train > 0 ? f("%.1f", x.days_to_train) : "-",
                      x.cost_usd > 0 ? f("%.2f", x.cost_usd / 1e6) : "-", dominated ? "" : "yes"});
    }
    std::cout << table(rows);
  }
  return 0;
}

}  // namespace mfusim::tools
