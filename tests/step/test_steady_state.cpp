// Schedules II (issue 16): the steady state across steps with and without optimizer post-validation
// (Zero Bubble, Qi et al. 2024 §4), imbalance apart from the bubble, schedule.max_inflight.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "config/loader.h"
#include "step/simulate.h"

using namespace mfusim;

namespace {

// Schedule lab, F = B = W = 1 ms, comm 0.
std::string lab(const std::string& schedule, int p, int m, bool post_validation, const std::string& extra = "") {
  return "model = \"llama2-7b\"\nhardware = \"h100-sxm\"\n[cluster]\ngpus = " + std::to_string(p) +
         "\n[training]\nseq_len = 4096\nglobal_batch = " + std::to_string(m) +
         "\nmicro_batch = 1\n[parallel]\ntp = 1\npp = " + std::to_string(p) + "\n[schedule]\nname = \"" + schedule +
         "\"\n" + extra + "[schedule.costs]\nf = 1.0\nb = 1.0\nw = 1.0\n[features]\noptimizer_post_validation = " +
         (post_validation ? "true" : "false") + "\n";
}

step::StepResult run(const std::string& text) {
  return step::simulate(config::load_scenario_string(text, "s.toml").base);
}

void check_sums(const step::StepResult& r) {
  CHECK(r.breakdown.total() == doctest::Approx(r.step_time_s).epsilon(0.01).scale(0));
  CHECK(r.breakdown.imbalance >= 0);
  CHECK(r.breakdown.bubble >= 0);
}

}  // namespace

TEST_CASE("lab oracles at F = B = W = 1: post-validation makes ZB-H2 3m and ZB-V 6m; ZB-H1 stays 3m + p - 1") {
  for (int p : {2, 4, 8})
    for (int m : {2 * p, 3 * p}) {
      CAPTURE(p);
      CAPTURE(m);
      const double ms = 1e-3;
      // Without post-validation the synchronisation before the optimizer keeps one step's makespan.
      const auto h2 = run(lab("zb-h2", p, m, false));
      CHECK(h2.step_time_s == doctest::Approx((3 * m + p - 1) * ms).epsilon(1e-12));
      CHECK(h2.makespan_s == doctest::Approx(h2.step_time_s).epsilon(1e-12));
      check_sums(h2);
      // With it, one step's parallelogram tiles with the next.
      const auto h2v = run(lab("zb-h2", p, m, true));
      CHECK(h2v.step_time_s == doctest::Approx(3 * m * ms).epsilon(1e-12));
      CHECK(h2v.makespan_s == doctest::Approx((3 * m + p - 1) * ms).epsilon(1e-12));
      CHECK(h2v.steady_steps >= 3);
      CHECK(h2v.breakdown.bubble == doctest::Approx(0).epsilon(1e-12));
      check_sums(h2v);
      const auto h1v = run(lab("zb-h1", p, m, true));
      CHECK(h1v.step_time_s == doctest::Approx((3 * m + p - 1) * ms).epsilon(1e-12));
      check_sums(h1v);
      const auto h1 = run(lab("zb-h1", p, m, false));
      CHECK(h1.step_time_s == doctest::Approx((3 * m + p - 1) * ms).epsilon(1e-12));
      // ZB-V: 2 chunks per rank, each F, B, W of 1 ms: 6m per step in the periodic regime.
      const auto v = run(lab("zb-v", p, m, true));
      CHECK(v.step_time_s == doctest::Approx(6 * m * ms).epsilon(1e-12));
      check_sums(v);
      // A balanced lab scenario has no imbalance: every stage has the same work.
      CHECK(h2.breakdown.imbalance == doctest::Approx(0).epsilon(1e-12));
      CHECK(v.breakdown.imbalance == doctest::Approx(0).epsilon(1e-12));
      for (const auto& rk : h1.ranks) CHECK(rk.imbalance_s == doctest::Approx(0).epsilon(1e-12));
    }
}

TEST_CASE("schedule.max_inflight reaches zb-auto in lab mode, and bad values are errors with positions") {
  // At 2p micro-batches in flight the heuristic has the memory of ZB-H2 and reaches 3m + p - 1 or better;
  // at p (1F1B's) it is ZB-H1's 3m + p - 1.
  const int p = 4, m = 8;
  const auto one = run(lab("zb-auto", p, m, false));
  const auto two = run(lab("zb-auto", p, m, false, "max_inflight = 8\n"));
  CHECK(one.step_time_s <= (3 * m + p - 1) * 1e-3 + 1e-12);
  CHECK(two.step_time_s <= one.step_time_s + 1e-12);
  int peak_one = 0, peak_two = 0;
  for (const auto& r : one.ranks) peak_one = std::max(peak_one, r.peak_inflight_microbatches);
  for (const auto& r : two.ranks) peak_two = std::max(peak_two, r.peak_inflight_microbatches);
  CHECK(peak_one <= p);
  CHECK(peak_two <= 2 * p);
  CHECK(peak_two > p);   // the larger limit is used
  auto error_of = [](const std::string& text) {
    try {
      config::load_scenario_string(text, "s.toml");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const auto neg = error_of(lab("zb-auto", p, m, false, "max_inflight = -1\n"));
  CHECK(neg.find("s.toml:") != std::string::npos);
  CHECK(neg.find("schedule.max_inflight") != std::string::npos);
  const auto str = error_of(lab("zb-auto", p, m, false, "max_inflight = \"two\"\n"));
  CHECK(str.find("s.toml:") != std::string::npos);
  CHECK(str.find("an integer") != std::string::npos);
  const auto pv = error_of(lab("zb-h2", p, m, false) + "optimizer_post_validation = 3\n");
  CHECK(pv.find("optimizer_post_validation") != std::string::npos);
}

TEST_CASE("imbalance apart from the bubble: a heavy last stage (LM head) shows imbalance; the parts sum") {
  // Llama-2-7B at pp 4 with a 32k-vocabulary head on the last stage and 8 layers per stage.
  const std::string base =
      "model = \"llama2-7b\"\nhardware = \"h100-sxm\"\n[cluster]\ngpus = 4\n[training]\nseq_len = 4096\n"
      "global_batch = 16\nmicro_batch = 1\n[parallel]\ntp = 1\npp = 4\n[schedule]\nname = \"1f1b\"\n";
  const auto even = run(base);
  double imbalance = 0;
  for (const auto& r : even.ranks) imbalance += r.imbalance_s;
  CHECK(imbalance > 0);
  check_sums(even);
  // Making the last stage heavier (more layers there) raises the imbalance.
  std::string heavy_text = base;
  heavy_text.replace(heavy_text.find("pp = 4\n"), 7, "pp = 4\nlast_stage_layers = 14\n");
  const auto heavy = run(heavy_text);
  double heavy_imbalance = 0;
  for (const auto& r : heavy.ranks) heavy_imbalance += r.imbalance_s;
  CHECK(heavy_imbalance > 2 * imbalance);
  check_sums(heavy);
  // Post-validation in the cost model: the period is at most one step's makespan; the parts still sum.
  const auto pv = run(base + "[features]\noptimizer_post_validation = true\n");
  CHECK(pv.step_time_s <= pv.makespan_s + 1e-12);
  CHECK(pv.steady_steps >= 3);
  check_sums(pv);
}

TEST_CASE("zb-auto in the cost model plans from the scenario's per-stage costs under a limit in rank 0's bytes") {
  const std::string base =
      "model = \"llama2-7b\"\nhardware = \"h100-sxm\"\n[cluster]\ngpus = 4\n[training]\nseq_len = 4096\n"
      "global_batch = 16\nmicro_batch = 1\n[parallel]\ntp = 1\npp = 4\n[schedule]\n";
  const auto h1 = run(base + "name = \"zb-h1\"\n");
  const auto f1 = run(base + "name = \"1f1b\"\n");
  const auto za = run(base + "name = \"zb-auto\"\n");
  const auto za2 = run(base + "name = \"zb-auto\"\nmax_inflight = 8\n");
  // At max_inflight = 0 no rank holds more than 1F1B's rank 0 (pp of rank 0's micro-batches; the last
  // rank's heavier LM-head activations count as more), where ZB-H1's last rank holds more than that.
  const auto peak = [](const step::StepResult& r) {
    return *std::max_element(r.memory.per_stage_peak_gib.begin(), r.memory.per_stage_peak_gib.end());
  };
  CHECK(peak(za) <= f1.memory.per_stage_peak_gib[0] + 1e-9);
  CHECK(peak(h1) > f1.memory.per_stage_peak_gib[0]);
  // Faster than 1F1B at that memory; with ZB-2p's memory (2 pp) faster than ZB-H1.
  CHECK(za.step_time_s < f1.step_time_s);
  CHECK(za2.step_time_s < h1.step_time_s);
  check_sums(za);
  check_sums(za2);
}
