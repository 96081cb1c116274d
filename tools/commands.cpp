#include "tools/commands.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "report/accuracy.h"
#include "report/chrome_trace.h"
#include "report/json.h"
#include "report/svg.h"
#include "report/text.h"
#include "study/diagnose.h"
#include "step/simulate.h"
#include "study/plan.h"
#include "tools/plan_rows.h"

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

std::string chrome_trace_of(const step::StepResult& r) { return report::chrome_trace(*r.graph, *r.timeline, r.task_info.get()); }

std::string svg_of(const step::StepResult& r) {
  report::SvgOptions o;
  o.title = r.scenario.name + " | " + config::to_string(r.scenario.schedule.name) + ", pp " +
            std::to_string(r.scenario.parallel.pp) + ", " + std::to_string(r.microbatches) + " micro-batches";
  o.time_unit = r.step_time_s > 0.5 ? "ms" : "us";
  return report::render_svg(*r.graph, *r.timeline, o);
}

int cmd_diagnose(const std::string& path, const config::LoadOptions& lo, bool json, const study::Progress& progress,
                 std::ostream& out) {
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
      w.key("why").value(x.why);           // additive: the mechanism behind the part it shrinks
      w.key("planner").value(x.planner);   // additive: found by the layout planner
      w.end_object();
    }
    w.end_array();
    out << w.str() << "\n";
    return 0;
  }
  out << "mfusim diagnose: " << d.base.scenario.name << "\n";
  out << "  base: step " << report::format_seconds(d.base.step_time_s) << ", MFU " << f("%.1f %%", 100 * d.base.mfu)
      << "\n";
  if (!d.base.memory.fits)
    out << "  the base does NOT fit (peak " << f("%.1f", d.base.memory.peak_gib) << " of "
        << f("%.1f", d.base.memory.capacity_gib) << " GiB): toggles cannot fix that; the 'layout that fits' row is the planner's "
        << "fastest layout that fits\n";
  out << "  levers marked (planner) come from `mfusim plan` with every other layout key held\n\n";
  std::vector<std::vector<std::string>> rows = {{"#", "lever", "MFU", "delta", "step", "shrinks", "fits", "change"}};
  int i = 0;
  for (const auto& x : d.levers) {
    rows.push_back({std::to_string(++i), x.lever, f("%.1f%%", 100 * x.mfu_after), f("%+.1f", 100 * x.delta_mfu),
                    report::format_seconds(x.step_time_s),
                    x.shrinks.empty() ? "-" : x.shrinks + " -" + report::format_seconds(x.shrinks_s), x.fits ? "yes" : "NO",
                    x.change});
  }
  out << table(rows);
  out << "\nWhy each lever helps (the breakdown part it shrinks)\n";
  i = 0;
  for (const auto& x : d.levers) {
    ++i;
    if (x.why.empty()) continue;
    out << "  " << i << ". " << x.lever << ": " << x.why;
    if (!x.shrinks.empty()) out << " (" << x.shrinks << " -" << report::format_seconds(x.shrinks_s) << ")";
    out << "\n";
  }
  return 0;
}

double row_key(const PlanRow& r, study::RankBy by) {
  switch (by) {
    case study::RankBy::step: return r.step_time_s;
    case study::RankBy::days: return r.obj.time_s;
    case study::RankBy::cost: return r.obj.cost;
  }
  return r.step_time_s;
}

std::vector<char> pareto_of(const std::vector<PlanChoice>& choices) {
  // Per choice the best by step time is best in all three (global batch and
  // GPUs fixed), so the front over these points is the front over all points.
  std::vector<study::Objectives> objs;
  std::vector<std::size_t> with_best;
  for (std::size_t i = 0; i < choices.size(); ++i)
    if (!choices[i].rows.empty()) {
      objs.push_back(choices[i].rows.front().obj);
      with_best.push_back(i);
    }
  const auto front = study::pareto_front(objs);
  std::vector<char> on_front(choices.size(), 0);
  for (std::size_t k = 0; k < with_best.size(); ++k) on_front[with_best[k]] = front[k] ? 1 : 0;
  return on_front;
}

std::string plan_json(const std::vector<PlanChoice>& choices, study::RankBy rank_by) {
  const auto on_front = pareto_of(choices);
  // One ranked array over all choices (SPEC §2); "point" says which choice and layout.
  struct Row { std::size_t choice; const PlanRow* p; int rank_in_choice; };
  std::vector<Row> rows;
  for (std::size_t c = 0; c < choices.size(); ++c) {
    int k = 0;
    for (const auto& p : choices[c].rows) rows.push_back({c, &p, ++k});
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [&](const Row& a, const Row& b) { return row_key(*a.p, rank_by) < row_key(*b.p, rank_by); });
  std::vector<std::string> items;
  for (const auto& row : rows) {
    const auto& p = *row.p;
    const auto& ch = choices[row.choice];
    report::JsonWriter pw(0);
    pw.begin_object();
    pw.key("hardware").value(ch.hardware).key("gpus").value(ch.gpus);
    pw.key("layout").value(p.layout);
    pw.key("schedule").value(p.schedule);
    pw.key("recompute").value(p.recompute);
    pw.key("recompute_num_layers").value(p.recompute_num_layers);
    pw.key("rank_by").value(study::to_string(rank_by));
    pw.key("rank_in_choice").value(row.rank_in_choice);
    pw.key("pareto").value(row.rank_in_choice == 1 && on_front[row.choice] != 0);
    pw.key("margin_gib").value(p.margin_gib);
    if (ch.failed > 0) {   // why points of this choice failed to simulate, by reason
      pw.key("failed");
      pw.begin_object();
      for (const auto& [why, n] : ch.failures) pw.key(why).value(static_cast<long long>(n));
      pw.end_object();
    }
    pw.end_object();
    std::string item = p.report;
    const auto at = item.find(kPointSlot);
    if (at != std::string::npos) item.replace(at, kPointSlot.size(), pw.str());
    items.push_back(std::move(item));
  }
  return json_array(items);
}

namespace {

// Exact doubles in a part (hexadecimal floating point as a string).
std::string exact(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

PlanChoice choice_of(const study::PlanResult& r) {
  PlanChoice c;
  c.hardware = r.hardware;
  c.gpus = r.gpus;
  c.considered = r.considered;
  c.invalid = r.invalid;
  c.pruned = r.pruned;
  c.skipped = r.skipped;
  c.simulated = r.simulated;
  c.failed = r.failed;
  c.fitting = r.fitting;
  c.failures = r.failures;
  c.searched = r.searched;
  for (const auto& p : r.ranked) {
    PlanRow row;
    row.layout = study::layout_label(p.scenario);
    row.schedule = config::to_string(p.scenario.schedule.name);
    row.recompute = config::to_string(p.scenario.features.recompute);
    row.recompute_num_layers = p.scenario.features.recompute_num_layers;
    row.step_time_s = p.result.step_time_s;
    row.obj = study::objectives(p.result);
    row.margin_gib = p.result.memory.capacity_gib - p.result.memory.peak_gib;
    report::JsonWriter w;
    report::write_step(w, p.result, {}, kPointSlot);
    row.report = w.str();
    c.rows.push_back(std::move(row));
  }
  return c;
}

}  // namespace

int cmd_plan(const std::string& path, const config::LoadOptions& lo, const std::string& gpus_list,
             const std::vector<std::string>& vary, int top, bool json, const std::string& rank_by_name,
             const study::Progress& progress, const PlanExtras& extras) {
  std::ostream& out = *extras.out;
  study::RankBy rank_by = study::RankBy::step;
  try {
    rank_by = study::parse_rank_by(rank_by_name);
  } catch (const std::invalid_argument& e) {
    throw UserError("--rank-by: error: " + std::string(e.what()));
  }
  study::SearchConstraints constraints;
  try {
    constraints.framework = study::parse_framework(extras.framework);
  } catch (const std::invalid_argument& e) {
    throw UserError("--framework: error: " + std::string(e.what()));
  }
  // Keys the user set are held fixed, not searched (SPEC §2).
  constraints.fixed = study::fixed_keys(lo.overrides);
  // --headroom GIB or P% (of each GPU's HBM).
  double headroom_gib = 0, headroom_frac = 0;
  if (!extras.headroom.empty()) {
    std::string h = extras.headroom;
    const bool pct = !h.empty() && h.back() == '%';
    if (pct) h.pop_back();
    char* end = nullptr;
    const double v = h.empty() ? -1 : std::strtod(h.c_str(), &end);
    if (h.empty() || end != h.c_str() + h.size() || !std::isfinite(v) || v < 0 || (pct && v >= 100))
      throw UserError("--headroom " + extras.headroom +
                      ": error: expected GiB to keep free per GPU (e.g. 8) or a percentage of HBM below 100 (e.g. 10%)");
    (pct ? headroom_frac : headroom_gib) = pct ? v / 100 : v;
  }
  study::Shard shard;
  if (!extras.shard.empty()) {
    shard = study::parse_shard(extras.shard);
    if (!json) throw UserError("--shard " + extras.shard + ": error: a shard writes a part for `mfusim merge`: add --json");
  }
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
    // NAME or NAME@PRICE: the hardware file, and optionally its price per GPU-hour
    // (USD), since one [cost] price rarely fits several GPU generations.
    for (const auto& h : hardware_choices) {
      const auto at = h.find('@');
      std::vector<std::pair<std::string, std::string>> point = {{"hardware", h.substr(0, at)}};
      if (at != std::string::npos) point.emplace_back("cost.price_per_gpu_hour", h.substr(at + 1));
      // The user's --set overrides stay, also those refining the hardware table.
      config::LoadOptions o = lo;
      o.overrides = study::point_overrides(point, lo.overrides);
      bases.push_back(config::load_scenario(path, o).base);
    }
  }
  // Costs compare only where every choice has a price (a profile without a published list price has none).
  for (const auto& b : bases)
    if (rank_by == study::RankBy::cost && b.cost.price_per_gpu_hour <= 0 && bases.size() > 1)
      throw UserError("--rank-by cost: " + b.hardware_ref + " has no price (its hardware profile publishes none): give one with --vary hardware=" +
                      b.hardware_ref + "@USD_PER_GPU_HOUR");
  std::vector<study::PlanResult> results;
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& b : bases)
    for (int g : gpus) {
      study::PlanOptions po;
      po.keep = static_cast<std::size_t>(std::max(top, 1));
      po.constraints = constraints;
      po.headroom_bytes = (headroom_gib + headroom_frac * b.hardware.hbm_bytes / (1024.0 * 1024 * 1024)) *
                          (1024.0 * 1024 * 1024);
      po.shard = shard;
      results.push_back(study::plan(b, g, po, progress));
      // Within one choice the three rank keys order points alike (global batch and
      // GPU count fixed), so the step-time order stands for all of them.
    }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  if (json) {
    std::vector<PlanChoice> choices;
    for (const auto& r : results) choices.push_back(choice_of(r));
    if (shard.active() || !extras.shard.empty()) {
      // A part: the counts and the rows of each choice, each row's report as a string.
      report::JsonWriter w;
      w.begin_object();
      w.key("mfusim_part").value("plan");
      w.key("shard").value(static_cast<long long>(shard.k));
      w.key("of").value(static_cast<long long>(shard.n));
      w.key("rank_by").value(study::to_string(rank_by));
      w.key("top").value(std::max(top, 1));
      w.key("choices").begin_array();
      for (const auto& c : choices) {
        w.begin_object();
        w.key("hardware").value(c.hardware).key("gpus").value(c.gpus);
        for (const auto& [k, v] : {std::pair<const char*, std::size_t>{"considered", c.considered},
                                   {"invalid", c.invalid}, {"pruned", c.pruned}, {"skipped", c.skipped},
                                   {"simulated", c.simulated}, {"failed", c.failed}, {"fitting", c.fitting}})
          w.key(k).value(static_cast<long long>(v));
        w.key("failures").begin_object();
        for (const auto& [why, n] : c.failures) w.key(why).value(static_cast<long long>(n));
        w.end_object();
        w.key("searched").value(c.searched);
        w.key("rows").begin_array();
        for (const auto& row : c.rows) {
          w.begin_object();
          w.key("layout").value(row.layout).key("schedule").value(row.schedule).key("recompute").value(row.recompute);
          w.key("recompute_num_layers").value(row.recompute_num_layers);
          w.key("step_time_s").value(exact(row.step_time_s));
          w.key("time_s").value(exact(row.obj.time_s));
          w.key("gpus").value(exact(row.obj.gpus));
          w.key("cost").value(exact(row.obj.cost));
          w.key("margin_gib").value(exact(row.margin_gib));
          w.key("report").value(row.report);
          w.end_object();
        }
        w.end_array();
        w.end_object();
      }
      w.end_array();
      w.end_object();
      out << w.str() << "\n";
      return 0;
    }
    out << plan_json(choices, rank_by) << "\n";
    for (const auto& r : results)   // also where no point of a choice made it into the array
      for (const auto& [why, n] : r.failures)
        std::cerr << "mfusim plan: " << r.gpus << " x " << r.hardware << ": " << n << " point" << (n == 1 ? "" : "s")
                  << " failed to simulate: " << why << "\n";
    return 0;
  }

  std::vector<char> on_front;
  {
    std::vector<PlanChoice> heads;   // the best row of each choice is all the front needs
    for (const auto& r : results) {
      PlanChoice c;
      if (!r.ranked.empty()) c.rows.push_back(PlanRow{"", "", "", 0, 0, study::objectives(r.ranked.front().result), 0, ""});
      heads.push_back(std::move(c));
    }
    on_front = pareto_of(heads);
  }
  const bool days = loaded.base.training.tokens_to_train > 0;
  // Cost where any choice has a price (its scenario's, or its hardware profile's list price).
  bool priced = false;
  for (const auto& b : bases) priced = priced || b.cost.price_per_gpu_hour > 0;
  const bool cost = days && priced;
  // A run that does not finish (step/training_run.h) has neither days nor cost: "never".
  auto cost_cell = [&](const step::StepResult& x) {
    if (!x.run.sim.finishes) return std::string("never");
    return x.scenario.cost.price_per_gpu_hour > 0 ? f("%.2f", x.cost_usd / 1e6) : std::string("-");
  };
  auto days_cell = [&](const step::StepResult& x) {
    return x.run.sim.finishes ? f("%.1f", x.days_to_train) : std::string("never");
  };
  out << "mfusim plan: " << loaded.base.name << "\n";
  out << "  ranked by " << (rank_by == study::RankBy::step ? "step time"
                                  : rank_by == study::RankBy::days ? "time to train"
                                                                    : "cost to train")
            << "; searched " << results.size() << " choice" << (results.size() == 1 ? "" : "s") << " in "
            << f("%.1f", secs) << " s\n";
  if (!results.empty()) out << "  searched: " << results.front().searched << "\n";
  out << "  memory: a layout fits when its simulated peak (which holds the " << f("%.0f", step::kRuntimeReserveBytes / (1024.0 * 1024 * 1024))
      << " GiB runtime reserve)";
  if (headroom_gib > 0 || headroom_frac > 0)
    out << " plus the headroom (" << (headroom_frac > 0 ? f("%g%% of HBM", 100 * headroom_frac) : f("%g GiB", headroom_gib))
        << ")";
  out << " is within HBM; 'free GiB' is what is left\n";
  for (const auto& r : results) {
    out << "\n" << r.gpus << " x " << r.hardware << ": " << r.considered << " layouts considered, " << r.invalid
              << " break a shape rule, " << r.pruned << " pruned (cannot fit: memory lower bound), " << r.skipped
              << " skipped (cannot reach the top " << std::max(top, 1) << ": step-time lower bound), " << r.simulated
              << " simulated, " << r.fitting << " of them fit";
    if (r.failed) out << ", " << r.failed << " FAILED to simulate";
    out << " (" << f("%.1f", r.seconds) << " s)\n";
    for (const auto& [why, n] : r.failures) out << "  failed: " << n << " x " << why << "\n";
    if (r.ranked.empty()) {
      out << "  no layout fits in " << f("%.0f", loaded.base.hardware.hbm_bytes / (1024.0 * 1024 * 1024))
                << " GiB\n";
      continue;
    }
    // What the modern validation set says of the best layout's family (report/accuracy.h): the steps, days
    // and costs below are the simulated ones.
    out << report::accuracy_text(r.ranked.front().scenario);
    std::vector<std::vector<std::string>> rows = {{"#", "layout", "schedule", "recompute", "step", "tokens/s", "MFU",
                                                    "bubble", "exp. comm", "peak GiB", "free GiB"}};
    const bool fp8 = loaded.base.training.precision == hardware::Precision::fp8;   // MFU against the fp8 peak
    if (fp8) rows[0].push_back("MFU bf16");
    if (days) rows[0].push_back("days");
    if (cost) rows[0].push_back("cost $M");
    int i = 0;
    for (const auto& p : r.ranked) {
      const auto& x = p.result;
      const auto& b = x.breakdown;
      const double comm = b.tp_comm_exposed + b.pp_comm_exposed + b.dp_comm_exposed + b.ep_comm_exposed + b.cp_comm_exposed;
      rows.push_back({std::to_string(++i), study::layout_label(p.scenario), config::to_string(p.scenario.schedule.name),
                      config::to_string(p.scenario.features.recompute), report::format_seconds(x.step_time_s),
                      f("%.0f", x.tokens_per_s), f("%.1f%%", 100 * x.mfu), f("%.1f%%", 100 * x.bubble_fraction),
                      report::format_seconds(comm), f("%.1f", x.memory.peak_gib),
                      f("%.1f", x.memory.capacity_gib - x.memory.peak_gib)});
      if (fp8) rows.back().push_back(f("%.1f%%", 100 * report::mfu_bf16_peak(x)));
      if (days) rows.back().push_back(days_cell(x));
      if (cost) rows.back().push_back(cost_cell(x));
    }
    out << table(rows);
  }
  if (results.size() > 1) {
    // Purchase comparison: the best layout of each choice, ranked by the key.
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < results.size(); ++i) order.push_back(i);
    auto key = [&](std::size_t i) {
      return results[i].ranked.empty() ? 1e300 : study::rank_key(results[i].ranked.front().result, rank_by);
    };
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return key(a) < key(b); });
    out << "\nBest layout per choice (ranked by " << study::to_string(rank_by)
              << "; pareto: not beaten on time to train, GPUs and cost at once)\n";
    std::vector<std::vector<std::string>> rows = {{"#", "hardware", "gpus", "best layout", "step", "tokens/s", "MFU",
                                                    days ? "days" : "s/Mtok", cost ? "cost $M" : "GPU-h/Mtok", "pareto"}};
    int n = 0;
    for (std::size_t i : order) {
      const auto& r = results[i];
      if (r.ranked.empty()) {
        rows.push_back({"-", r.hardware, std::to_string(r.gpus), "nothing fits", "", "", "", "", "", ""});
        continue;
      }
      const auto& best = r.ranked.front();
      const auto& x = best.result;
      const auto o = study::objectives(x);
      rows.push_back({std::to_string(++n), r.hardware, std::to_string(r.gpus),
                      study::layout_label(best.scenario) + " " + config::to_string(best.scenario.schedule.name) + " " +
                          config::to_string(best.scenario.features.recompute),
                      report::format_seconds(x.step_time_s), f("%.0f", x.tokens_per_s), f("%.1f%%", 100 * x.mfu),
                      days ? days_cell(x) : f("%.3g", o.time_s * 1e6),
                      cost ? cost_cell(x) : f("%.3g", o.cost * 1e6 / 3600.0),
                      on_front[i] ? "yes" : ""});
    }
    out << table(rows);
  }
  return 0;
}

}  // namespace mfusim::tools
