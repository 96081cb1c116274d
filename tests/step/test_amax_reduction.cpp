// features.fp8_amax_reduction: per-tensor delayed scaling's amax all-reduce at the end of every model chunk's
// forward and backward (Transformer Engine's reduce_and_update_fp8_tensors over Megatron-Core's amax reduction
// group), a blocking collective on the compute stream; over the data-parallel replicas it joins every rank to
// them once per chunk pass (models::sync_group_ranks).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "hardware/collectives.h"
#include "models/rank_shape.h"
#include "report/json.h"
#include "report/text.h"
#include "step/simulate.h"
#include "study/diagnose.h"
#include "tests/shipped_scenario.h"

using namespace mfusim;

namespace {

// Llama 3 8B on 8 H100: tp 2, dp 4, pp 1, 32 micro-batches per rank; fp8 under delayed scaling.
config::Scenario eight_b(std::vector<std::string> sets) {
  sets.insert(sets.begin(), "training.precision=\"fp8\"");
  return mfusim::testing::shipped_scenario("8xh100_llama3_8b.toml", sets);
}

// The amax all-reduce tasks of rank 0 (its compute stream), by the name the trace shows.
std::vector<sim::TaskId> amax_tasks(const step::StepResult& r) {
  std::vector<sim::TaskId> out;
  for (sim::TaskId t = 0; t < static_cast<sim::TaskId>(r.graph->size()); ++t)
    if (r.graph->name(t) == "fp8 amax all-reduce" && r.graph->streams()[static_cast<std::size_t>(r.graph->task(t).stream)].rank == 0) out.push_back(t);
  return out;
}

}  // namespace

TEST_CASE("fp8 amax reduction: the group it spans, and the ranks every rank waits for") {
  auto s = eight_b({});
  // Megatron-Core's default: the stage's tp x dp x cp ranks (here all 8); every rank then waits for its
  // data-parallel replicas once per chunk pass, so the pace's group is the whole job.
  CHECK(models::fp8_amax_group_ranks(s) == 8);
  CHECK(models::fp8_amax_over_dp(s));
  CHECK(models::sync_group_ranks(s) == 8);
  // tp_only_amax_red: the tensor-parallel pair; the pace keeps its tensor-parallel group.
  s = eight_b({"features.fp8_amax_reduction=\"tensor_parallel\""});
  CHECK(models::fp8_amax_group_ranks(s) == 2);
  CHECK_FALSE(models::fp8_amax_over_dp(s));
  CHECK(models::sync_group_ranks(s) == 2);
  // None: reduce_amax off, another recipe, bf16, torchtitan's float8 (dynamic scaling): no all-reduce.
  for (const char* set : {"features.fp8_amax_reduction=\"none\"", "features.fp8_recipe=\"current\"",
                          "training.precision=\"bf16\"", "features.model_code=\"torchtitan\""}) {
    CAPTURE(set);
    s = eight_b({set});
    CHECK(models::fp8_amax_group_ranks(s) == 0);
    CHECK(models::sync_group_ranks(s) == 2);
  }
  // A tensor-parallel group of one has nothing to reduce with tensor_parallel.
  s = eight_b({"parallel.tp=1", "features.fp8_amax_reduction=\"tensor_parallel\""});
  CHECK(models::fp8_amax_group_ranks(s) == 0);
  // With pipeline and context parallelism: the group is one stage's tp x dp x cp; the pace's all ranks.
  s = mfusim::testing::shipped_scenario("8xh100_llama3_8b.toml", {"training.precision=\"fp8\"", "cluster.gpus=64",
                                                                   "parallel.pp=2", "parallel.cp=2"});
  CHECK(models::fp8_amax_group_ranks(s) == 2 * 2 * 8);
  CHECK(models::sync_group_ranks(s) == 64);
}

TEST_CASE("fp8 amax reduction: one blocking all-reduce per chunk forward and backward, on the critical path") {
  step::SimulateOptions opt;
  opt.split_imbalance = false;
  // The tensor-parallel group keeps the pace of "none", so the step differs by the all-reduces alone.
  const auto none = step::simulate(eight_b({"features.fp8_amax_reduction=\"none\"", "features.overlap_grad_reduce=false"}), opt);
  const auto tp = step::simulate(eight_b({"features.fp8_amax_reduction=\"tensor_parallel\"", "features.overlap_grad_reduce=false"}), opt);
  CHECK(amax_tasks(none).empty());
  const auto tasks = amax_tasks(tp);
  // pp 1: one chunk, 32 micro-batches, a forward and a backward each.
  REQUIRE(tasks.size() == 2 * 32);
  // Each is the all-reduce of the chunk's amaxes (32 layers x 4 GEMMs x 3 forward / 2 backward x 4 bytes) over
  // the tensor-parallel pair, as the collective model prices it.
  const auto& s = tp.scenario;
  const auto pl = hardware::place(models::layout_of(s), s.hardware);
  const double fwd = hardware::collective_time(hardware::Collective::all_reduce, 32 * 4 * 3 * 4.0, pl.tp_cp, s.hardware,
                                               hardware::AlgoChoice::auto_, s.calibration ? &*s.calibration : nullptr).seconds;
  const double bwd = hardware::collective_time(hardware::Collective::all_reduce, 32 * 4 * 2 * 4.0, pl.tp_cp, s.hardware,
                                               hardware::AlgoChoice::auto_, s.calibration ? &*s.calibration : nullptr).seconds;
  REQUIRE(fwd > 0);
  double sum = 0;
  for (sim::TaskId t : tasks) {
    const double d = static_cast<double>(tp.graph->task(t).duration_ns) * 1e-9;
    CHECK((d == doctest::Approx(fwd).epsilon(1e-6) || d == doctest::Approx(bwd).epsilon(1e-6)));
    sum += d;
  }
  CHECK(sum == doctest::Approx(32 * (fwd + bwd)).epsilon(1e-6));
  // The compute stream waits for each: the step grows by their sum (no pipeline to hide them in), and the
  // breakdown carries them as exposed tensor-parallel communication.
  CHECK(tp.step_time_s - none.step_time_s == doctest::Approx(sum).epsilon(0.02));
  CHECK(tp.breakdown.tp_comm_exposed - none.breakdown.tp_comm_exposed == doctest::Approx(sum).epsilon(0.02));
  // Over the data-parallel replicas: the all-reduce spans all 8 ranks and is counted as DP communication; the
  // pace of every kernel is the slowest of 8 ranks, not 2.
  const auto dp = step::simulate(eight_b({"features.overlap_grad_reduce=false"}), opt);
  CHECK(amax_tasks(dp).size() == 2 * 32);
  CHECK(dp.sync_group_ranks == 8);
  CHECK(tp.sync_group_ranks == 2);
  CHECK(dp.sync_pace > tp.sync_pace);
  CHECK(dp.step_time_s > tp.step_time_s);
  CHECK(dp.breakdown.dp_comm_exposed > none.breakdown.dp_comm_exposed);
}

TEST_CASE("fp8 amax reduction: interleaved chunks each reduce; the planner's coarse lowering prices the same waits") {
  step::SimulateOptions opt;
  opt.split_imbalance = false;
  // pp 2 x vpp 2 on 16 GPUs (dp 4): each rank runs two chunks per micro-batch.
  std::vector<std::string> base = {"training.precision=\"fp8\"", "cluster.gpus=16", "parallel.pp=2", "parallel.vpp=2",
                                   "schedule.name=\"interleaved-1f1b\""};
  auto with = [&](const char* v) {
    auto sets = base;
    sets.push_back(std::string("features.fp8_amax_reduction=\"") + v + "\"");
    return mfusim::testing::shipped_scenario("8xh100_llama3_8b.toml", sets);
  };
  const auto tp = step::simulate(with("tensor_parallel"), opt);
  CHECK(amax_tasks(tp).size() == static_cast<std::size_t>(2 * 2 * tp.microbatches));
  // Coarse (one task per op): the op's task holds its waits; the step moves by about the per-layer lowering's.
  step::SimulateOptions coarse = opt;
  coarse.per_layer = false;
  const auto none_c = step::simulate(with("none"), coarse), tp_c = step::simulate(with("tensor_parallel"), coarse);
  const auto none_l = step::simulate(with("none"), opt);
  const double d_layer = tp.step_time_s - none_l.step_time_s, d_coarse = tp_c.step_time_s - none_c.step_time_s;
  CHECK(d_layer > 0);
  CHECK(d_coarse == doctest::Approx(d_layer).epsilon(0.25));
}

TEST_CASE("fp8 amax reduction: what run prints, --json carries and diagnose offers") {
  step::SimulateOptions opt;
  opt.split_imbalance = false;
  const auto dp = step::simulate(eight_b({}), opt);
  CHECK(report::text_report(dp).find("recipe tensorwise (per-tensor delayed scaling, amax all-reduce over tp x dp x cp, 8 ranks, "
                                     "per chunk)") != std::string::npos);
  CHECK(report::to_json(dp).find("\"fp8_amax_reduction\": \"data_parallel\"") != std::string::npos);
  const auto tp = step::simulate(eight_b({"features.fp8_amax_reduction=\"tensor_parallel\""}), opt);
  CHECK(report::text_report(tp).find("amax all-reduce over tp x cp, 2 ranks, per chunk") != std::string::npos);
  const auto cs = step::simulate(eight_b({"features.fp8_recipe=\"current\""}), opt);
  CHECK(report::text_report(cs).find("amax all-reduce") == std::string::npos);
  // diagnose's lever: the tensor-parallel group, offered only where the all-reduce spans the replicas.
  auto offered = [](const config::Scenario& s) {
    for (const auto& [lever, sets] : study::lever_candidates(s))
      if (sets == std::vector<std::string>{"features.fp8_amax_reduction=tensor_parallel"}) return true;
    return false;
  };
  CHECK(offered(eight_b({})));
  CHECK_FALSE(offered(eight_b({"features.fp8_amax_reduction=\"tensor_parallel\""})));
  CHECK_FALSE(offered(eight_b({"training.precision=\"bf16\""})));
}
