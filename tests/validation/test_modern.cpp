// Modern published runs (validation/modern/rows.csv, split.csv) through the
// same code as validate_modern (validation/modern/modern.h): the summary per
// half and profile is printed, and must not get worse than the values of the
// commit that introduced this test (docs/validation-modern.md):
//
//   profile     half     simulated  median |err|  max |err|  mean signed
//   datasheet   tuning   75         33.4%         65.5%      -33.9%
//   datasheet   heldout  72         29.2%         64.0%      -30.9%
//   calibrated  tuning   75         30.0%         70.3%      -29.2%
//   calibrated  heldout  72         26.8%         68.7%      -27.8%
//
// The guard is one-sided (a mechanism that improves the numbers passes; one
// that makes them worse fails): median within +1.0 point, max within +2.0
// points, and no row that is expressible today becomes inexpressible. When a
// mechanism improves the numbers, lower the bounds here to the new values.
// The simulation is the per-layer lowering, as the executable (the coarse
// per-op lowering differs by up to 21% on some rows, see the doc).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "models/rank_shape.h"
#include "report/accuracy.h"
#include "validation/modern/modern.h"

using namespace mfusim;
namespace vm = mfusim::validation::modern;

namespace {

const std::vector<vm::ModernRow>& rows() {
  static const auto r = vm::read_modern(vm::rows_path(), vm::split_path());
  return r;
}

vm::Inputs& inputs() {
  static vm::Inputs in;
  return in;
}

// All rows of one profile, simulated once per test run.
const std::vector<vm::ModernComparison>& results(vm::Profile p) {
  static std::map<vm::Profile, std::vector<vm::ModernComparison>> cache;
  auto it = cache.find(p);
  if (it == cache.end()) {
    std::vector<vm::ModernComparison> v;
    for (const auto& r : rows()) v.push_back(vm::compare(r, p, inputs()));
    it = cache.emplace(p, std::move(v)).first;
  }
  return it->second;
}

vm::Summary half_summary(vm::Profile p, const std::string& half) {
  std::vector<vm::ModernComparison> v;
  for (const auto& c : results(p))
    if (c.row.half == half) v.push_back(c);
  return vm::summarize(v);
}

struct Bound {
  vm::Profile profile;
  const char* half;
  std::size_t simulated;
  double median, max;
};

}  // namespace

TEST_CASE("modern: the set and its split are complete (157 rows, 78 tuning / 79 heldout)") {
  REQUIRE(rows().size() == 157);
  std::size_t tuning = 0, heldout = 0;
  for (const auto& r : rows()) {
    if (r.half == "tuning") ++tuning;
    else if (r.half == "heldout") ++heldout;
    CHECK(r.tp * r.pp * r.cp * (r.dp > 0 ? r.dp : 1) == r.gpus);
  }
  CHECK(tuning == 78);
  CHECK(heldout == 79);
}

TEST_CASE("modern: Megatron's FLOP formula reproduces the NeMo 24.07 rows' tokens/s -> model TFLOP/s") {
  // The long-sequence rows publish model TFLOP/s only; they are turned into a
  // step time with this formula, so it must match the rows that state both.
  int checked = 0;
  for (const auto& r : rows()) {
    if (r.id.rfind("NEMO2407-", 0) != 0 || r.tokens_per_s_per_gpu <= 0 || r.model_tflops_per_gpu <= 0) continue;
    const double per_token = vm::megatron_flops_per_sequence(inputs().model(r.model_file), r.seq) / r.seq;
    CAPTURE(r.id);
    CHECK(per_token * r.tokens_per_s_per_gpu * 1e-12 == doctest::Approx(r.model_tflops_per_gpu).epsilon(0.03));
    ++checked;
  }
  CHECK(checked == 12);
}

TEST_CASE("modern: rows that cannot be expressed are listed with their reason, not dropped") {
  std::size_t fsdp = 0, meta = 0;
  for (const auto& c : results(vm::Profile::datasheet)) {
    if (c.row.fsdp > 0) {
      // Megatron-FSDP rows run as ZeRO-3 over their sharding group (modern.h row_scenario).
      CAPTURE(c.row.id);
      CHECK(c.expressible);
      CHECK(c.reason.find("zero3(shard " + std::to_string(c.row.fsdp) + ")") != std::string::npos);
      ++fsdp;
    }
    if (c.expressible) continue;
    CHECK_FALSE(c.reason.empty());
    if (c.reason.find("Meta's") != std::string::npos) ++meta;
  }
  CHECK(fsdp == 7);
  CHECK(meta == 3);
}

TEST_CASE("modern: accuracy per half does not regress (per-layer lowering, both profiles)") {
  // Simulated rows: 78 / 76 since the Megatron-FSDP rows run as ZeRO-3 (3 tuning, 4 held-out).
  const Bound bounds[] = {
      {vm::Profile::datasheet, "tuning", 78, 0.334, 0.655},
      {vm::Profile::datasheet, "heldout", 76, 0.292, 0.640},
      // The NeMo rows' bf16 gradient reduction (sourced, modern.h) halves their DP traffic and so
      // its interference: medians 14.0 -> 14.5% (tuning), 15.0 -> 16.0% (held-out).
      // Compute at the pace of the slowest of the ranks it waits for every micro-batch (run 40's measured
      // wander of the power-capped clock, the calibrations' [slowest_of_n]): calibrated 13.5 -> 12.3% / 42.1 ->
      // 39.9% (tuning), 14.8 -> 12.7% / 39.8 -> 37.8% (held-out, printed once after); sustained 15.9 -> 15.2%,
      // 15.5 -> 13.5%. Bounds lowered to the new values.
      // The rows whose launch turned cuDNN attention off on FlashAttention-2 (modern.h cudnn_attention_off:
      // dgxc-benchmarking's GPT-3 175B and Nemotron-4 340B scripts, the 24.03.01 launcher's default): calibrated
      // 11.2 -> 9.9% / 39.3 -> 32.7% (tuning), 12.0 -> 9.9% / 37.2 -> 32.6% (held-out, printed once after);
      // sustained 13.7 -> 12.6%, 12.7 -> 10.9%. Then the Nemotron conventions (no change at 0.1%) and the
      // NeMo 24.07 summary's rows on their container's launcher default (FlashAttention-2): calibrated 9.5% /
      // 9.7% medians (held-out printed once after), sustained 11.7% / 10.1%; after the review's mends (the 24.07
      // GPT-3 175B rows back on cuDNN, see modern.h) 9.5% / 9.8%, sustained 11.7% / 10.3%. Bounds lowered to the new values.
      {vm::Profile::calibrated, "tuning", 78, 0.095, 0.327},
      {vm::Profile::calibrated, "heldout", 76, 0.098, 0.326},
      {vm::Profile::sustained, "tuning", 78, 0.117, 0.327},
      {vm::Profile::sustained, "heldout", 76, 0.103, 0.326},
  };
  for (const auto& b : bounds) {
    const auto s = half_summary(b.profile, b.half);
    char line[200];
    std::snprintf(line, sizeof line, "%-10s %-7s simulated %zu, not expressible %zu: median |error| %.1f%%, max %.1f%%, mean %+.1f%%",
                  vm::to_string(b.profile), b.half, s.n, s.not_expressible, 100 * s.median_abs, 100 * s.max_abs,
                  100 * s.mean_signed);
    MESSAGE(line);
    CAPTURE(line);
    CHECK(s.n >= b.simulated);
    CHECK(s.median_abs <= b.median + 0.010);
    CHECK(s.max_abs <= b.max + 0.020);
  }
}

TEST_CASE("modern: the clock of the kernel mix (h200-sustained.toml) leaves the H100 rows near the shipped fit") {
  // h200-sustained.toml: GEMMs measured at the power-capped clock of GEMMs alone (run 16) and the
  // measured speed-up as the GEMM share of the sequence falls (run 17). A Megatron layer's GEMM duty
  // is 0.6-0.8, where run 17's GEMM runs 4-8% faster than alone: the two cancel to within a few
  // percent of the H200's burst-state fit, so the clock state does not explain the rows' gap. Both files are the
  // H200's (the calibrated profile's H100 rows run on the H100's own file since run 54; the h200 profile keeps
  // them on h200.toml, so this compares two clock states of one GPU).
  const auto& cal = results(vm::Profile::h200);
  const auto& sus = results(vm::Profile::sustained);
  REQUIRE(cal.size() == sus.size());
  int bf16 = 0;
  double bf16_sum = 0;
  for (std::size_t i = 0; i < cal.size(); ++i) {
    if (!cal[i].expressible || cal[i].row.gpu_type != "H100") continue;
    CAPTURE(cal[i].row.id);
    const double r = sus[i].predicted_step_s / cal[i].predicted_step_s;
    CHECK(r > 0.93);
    CHECK(r < 1.03);
    if (cal[i].row.precision == "bf16") { bf16_sum += r; ++bf16; }
  }
  REQUIRE(bf16 >= 30);
  CHECK(bf16_sum / bf16 == doctest::Approx(1.0).epsilon(0.02));
}

TEST_CASE("modern: every simulated row gives a finite positive step time") {
  for (const auto p : {vm::Profile::datasheet, vm::Profile::calibrated, vm::Profile::sustained})
    for (const auto& c : results(p)) {
      if (!c.expressible) continue;
      CAPTURE(c.row.id);
      CHECK(std::isfinite(c.predicted_step_s));
      CHECK(c.predicted_step_s > 0);
      CHECK(c.published_step_s > 0);
    }
}

TEST_CASE("modern: the accuracy `run` prints for a family is what the rows give today (report/accuracy_table.inc)") {
  // Every GPU x precision family of the datasheet and calibrated profiles, both halves, as
  // `validate_modern --profile both --accuracy report/accuracy_table.inc` writes it. A mechanism that moves
  // the rows fails here until the table is regenerated with that command: the disclosure never goes stale.
  std::size_t families = 0;
  for (const auto p : {vm::Profile::datasheet, vm::Profile::calibrated}) {
    for (const auto& [key, halves] : vm::by_family_and_half(results(p))) {
      CAPTURE(vm::to_string(p));
      CAPTURE(key.first);
      CAPTURE(key.second);
      const report::FamilyAccuracy* f = report::find_accuracy(vm::to_string(p), key.first, key.second);
      REQUIRE(f);
      const auto t = vm::summarize(halves.at("tuning")), h = vm::summarize(halves.at("heldout"));
      CHECK(static_cast<std::size_t>(f->rows_tuning) == t.n);
      CHECK(static_cast<std::size_t>(f->rows_heldout) == h.n);
      CHECK(std::fabs(f->mean_tuning - t.mean_signed) < 1e-5);
      CHECK(std::fabs(f->mean_heldout - h.mean_signed) < 1e-5);
      CHECK(std::fabs(f->median_abs_heldout - h.median_abs) < 1e-5);
      CHECK(std::fabs(f->max_abs_heldout - h.max_abs) < 1e-5);
      ++families;
    }
  }
  CHECK(report::modern_accuracy().size() == families);
}

TEST_CASE("modern: every row names the software release it ran (validate_modern's gpu x release table)") {
  std::map<std::string, std::size_t> count;
  for (const auto& r : rows()) ++count[vm::container_family(r)];
  // The launcher rows report the container their setup.sh imports, not the release their table's header names.
  for (const auto& r : rows()) {
    if (r.id.rfind("DGXC2411-H100-GPT3", 0) == 0) CHECK(vm::container_family(r) == "NeMo 24.05");
    if (r.id.rfind("DGXC2411-H100-NEMOTRON4", 0) == 0) CHECK(vm::container_family(r) == "NeMo 24.09");
    if (r.id.rfind("NEMOLS-H100", 0) == 0) CHECK(vm::container_family(r) == "NeMo 24.03.01");
  }
  // Only the Llama 3 paper's rows (Meta's own stack) have none.
  CHECK(count["other"] == 3);
  CHECK(count.size() == 11);   // 24.03.01, 24.05, 24.07, 24.09, 25.02.01, 25.04 (rc2), 25.04.01, 25.11, 26.02, 26.04.01, other
  CHECK(count["NeMo 24.09"] == 60);
}

TEST_CASE("modern: FlashAttention-2 exactly where a row's launch turned cuDNN's attention off (modern.h cudnn_attention_off)") {
  std::map<std::string, int> by;
  for (const auto& r : rows()) {
    if (!vm::cudnn_attention_off(r)) continue;
    CHECK(r.gpu_type == "H100");
    if (r.id.rfind("DGXC2411-H100-GPT3_175B", 0) == 0) ++by["dgxc gpt3 175b"];
    else if (r.id.rfind("DGXC2411-H100-NEMOTRON4_340B", 0) == 0) ++by["dgxc nemotron4 340b"];
    else if (r.id.rfind("NEMOLS-H100", 0) == 0) ++by["long sequence 24.03.01"];
    else if (r.id.rfind("NEMO2407-H100", 0) == 0) ++by["summary 24.07"];
    else ++by["other"];
  }
  CHECK(by["dgxc gpt3 175b"] == 10);
  CHECK(by["dgxc nemotron4 340b"] == 10);
  CHECK(by["long sequence 24.03.01"] == 9);
  CHECK(by["summary 24.07"] == 10);   // twelve rows less GPT-3 175B's two (cuDNN for that model alone)
  CHECK(by["other"] == 0);
  for (const auto& r : rows()) {
    // The scripts that set cuDNN's attention, and the 24.07 GPT-3 175B rows.
    if (r.id.rfind("DGXC2411-H100-NEMOTRON4_15B", 0) == 0 || r.id.rfind("DGXC2411-H100-L31", 0) == 0 ||
        r.id.rfind("NEMO2407-H100-GPT3_175B", 0) == 0 || r.id.rfind("NEMOLS-B200", 0) == 0) {
      CAPTURE(r.id);
      CHECK_FALSE(vm::cudnn_attention_off(r));
    }
  }
  // And the scenario a row becomes says so.
  vm::Inputs in;
  std::string why;
  for (const auto& r : rows()) {
    if (r.id != "NEMOLS-H100-LLAMA2_7B-0004K" && r.id != "DGXC2411-H100-L31_8B-BF16-0008") continue;
    const auto s = vm::row_scenario(r, vm::Profile::calibrated, in, why);
    REQUIRE(s);
    CHECK((s->features.attention == config::Attention::flash2) == (r.id == "NEMOLS-H100-LLAMA2_7B-0004K"));
  }
}

TEST_CASE("modern: delayed scaling's amax reduction as each row's launch ran it (modern.h amax_reduction_of)") {
  // Transformer Engine 1.5 and earlier read NVTE_DP_AMAX_REDUCE_INTERVAL=0 (the tensor-parallel group alone):
  // dgxc-benchmarking's GPT-3 175B launch (NeMo 24.05) and the 24.03.01 launcher's long-sequence rows; every
  // other row on Megatron-Core's default group.
  std::map<std::string, int> tp;
  for (const auto& r : rows()) {
    if (vm::amax_reduction_of(r) != config::Fp8AmaxReduction::tp) {
      CHECK(vm::amax_reduction_of(r) == config::Fp8AmaxReduction::tp_dp_cp);
      continue;
    }
    if (r.id.rfind("DGXC2411-H100-GPT3_175B", 0) == 0) ++tp["dgxc gpt3 175b (24.05)"];
    else if (r.id.rfind("NEMOLS-H100", 0) == 0) ++tp["long sequence 24.03.01"];
    else ++tp["other"];
  }
  CHECK(tp["dgxc gpt3 175b (24.05)"] == 10);
  CHECK(tp["long sequence 24.03.01"] == 9);
  CHECK(tp["other"] == 0);
  // The scenario a row becomes: its reduction, Megatron-Core's default with --without row_amax, none without it.
  vm::Inputs in;
  std::string why;
  for (const auto& r : rows()) {
    if (r.id != "DGXC2411-H100-GPT3_175B-FP8-0128" && r.id != "DGXC2411-H100-L31_70B-FP8-0064") continue;
    CAPTURE(r.id);
    const bool gpt3 = r.id == "DGXC2411-H100-GPT3_175B-FP8-0128";
    auto s = vm::row_scenario(r, vm::Profile::calibrated, in, why);
    REQUIRE(s);
    CHECK(s->features.fp8_amax_reduction == (gpt3 ? config::Fp8AmaxReduction::tp : config::Fp8AmaxReduction::tp_dp_cp));
    CHECK(models::fp8_amax_group_ranks(*s) == (gpt3 ? 4 : 4 * 2 * 2));   // GPT-3: tp 4; 70B: tp 4 x cp 2 x dp 2
    in.row_amax = false;
    s = vm::row_scenario(r, vm::Profile::calibrated, in, why);
    CHECK(s->features.fp8_amax_reduction == config::Fp8AmaxReduction::tp_dp_cp);
    in.row_amax = true;
    in.amax_reduction = false;
    s = vm::row_scenario(r, vm::Profile::calibrated, in, why);
    CHECK(models::fp8_amax_group_ranks(*s) == 0);
    in.amax_reduction = true;
  }
}
