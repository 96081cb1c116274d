// Modern published training runs against the simulator: every row of
// validation/modern/rows.csv, predicted vs published step time, with the
// summary per half (tuning / heldout) and per family.
//   build/validation/modern/validate_modern [--profile datasheet|calibrated|sustained|h200|both|all] [--markdown]
//   (h200: the H100 rows on the H200's file carried by the HBM ratio, as before run 54)
//                                           [--coarse] [--csv FILE] [--half tuning|heldout]
//                                           [--without fp8_params|activation_offload|fp8_recipes|sustained_gemm|row_recompute|
//                                                      sustained_attention|amax_reduction|row_amax]
//                                           [--since-release YY.MM]
// --since-release YY.MM: only the rows that ran NeMo YY.MM or a later release (modern.h container_family).
// --without fp8_params: every fp8 row with bf16 weights (the rows' fp8 weights off; modern.h).
// --without activation_offload: no row offloads activations (modern.h).
// --without row_recompute: no row recomputes activations (the Nemotron-4 340B rows' selective recompute off; modern.h).
// --without fp8_recipes: every fp8 row under delayed scaling (its stated current-scaling or MXFP8 recipe off; modern.h).
// --without sustained_gemm: the Blackwell rows' GEMMs without their ceiling at a training step's clock (modern.h).
// --without sustained_attention: the B200 rows' attention at an isolated call's rate (modern.h).
// --without amax_reduction: no delayed-scaling row all-reduces its amaxes (features.fp8_amax_reduction = none; modern.h).
// --without row_amax: every delayed-scaling row on Megatron-Core's default amax group, tp x dp x cp (modern.h).
// --coarse: the planner's per-op lowering (LowerOptions per_layer = false).
// --csv: one line per row and profile with the breakdown (for the diagnosis).
// --accuracy FILE: the per-family table `run` prints beside a step (report/accuracy.h), written as
//   report/accuracy_table.inc's entries (GPU x precision; needs --profile both and both halves, per-layer).
// Configuration and assumptions: validation/modern/modern.h; results:
// docs/validation-modern.md.
#include <cmath>
#include <cstdio>
#include <exception>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "io/output_file.h"
#include "validation/modern/modern.h"

using namespace mfusim;
namespace vm = mfusim::validation::modern;

namespace {

void print_summary_table(const std::vector<vm::ModernComparison>& all, bool markdown) {
  using Key = std::function<std::string(const vm::ModernRow&)>;
  const std::vector<std::pair<std::string, Key>> groupings = {
      {"all", [](const vm::ModernRow&) { return std::string("all rows"); }},
      {"precision", [](const vm::ModernRow& r) { return vm::precision_family(r); }},
      {"layout", [](const vm::ModernRow& r) { return vm::layout_family(r); }},
      {"gpu", [](const vm::ModernRow& r) { return r.gpu_type; }},
      {"gpu x precision", [](const vm::ModernRow& r) { return r.gpu_type + " " + r.precision; }},
      {"gpu x release", [](const vm::ModernRow& r) { return r.gpu_type + " " + vm::container_family(r); }},
  };
  for (const char* half : {"tuning", "heldout"}) {
    std::printf("\n%s%s half\n", markdown ? "#### " : "", half);
    if (markdown) {
      std::printf("\n| family | rows | not expressible | median abs error | max abs error | mean signed error |\n");
      std::printf("|---|---:|---:|---:|---:|---:|\n");
    } else {
      std::printf("%-22s %5s %6s %8s %8s %8s\n", "family", "rows", "n/e", "median", "max", "mean");
    }
    for (const auto& [gname, key] : groupings) {
      std::map<std::string, std::vector<vm::ModernComparison>> groups;
      for (const auto& c : all)
        if (c.row.half == half) groups[key(c.row)].push_back(c);
      for (const auto& [name, v] : groups) {
        const auto s = vm::summarize(v);
        if (markdown)
          std::printf("| %s | %zu | %zu | %.1f%% | %.1f%% | %+.1f%% |\n", name.c_str(), s.n, s.not_expressible,
                      100 * s.median_abs, 100 * s.max_abs, 100 * s.mean_signed);
        else
          std::printf("%-22s %5zu %6zu %7.1f%% %7.1f%% %+7.1f%%\n", name.c_str(), s.n, s.not_expressible,
                      100 * s.median_abs, 100 * s.max_abs, 100 * s.mean_signed);
      }
    }
  }
}

// report/accuracy_table.inc's entries for one profile: every GPU x precision family of the set.
std::string accuracy_entries(const std::vector<vm::ModernComparison>& all, vm::Profile profile) {
  std::string out;
  for (const auto& [key, halves] : vm::by_family_and_half(all)) {
    const auto t = vm::summarize(halves.count("tuning") ? halves.at("tuning") : std::vector<vm::ModernComparison>{});
    const auto h = vm::summarize(halves.count("heldout") ? halves.at("heldout") : std::vector<vm::ModernComparison>{});
    char line[300];
    std::snprintf(line, sizeof line, "    {\"%s\", \"%s\", \"%s\", %zu, %zu, %.5f, %.5f, %.5f, %.5f},\n", vm::to_string(profile),
                  key.first.c_str(), key.second.c_str(), t.n, h.n, t.mean_signed, h.mean_signed, h.median_abs, h.max_abs);
    out += line;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  bool markdown = false, coarse = false, without_fp8_params = false, without_offload = false, without_recipes = false,
       without_sustained = false, without_sustained_attention = false, without_row_recompute = false,
       without_amax = false, without_row_amax = false;
  std::string profile_arg = "both", csv_out, only_half, accuracy_out, since_release;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "validate_modern: error: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--markdown") markdown = true;
    else if (a == "--coarse") coarse = true;
    else if (a == "--profile") profile_arg = next();
    else if (a == "--csv") csv_out = next();
    else if (a == "--half") only_half = next();
    else if (a == "--since-release") since_release = next();
    else if (a == "--accuracy") accuracy_out = next();
    else if (a == "--without") {
      const std::string m = next();
      if (m == "fp8_params") {
        without_fp8_params = true;
      } else if (m == "row_recompute") {
        without_row_recompute = true;
      } else if (m == "activation_offload") {
        without_offload = true;
      } else if (m == "fp8_recipes") {
        without_recipes = true;
      } else if (m == "sustained_gemm") {
        without_sustained = true;
      } else if (m == "sustained_attention") {
        without_sustained_attention = true;
      } else if (m == "amax_reduction") {
        without_amax = true;
      } else if (m == "row_amax") {
        without_row_amax = true;
      } else {
        std::fprintf(stderr, "validate_modern: error: --without takes fp8_params, activation_offload, row_recompute, fp8_recipes, "
                             "sustained_gemm, sustained_attention, amax_reduction or row_amax, not '%s'\n",
                     m.c_str());
        return 2;
      }
    } else {
      std::fprintf(stderr, "validate_modern: error: unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  std::vector<vm::Profile> profiles;
  if (profile_arg == "datasheet" || profile_arg == "both") profiles.push_back(vm::Profile::datasheet);
  if (profile_arg == "calibrated" || profile_arg == "both") profiles.push_back(vm::Profile::calibrated);
  if (profile_arg == "sustained" || profile_arg == "all") profiles.push_back(vm::Profile::sustained);
  if (profile_arg == "h200") profiles.push_back(vm::Profile::h200);
  if (profile_arg == "all") profiles.insert(profiles.begin(), {vm::Profile::datasheet, vm::Profile::calibrated});
  if (profiles.empty()) {
    std::fprintf(stderr, "validate_modern: error: --profile must be datasheet, calibrated, sustained, h200, both or all\n");
    return 2;
  }
  if (!only_half.empty() && only_half != "tuning" && only_half != "heldout") {
    std::fprintf(stderr, "validate_modern: error: --half must be tuning or heldout\n");
    return 2;
  }
  if (!since_release.empty() && !vm::is_release(since_release)) {
    std::fprintf(stderr, "validate_modern: error: --since-release takes a NeMo release as YY.MM (e.g. 25.02), not '%s'\n",
                 since_release.c_str());
    return 2;
  }
  if (!accuracy_out.empty() &&
      (profile_arg != "both" || !only_half.empty() || !since_release.empty() || coarse || without_fp8_params || without_offload || without_recipes ||
       without_sustained || without_sustained_attention || without_row_recompute || without_amax ||
       without_row_amax)) {
    std::fprintf(stderr, "validate_modern: error: --accuracy is the rows as run: --profile both, both halves, "
                         "per-layer, nothing --without\n");
    return 2;
  }
  std::string accuracy = "// Generated by build/validation/validate_modern --profile both --accuracy FILE (per-layer lowering);\n"
                         "// {profile, gpu, precision, rows tuning, rows held-out, mean signed error tuning, held-out,\n"
                         "//  held-out median |error|, held-out max |error|} (report/accuracy.h).\n";
  try {
    vm::Inputs in;
    in.fp8_params = !without_fp8_params;
    in.activation_offload = !without_offload;
    in.row_recompute = !without_row_recompute;
    in.fp8_recipes = !without_recipes;
    in.sustained_gemm = !without_sustained;
    in.sustained_attention = !without_sustained_attention;
    in.amax_reduction = !without_amax;
    in.row_amax = !without_row_amax;
    const auto rows = vm::read_modern(vm::rows_path(), vm::split_path());
    std::FILE* csv = nullptr;
    if (!csv_out.empty()) {
      csv = std::fopen(csv_out.c_str(), "w");
      if (!csv) {
        std::fprintf(stderr, "validate_modern: error: cannot write %s\n", csv_out.c_str());
        return 2;
      }
      std::fprintf(csv,
                   "id,half,profile,gpu_type,model,precision,fp8_recipe,gpus,layers,seq,tp,pp,cp,vpp,dp,mbs,gbs,"
                   "microbatches,expressible,published_step_s,predicted_step_s,error,forward,backward,recompute,"
                   "optimizer,tp_comm_exposed,pp_comm_exposed,dp_comm_exposed,cp_comm_exposed,bubble,dataloader,gc,"
                   "launch_overhead,peak_gib,fits,calibrated\n");
    }
    for (const auto profile : profiles) {
      std::printf("%s== profile: %s%s ==\n\n", markdown ? "### " : "", vm::to_string(profile),
                  profile == vm::Profile::calibrated
                      ? " (H100 rows: hardware/calibration/h100.toml, measured on an H100, run 54; B200 rows' GEMMs and attention: "
                        "hardware/calibration/b200-xla.toml; GB200/GB300 rows' attention: gb200-cudnn.toml / gb300-cudnn.toml, "
                        "their GEMMs the datasheet; Blackwell memory-bound kernels: the H200's fits carried by published norm kernels)"
                  : profile == vm::Profile::sustained
                      ? " (H100 rows: hardware/calibration/h200-sustained.toml, GEMMs at the power-capped clock; "
                        "B200 rows' GEMMs and attention: hardware/calibration/b200-xla.toml; GB200/GB300 rows' attention: "
                        "gb200-cudnn.toml / gb300-cudnn.toml, their GEMMs the datasheet; Blackwell memory-bound kernels: the H200's fits "
                        "carried by published norm kernels)"
                  : profile == vm::Profile::h200
                      ? " (as calibrated, with the H100 rows on hardware/calibration/h200.toml carried by the HBM datasheet "
                        "ratio, as before run 54)"
                      : " (no calibration)");
      if (markdown) {
        std::printf("| row | half | published step s | predicted step s | error | configuration simulated |\n");
        std::printf("|---|---|---:|---:|---:|---|\n");
      } else {
        std::printf("%-40s %-7s %9s %9s %8s  %s\n", "row", "half", "pub s", "pred s", "error", "configuration");
      }
      std::vector<vm::ModernComparison> all;
      for (const auto& r : rows) {
        if (!only_half.empty() && r.half != only_half) continue;
        if (!since_release.empty() && !vm::release_at_least(r, since_release)) continue;
        const auto c = vm::compare(r, profile, in, !coarse);
        all.push_back(c);
        if (!c.expressible) {
          if (markdown) std::printf("| %s | %s | | | | not expressible: %s |\n", r.id.c_str(), r.half.c_str(), c.reason.c_str());
          else std::printf("%-40s %-7s %9s %9s %8s  not expressible: %s\n", r.id.c_str(), r.half.c_str(), "-", "-", "-", c.reason.c_str());
        } else if (markdown) {
          std::printf("| %s | %s | %.3f | %.3f | %+.1f%% | %s |\n", r.id.c_str(), r.half.c_str(), c.published_step_s,
                      c.predicted_step_s, 100 * c.error, c.reason.c_str());
        } else {
          std::printf("%-40s %-7s %9.3f %9.3f %+7.1f%%  %s\n", r.id.c_str(), r.half.c_str(), c.published_step_s,
                      c.predicted_step_s, 100 * c.error, c.reason.c_str());
        }
        std::fflush(stdout);
        if (csv) {
          const auto& b = c.breakdown;
          std::fprintf(csv,
                       "%s,%s,%s,%s,%s,%s,\"%s\",%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,"
                       "%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.4g,%d,%d\n",
                       r.id.c_str(), r.half.c_str(), vm::to_string(profile), r.gpu_type.c_str(), r.model_file.c_str(),
                       r.precision.c_str(), r.fp8_recipe.c_str(), r.gpus, r.layers, r.seq, r.tp, r.pp, r.cp, r.vpp,
                       r.dp, r.mbs, r.gbs, c.microbatches, c.expressible ? 1 : 0, c.published_step_s,
                       c.predicted_step_s, c.error, b.forward, b.backward, b.recompute, b.optimizer, b.tp_comm_exposed,
                       b.pp_comm_exposed, b.dp_comm_exposed, b.cp_comm_exposed, b.bubble, b.dataloader, b.gc,
                       b.launch_overhead, c.peak_gib, c.fits ? 1 : 0, c.calibrated ? 1 : 0);
        }
      }
      print_summary_table(all, markdown);
      std::printf("\n");
      if (profile != vm::Profile::sustained) accuracy += accuracy_entries(all, profile);
    }
    if (csv) std::fclose(csv);
    if (!accuracy_out.empty()) io::write_file(accuracy_out, accuracy, "the accuracy table");
  } catch (const config::ConfigError& e) {
    for (const auto& d : e.diagnostics()) std::fprintf(stderr, "%s\n", d.str().c_str());
    return 2;
  } catch (const io::OutputError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "validate_modern: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
