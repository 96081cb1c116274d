#include "report/accuracy.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "hardware/calibration.h"
#include "models/memory.h"

namespace mfusim::report {

const std::vector<FamilyAccuracy>& modern_accuracy() {
  // Generated: build/validation/validate_modern --profile both --accuracy (per-layer lowering, both halves).
  static const std::vector<FamilyAccuracy> table = {
#include "report/accuracy_table.inc"
  };
  return table;
}

const FamilyAccuracy* find_accuracy(const std::string& profile, const std::string& gpu, const std::string& precision) {
  for (const FamilyAccuracy& f : modern_accuracy())
    if (profile == f.profile && gpu == f.gpu && precision == f.precision) return &f;
  return nullptr;
}

const FamilyAccuracy* family_accuracy(const config::Scenario& s) {
  // The set's rows: dense models on 8 to 16,384 GPUs under Megatron (ZeRO 0/1; seven Megatron-FSDP rows
  // aside), on the shipped hardware profiles. Not theirs: an MoE model, a sharded or offloaded step (ZeRO-2/3,
  // HSDP, offload: validate_fsdp's set, docs/fsdp.md), a schedule-lab scenario (its costs are typed in), a
  // profile of the user's or one changed by --set hardware.* (not the GPU the rows ran on).
  if (s.gpus <= 1 || s.model.is_moe() || models::zero_sharded(s) || s.schedule.costs.has_value() || !s.hardware_as_shipped)
    return nullptr;
  const char* gpu = s.hardware_ref == "h100-sxm"      ? "H100"
                    : s.hardware_ref == "b200"        ? "B200"
                    : s.hardware_ref == "gb200-nvl72" ? "GB200"
                    : s.hardware_ref == "gb300-nvl72" ? "GB300"
                                                      : nullptr;
  if (!gpu) return nullptr;
  // The calibration the rows ran with: none, or the shipped file of their profile (a user's file, even
  // of the same name, is not).
  const char* profile = nullptr;
  if (!s.calibration) profile = "datasheet";
  else if (!s.calibration_shipped.empty() && s.calibration_shipped == hardware::default_calibration_file(s.hardware))
    profile = "calibrated";   // the shipped file of the GPU, as validate_modern's calibrated profile runs it
  return profile ? find_accuracy(profile, gpu, config::to_string(s.training.precision)) : nullptr;
}

double mean_error(const FamilyAccuracy& f) {
  const int n = f.rows_tuning + f.rows_heldout;
  return n > 0 ? (f.mean_tuning * f.rows_tuning + f.mean_heldout * f.rows_heldout) / n : 0.0;
}

const std::vector<MoeRun>& moe_runs() {
  // docs/moe-dualpipe.md: "Against the report", "Megatron's combined 1F1B and Megatron-Bridge's H100 run",
  // "Mixtral with EP inside a node".
  static const std::vector<MoeRun> runs = {
      // the report's 180K H800 GPU-hours per trillion tokens (a whole pre-training's average)
      {"2048xh800_deepseek_v3.toml", "h800-sxm", "DeepSeek-V3 on 2,048 H800, from its report's GPU-hours", 1543.0, 1817.61},
      // Megatron-Bridge's table: 1,297 tokens/s/GPU at per-tensor current scaling, scaled to the blockwise
      // recipe the scenario runs by the table's model TFLOP/s (x 330 / 338)
      {"1024xh100_deepseek_v3_megatron.toml", "h100-sxm", "DeepSeek-V3 on 1,024 H100, Megatron-Bridge's step scaled to its blockwise recipe", 1266.3, 1635.66},
      // NeMo 25.04 performance summary
      {"64xgb200_mixtral_8x7b.toml", "gb200-nvl72", "Mixtral 8x7B on 64 GB200, NeMo's", 19275.0, 23755.4},
  };
  return runs;
}

double step_error(const MoeRun& r) { return r.published / r.simulated - 1.0; }

bool moe_accuracy_applies(const config::Scenario& s) {
  if (s.gpus <= 1 || !s.model.is_moe() || models::zero_sharded(s) || s.schedule.costs.has_value() || !s.hardware_as_shipped ||
      s.training.precision != hardware::Precision::fp8)
    return false;
  const bool runs_gpu = std::any_of(moe_runs().begin(), moe_runs().end(),
                                    [&](const MoeRun& r) { return s.hardware_ref == r.hardware; });
  return runs_gpu && s.calibration && !s.calibration_shipped.empty() &&
         s.calibration_shipped == hardware::default_calibration_file(s.hardware);
}

double moe_mean_error() {
  double mean = 0;
  for (const MoeRun& r : moe_runs()) mean += step_error(r) / static_cast<double>(moe_runs().size());
  return mean;
}

namespace {
std::string moe_accuracy_text() {
  const double mean = moe_mean_error();
  std::string line = "  accuracy  against " + std::to_string(moe_runs().size()) +
                     " published fp8 MoE runs (each with its GPU's shipped calibration): simulated steps ";
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.0f%% %s on average (", std::fabs(100 * mean), mean < 0 ? "short" : "long");
  line += buf;
  for (std::size_t i = 0; i < moe_runs().size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s%+.0f%% ", i ? "; " : "", 100 * step_error(moe_runs()[i]));
    line += buf;
    line += moe_runs()[i].label;
  }
  return line + "; docs/moe-dualpipe.md)\n";
}
}  // namespace

std::string accuracy_text(const config::Scenario& s) {
  if (moe_accuracy_applies(s)) return moe_accuracy_text();
  const FamilyAccuracy* f = family_accuracy(s);
  if (!f) return "";
  char line[400];
  const double mean = mean_error(*f);
  std::snprintf(line, sizeof line,
                "  accuracy  against %d published %s %s Megatron/NeMo steps (%s): simulated steps %.0f%% %s on average "
                "(tuning half %+.1f%%, held-out %+.1f%%; held-out median |error| %.1f%%, max %.1f%%; docs/validation-modern.md)\n",
                f->rows_tuning + f->rows_heldout, f->gpu, f->precision,
                std::string(f->profile) == "datasheet" ? "no calibration" : "this calibration", std::fabs(100 * mean),
                mean < 0 ? "short" : "long", 100 * f->mean_tuning, 100 * f->mean_heldout, 100 * f->median_abs_heldout,
                100 * f->max_abs_heldout);
  return line;
}

}  // namespace mfusim::report
