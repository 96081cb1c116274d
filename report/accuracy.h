#pragma once
// What the modern validation set says of a scenario's family (docs/validation-modern.md): the published
// Megatron/NeMo training steps on the same GPU, in the same precision, simulated with the same kind of
// calibration, and how far the simulated steps fell from them. A disclosure printed beside the step
// (`run`'s "accuracy" line, the JSON's "validated_accuracy"), never applied to it.
#include <string>
#include <vector>

#include "config/scenario.h"

namespace mfusim::report {

struct FamilyAccuracy {
  const char* profile;     // validate_modern's profile: "datasheet" (no calibration) or "calibrated"
  const char* gpu;         // rows.csv gpu_type: "H100", "B200", "GB200", "GB300"
  const char* precision;   // "bf16" or "fp8"
  int rows_tuning, rows_heldout;        // rows simulated in each half
  double mean_tuning, mean_heldout;     // mean signed error of the step time (negative: simulated shorter)
  double median_abs_heldout, max_abs_heldout;
};

// The shipped table, as `validate_modern --accuracy` prints it (tests/validation/test_modern.cpp checks
// that it still is what the rows give).
const std::vector<FamilyAccuracy>& modern_accuracy();

// The table's entry of one family ("calibrated", "H100", "bf16"), or nullptr.
const FamilyAccuracy* find_accuracy(const std::string& profile, const std::string& gpu, const std::string& precision);

// The entry of a scenario's family, or nullptr: a dense model on more than one GPU under Megatron's ZeRO 0/1
// (not sharded or offloaded), not a schedule lab, its hardware the shipped profile of one of the set's GPUs
// (hardware/h100-sxm, b200, gb200-nvl72, gb300-nvl72) without --set hardware.*, its calibration the shipped
// one the set ran with (none: "datasheet"; h100.toml on the H100, b200-xla.toml on the B200, gb200-cudnn.toml on
// the GB200, gb300-cudnn.toml on the GB300: "calibrated").
const FamilyAccuracy* family_accuracy(const config::Scenario&);

// The family's mean signed error over both halves' rows.
double mean_error(const FamilyAccuracy&);

// A published fp8 MoE training run that a shipped scenario writes down (docs/moe-dualpipe.md): its
// published tokens/s per GPU (or one derived from published figures: `label` says how) and the
// scenario's simulated one as shipped (tests/report/test_accuracy.cpp simulates each again and checks it).
struct MoeRun {
  const char* scenario;   // scenarios/<file>
  const char* hardware;   // its hardware profile (hardware/<name>.toml)
  const char* label;      // what ran and where the figure comes from, for the accuracy line
  double published;       // tokens/s per GPU
  double simulated;       // the shipped scenario's tokens/s per GPU
};
const std::vector<MoeRun>& moe_runs();
// A run's step-time error: published / simulated tokens/s - 1 (negative: the simulated step is shorter).
double step_error(const MoeRun&);
// Whether the MoE runs speak for a scenario: an MoE model in fp8 on more than one GPU under ZeRO 0/1, not a
// schedule lab, on the shipped hardware profile of one of the runs' GPUs with its shipped calibration (as
// the runs were simulated). Not for bf16 (no run), other GPUs or a datasheet run.
bool moe_accuracy_applies(const config::Scenario&);
// The runs' mean step-time error.
double moe_mean_error();

// "  accuracy  ..." (one line, with its newline) for the text report: the dense family's, or the MoE runs'; ""
// without either.
std::string accuracy_text(const config::Scenario&);

}  // namespace mfusim::report
