// Published FSDP runs against the simulator: every row of validation/fsdp/rows.csv
// as a scenario (validation/fsdp/fsdp_rows.h), tokens/s per GPU and peak memory
// vs published, with the median |error| per half of validation/fsdp/split.csv.
//   build/validation/validate_fsdp [--half tuning|heldout|all] [--markdown] [--without MECHANISM]...
//   build/validation/validate_fsdp --report ROW_ID [--without MECHANISM]...   (one row's full simulated report)
// Results and the mapping: docs/fsdp.md.
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "report/text.h"
#include "validation/fsdp/fsdp_rows.h"

using namespace mfusim;

int main(int argc, char** argv) {
  std::string half = "all";
  bool markdown = false;
  std::string report_row;
  validation::fsdp::Mechanisms mech;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--markdown") markdown = true;
    else if (a == "--half" && i + 1 < argc) half = argv[++i];
    else if (a == "--report" && i + 1 < argc) report_row = argv[++i];
    else if (a == "--without" && i + 1 < argc) {
      const std::string m = argv[++i];
      if (m == "calibrated") mech.calibrated = false;
      else if (m == "framework_ac") mech.framework_ac = false;
      else if (m == "op_sac") mech.op_sac = false;
      else if (m == "fsdp2_copies") mech.fsdp2_copies = false;
      else if (m == "torch_loss") mech.torch_loss = false;
      else if (m == "compiled_loss") mech.compiled_loss = false;
      else if (m == "eager_host") mech.eager_host = false;
      else if (m == "torchtitan_block") mech.torchtitan_block = false;
      else if (m == "reserved_memory") mech.reserved_memory = false;
      else if (m == "sdpa_fa2") mech.sdpa_fa2 = false;
      else if (m == "power_limit") mech.power_limit = false;
      else if (m == "stated_network") mech.stated_network = false;
      else if (m == "triton_at_fa2") mech.triton_at_fa2 = false;
      else if (m == "triton_measured") mech.triton_measured = false;
      else if (m == "stated_reduce_dtype") mech.stated_reduce_dtype = false;
      else {
        std::fprintf(stderr, "validate_fsdp: error: unknown mechanism '%s' (--without calibrated|framework_ac|op_sac|fsdp2_copies|torch_loss|compiled_loss|eager_host|torchtitan_block|reserved_memory|sdpa_fa2|power_limit|stated_network|triton_at_fa2|triton_measured|stated_reduce_dtype)\n", m.c_str());
        return 2;
      }
    }
    else {
      std::fprintf(stderr, "validate_fsdp: error: unknown argument '%s' (--half tuning|heldout|all, --markdown, --report ROW_ID, --without MECHANISM)\n", a.c_str());
      return 2;
    }
  }
  if (half != "all" && half != "tuning" && half != "heldout") {
    std::fprintf(stderr, "validate_fsdp: error: --half must be tuning, heldout or all (got '%s')\n", half.c_str());
    return 2;
  }
  try {
    const auto rows = validation::fsdp::read_rows(validation::source_path("validation/fsdp/rows.csv"),
                                                  validation::source_path("validation/fsdp/split.csv"));
    if (!report_row.empty()) {
      for (const auto& r : rows) {
        if (r.at("id") != report_row) continue;
        const auto s = validation::fsdp::row_scenario(r, mech);
        const auto diags = config::validate(s);
        if (!diags.empty()) throw config::ConfigError(diags);
        const auto res = step::simulate(s);
        std::printf("%s (%s half): published %g tokens/s/GPU\n\n%s", report_row.c_str(), r.half.c_str(),
                    r.real("tokens_per_s_per_gpu"), report::text_report(res).c_str());
        return 0;
      }
      std::fprintf(stderr, "validate_fsdp: error: no row '%s' in validation/fsdp/rows.csv\n", report_row.c_str());
      return 2;
    }
    std::map<std::string, std::vector<double>> tps, mem, signed_tps;
    std::map<std::string, std::map<std::string, std::vector<double>>> by_source;   // half -> source -> |error|
    std::map<std::string, int> skipped;
    if (markdown) {
      std::printf("| row | half | tokens/s/GPU published | simulated | error | peak GiB published | simulated | error | configuration |\n");
      std::printf("|---|---|---:|---:|---:|---:|---:|---:|---|\n");
    } else {
      std::printf("%-28s %-8s %9s %9s %8s %7s %7s %8s  %s\n", "row", "half", "tps pub", "tps sim", "error", "mem pub", "mem sim",
                  "error", "configuration");
    }
    for (const auto& r : rows) {
      if (half != "all" && r.half != half) continue;
      const auto c = validation::fsdp::compare(r, mech);
      if (!c.expressible) {
        ++skipped[c.half];
        if (markdown) std::printf("| %s | %s | %g | | | | | | %s |\n", c.id.c_str(), c.half.c_str(), c.published_tps, c.note.c_str());
        else std::printf("%-28s %-8s %9g %9s %8s %7s %7s %8s  %s\n", c.id.c_str(), c.half.c_str(), c.published_tps, "-", "-", "-", "-", "-", c.note.c_str());
        continue;
      }
      tps[c.half].push_back(std::fabs(c.tps_error));
      signed_tps[c.half].push_back(c.tps_error);
      const std::string src = c.id.rfind("TT", 0) == 0 ? "torchtitan" : c.id.rfind("LF", 0) == 0 ? "llm-foundry" : "fms-fsdp";
      by_source[c.half][src].push_back(std::fabs(c.tps_error));
      if (c.published_mem > 0) mem[c.half].push_back(std::fabs(c.mem_error));
      char memtxt[64] = "";
      if (c.published_mem > 0) std::snprintf(memtxt, sizeof memtxt, "%+.1f%%", 100 * c.mem_error);
      if (markdown)
        std::printf("| %s | %s | %g | %.0f | %+.1f%% | %s | %.1f | %s | %s |\n", c.id.c_str(), c.half.c_str(), c.published_tps,
                    c.predicted_tps, 100 * c.tps_error, c.published_mem > 0 ? std::to_string(c.published_mem).substr(0, 5).c_str() : "",
                    c.predicted_mem, memtxt, c.note.c_str());
      else
        std::printf("%-28s %-8s %9g %9.0f %+7.1f%% %7s %7.1f %8s  %s\n", c.id.c_str(), c.half.c_str(), c.published_tps,
                    c.predicted_tps, 100 * c.tps_error, c.published_mem > 0 ? std::to_string(c.published_mem).substr(0, 5).c_str() : "-",
                    c.predicted_mem, memtxt, c.note.c_str());
      std::fflush(stdout);
    }
    std::printf("\n");
    for (const auto& [h, v] : tps) {
      double mean = 0;
      for (double x : signed_tps[h]) mean += x / static_cast<double>(signed_tps[h].size());
      std::printf("%s: tokens/s per GPU mean signed error %+.1f%%; median |error| by source:", h.c_str(), 100 * mean);
      for (const auto& [src, e] : by_source[h]) std::printf(" %s %.1f%% (%zu)", src.c_str(), 100 * validation::median(e), e.size());
      std::printf("\n");
    }
    for (const auto& [h, v] : tps)
      std::printf("%s: %zu rows simulated (%d not expressible): tokens/s per GPU median |error| %.1f%%; peak memory median |error| %.1f%% over %zu rows\n",
                  h.c_str(), v.size(), skipped[h], 100 * validation::median(v), 100 * validation::median(mem[h]), mem[h].size());
  } catch (const config::ConfigError& e) {
    for (const auto& d : e.diagnostics()) std::fprintf(stderr, "%s\n", d.str().c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "validate_fsdp: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
