#include "report/accuracy.h"

#include <cmath>
#include <cstdio>
#include <filesystem>

namespace mfusim::report {

const std::vector<FamilyAccuracy>& modern_accuracy() {
  // Generated: build/validation/validate_modern --profile both --accuracy (per-layer lowering, both halves).
  static const std::vector<FamilyAccuracy> table = {
#include "report/accuracy_table.inc"
  };
  return table;
}

const FamilyAccuracy* family_accuracy(const config::Scenario& s) {
  // The set's rows: dense models on 8 to 16,384 GPUs, Megatron's data parallelism (ZeRO-1) but for seven
  // Megatron-FSDP rows; an MoE model or a PyTorch FSDP step (validate_fsdp's set, docs/fsdp.md) is not theirs.
  // A profile changed by --set hardware.* is not the GPU the rows ran on.
  if (s.gpus <= 1 || s.model.is_moe() || s.parallel.zero_stage > 1 || s.hardware_overlaid) return nullptr;
  const char* gpu = s.hardware_ref == "h100-sxm"      ? "H100"
                    : s.hardware_ref == "b200"        ? "B200"
                    : s.hardware_ref == "gb200-nvl72" ? "GB200"
                    : s.hardware_ref == "gb300-nvl72" ? "GB300"
                                                      : nullptr;
  if (!gpu) return nullptr;
  std::string profile;
  if (!s.calibration) {
    profile = "datasheet";
  } else {
    const std::string file = std::filesystem::path(s.calibration_path).filename().string();
    if ((file == "h200.toml" && std::string(gpu) == "H100") || (file == "b200-xla.toml" && std::string(gpu) == "B200"))
      profile = "calibrated";
    else
      return nullptr;
  }
  const std::string precision = config::to_string(s.training.precision);
  for (const FamilyAccuracy& f : modern_accuracy())
    if (profile == f.profile && std::string(gpu) == f.gpu && precision == f.precision) return &f;
  return nullptr;
}

std::string accuracy_text(const config::Scenario& s) {
  const FamilyAccuracy* f = family_accuracy(s);
  if (!f) return "";
  char line[400];
  const double mean = 0.5 * (f->mean_tuning + f->mean_heldout);
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
