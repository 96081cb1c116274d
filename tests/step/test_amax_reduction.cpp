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

// Tasks of rank `rank` whose name is `name`.
std::vector<sim::TaskId> named(const step::StepResult& r, const std::string& name, int rank = 0) {
  std::vector<sim::TaskId> out;
  for (sim::TaskId t = 0; t < static_cast<sim::TaskId>(r.graph->size()); ++t)
    if (r.graph->streams()[static_cast<std::size_t>(r.graph->task(t).stream)].rank == rank && r.graph->name(t) == name)
      out.push_back(t);
  return out;
}
std::vector<sim::TaskId> amax_tasks(const step::StepResult& r, int rank = 0) { return named(r, "fp8 amax all-reduce", rank); }

double coll(const config::Scenario& s, const hardware::Group& g, double bytes) {
  return hardware::collective_time(hardware::Collective::all_reduce, bytes, g, s.hardware, hardware::AlgoChoice::auto_,
                                   s.calibration ? &*s.calibration : nullptr)
      .seconds;
}

}  // namespace

TEST_CASE("fp8 amax reduction: the group it spans, and the ranks every rank waits for") {
  auto s = eight_b({});
  // Megatron-Core's default: the stage's tp x dp x cp ranks (here all 8); every rank then waits for its
  // data-parallel replicas once per chunk pass, so the pace's group is the whole job.
  CHECK(models::fp8_amax_group_ranks(s) == 8);
  CHECK(models::fp8_amax_over_dp(s));
  CHECK(models::sync_group_ranks(s) == 8);
  // tp_only_amax_red: the tensor-parallel pair (cp 1); the pace keeps its tensor-parallel group.
  s = eight_b({"features.fp8_amax_reduction=\"tp_cp\""});
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
  // A tensor-parallel group of one has nothing to reduce with tp or tp_cp at cp 1 (Transformer Engine returns).
  for (const char* v : {"tp", "tp_cp"}) {
    s = eight_b({"parallel.tp=1", std::string("features.fp8_amax_reduction=\"") + v + "\""});
    CHECK(models::fp8_amax_group_ranks(s) == 0);
  }
  // With pipeline and context parallelism (64 GPUs: tp 2, cp 2, pp 2, dp 8): the default group is one stage's
  // tp x dp x cp, tp_cp its tp x cp, tp its tensor-parallel ranks alone; the pace's group all ranks under the
  // default.
  auto big = [](const char* v) {
    return mfusim::testing::shipped_scenario("8xh100_llama3_8b.toml", {"training.precision=\"fp8\"", "cluster.gpus=64",
                                                                       "parallel.pp=2", "parallel.cp=2",
                                                                       std::string("features.fp8_amax_reduction=\"") + v + "\""});
  };
  CHECK(models::fp8_amax_group_ranks(big("tp_dp_cp")) == 2 * 2 * 8);
  CHECK(models::sync_group_ranks(big("tp_dp_cp")) == 64);
  CHECK(models::fp8_amax_group_ranks(big("tp_cp")) == 4);
  CHECK(models::fp8_amax_group_ranks(big("tp")) == 2);
  CHECK(models::sync_group_ranks(big("tp")) == 2 * 2 * 2);
}

TEST_CASE("fp8 amax reduction: one blocking all-reduce per chunk forward and backward, on the critical path") {
  step::SimulateOptions opt;
  opt.split_imbalance = false;
  // The tp x cp group (here the tensor-parallel pair) keeps the pace of "none", so the step differs by the
  // all-reduces alone.
  const auto none = step::simulate(eight_b({"features.fp8_amax_reduction=\"none\"", "features.overlap_grad_reduce=false"}), opt);
  const auto tp = step::simulate(eight_b({"features.fp8_amax_reduction=\"tp_cp\"", "features.overlap_grad_reduce=false"}), opt);
  CHECK(amax_tasks(none).empty());
  const auto tasks = amax_tasks(tp);
  // pp 1: one chunk, 32 micro-batches, a forward and a backward each.
  REQUIRE(tasks.size() == 2 * 32);
  // Each is the all-reduce of the rank's amaxes (32 layers x 4 GEMMs x 3 forward / 2 backward x 4 bytes) over
  // the tensor-parallel pair, as the collective model prices it.
  const auto& s = tp.scenario;
  const auto pl = hardware::place(models::layout_of(s), s.hardware);
  const double fwd = coll(s, pl.tp_cp, 32 * 4 * 3 * 4.0), bwd = coll(s, pl.tp_cp, 32 * 4 * 2 * 4.0);
  REQUIRE(fwd > 0);
  double sum = 0;
  int forward = 0;
  for (sim::TaskId t : tasks) {
    const double d = static_cast<double>(tp.graph->task(t).duration_ns) * 1e-9;
    const bool f = tp.graph->task(t).kind == 'F';
    forward += f;
    CHECK(d == doctest::Approx(f ? fwd : bwd).epsilon(1e-6));
    sum += d;
  }
  CHECK(forward == 32);
  CHECK(sum == doctest::Approx(32 * (fwd + bwd)).epsilon(1e-6));
  // The compute stream waits for each: the step grows by their sum (no pipeline to hide them in), and the
  // breakdown carries them as exposed tensor-parallel communication.
  CHECK(tp.step_time_s - none.step_time_s == doctest::Approx(sum).epsilon(0.02));
  CHECK(tp.breakdown.tp_comm_exposed - none.breakdown.tp_comm_exposed == doctest::Approx(sum).epsilon(0.02));
  // Transformer Engine 1.5's tensor-parallel reduction with NVTE_ASYNC_AMAX_REDUCTION: the forward's waits, the
  // backward's is waited at the next fp8 module's backward, hidden behind what runs before it (none emitted).
  const auto te15 = step::simulate(eight_b({"features.fp8_amax_reduction=\"tp\"", "features.overlap_grad_reduce=false"}), opt);
  const auto te15_tasks = amax_tasks(te15);
  CHECK(te15_tasks.size() == 32);
  for (sim::TaskId t : te15_tasks) CHECK(te15.graph->task(t).kind == 'F');
  // Over the data-parallel replicas: the all-reduce spans all 8 ranks and is counted as DP communication; the
  // pace of every kernel is the slowest of 8 ranks, not 2.
  const auto dp = step::simulate(eight_b({"features.overlap_grad_reduce=false"}), opt);
  CHECK(amax_tasks(dp).size() == 2 * 32);
  CHECK(dp.sync_group_ranks == 8);
  CHECK(tp.sync_group_ranks == 2);
  CHECK(dp.sync_pace > tp.sync_pace);
  CHECK(dp.step_time_s > tp.step_time_s);
  const double dp_sum = 32 * (coll(s, pl.tp_dp_cp, 32 * 4 * 3 * 4.0) + coll(s, pl.tp_dp_cp, 32 * 4 * 2 * 4.0));
  CHECK(dp.breakdown.dp_comm_exposed - none.breakdown.dp_comm_exposed == doctest::Approx(dp_sum).epsilon(0.05));
}

TEST_CASE("fp8 amax reduction: each chunk of an interleaved pipeline reduces; the coarse lowering prices the same waits") {
  step::SimulateOptions opt;
  opt.split_imbalance = false;
  // pp 2 x vpp 2 on 16 GPUs (dp 4): each rank runs two chunks per micro-batch.
  auto with = [&](const char* v) {
    return mfusim::testing::shipped_scenario("8xh100_llama3_8b.toml",
                                             {"training.precision=\"fp8\"", "cluster.gpus=16", "parallel.pp=2",
                                              "parallel.vpp=2", "schedule.name=\"interleaved-1f1b\"",
                                              std::string("features.fp8_amax_reduction=\"") + v + "\""});
  };
  const auto tp = step::simulate(with("tp_cp"), opt);
  CHECK(amax_tasks(tp).size() == static_cast<std::size_t>(2 * 2 * tp.microbatches));
  CHECK(amax_tasks(tp, 1).size() == static_cast<std::size_t>(2 * 2 * tp.microbatches));
  // Each reduction carries the amaxes of all the rank's chunks (Transformer Engine from 1.6 keeps one buffer per
  // direction): 16 layers here; under "tp" (1.5 and earlier, a buffer per autocast region) the chunk's 8.
  {
    const auto& sc = tp.scenario;
    const auto pl = hardware::place(models::layout_of(sc), sc.hardware);
    const sim::TaskId t = amax_tasks(tp)[0];
    REQUIRE(tp.graph->task(t).kind == 'F');
    CHECK(static_cast<double>(tp.graph->task(t).duration_ns) * 1e-9 == doctest::Approx(coll(sc, pl.tp_cp, 16 * 4 * 3 * 4.0)).epsilon(1e-6));
    const auto te15 = step::simulate(with("tp"), opt);
    const auto w = amax_tasks(te15);
    REQUIRE(w.size() == static_cast<std::size_t>(2 * te15.microbatches));   // forwards only
    CHECK(static_cast<double>(te15.graph->task(w[0]).duration_ns) * 1e-9 == doctest::Approx(coll(sc, pl.tp, 8 * 4 * 3 * 4.0)).epsilon(1e-6));
  }
  // Coarse (one task per op): the op's task holds its waits; the step moves as the per-layer lowering's does.
  step::SimulateOptions coarse = opt;
  coarse.per_layer = false;
  const auto none_l = step::simulate(with("none"), opt);
  const auto none_c = step::simulate(with("none"), coarse), tp_c = step::simulate(with("tp_cp"), coarse);
  const double d_layer = tp.step_time_s - none_l.step_time_s, d_coarse = tp_c.step_time_s - none_c.step_time_s;
  const double per_rank = static_cast<double>(amax_tasks(tp).size()) / 2 *
                          (static_cast<double>(tp.graph->task(amax_tasks(tp)[0]).duration_ns) * 1e-9);
  MESSAGE("per-layer +" << d_layer * 1e3 << " ms, coarse +" << d_coarse * 1e3 << " ms, waits on a rank ~" << per_rank * 1e3 << " ms");
  CHECK(d_layer > 0);
  CHECK(d_coarse == doctest::Approx(d_layer).epsilon(0.10));
  // Under the default group the merged tasks put the waits into exposed DP communication (the coarse
  // lowering's parts), as the per-layer tasks do.
  const auto dp_c = step::simulate(with("tp_dp_cp"), coarse), dp_l = step::simulate(with("tp_dp_cp"), opt);
  CHECK(dp_c.breakdown.dp_comm_exposed > none_c.breakdown.dp_comm_exposed);
  CHECK(dp_c.breakdown.dp_comm_exposed - none_c.breakdown.dp_comm_exposed ==
        doctest::Approx(dp_l.breakdown.dp_comm_exposed - none_l.breakdown.dp_comm_exposed).epsilon(0.25));
}

TEST_CASE("fp8 amax reduction: DualPipe's ranks carry both their stages' amaxes; tp 1 with cp reduces over cp") {
  step::SimulateOptions opt;
  opt.split_imbalance = false;
  // DualPipe on pp 4 (16 GPUs, dp 4): each rank holds two stages of 8 layers (stage r and 3 - r).
  const auto dual = step::simulate(
      mfusim::testing::shipped_scenario("8xh100_llama3_8b.toml", {"training.precision=\"fp8\"", "cluster.gpus=16",
                                                                   "parallel.tp=1", "parallel.pp=4", "schedule.name=\"dualpipe\"",
                                                                   "training.global_batch=32", "features.fp8_amax_reduction=\"tp_dp_cp\""}),
      opt);
  const auto& sc = dual.scenario;
  const auto pl = hardware::place(models::layout_of(sc), sc.hardware);
  const auto w = amax_tasks(dual);
  REQUIRE_FALSE(w.empty());
  for (sim::TaskId t : w) {
    const bool f = dual.graph->task(t).kind == 'F';
    CHECK(static_cast<double>(dual.graph->task(t).duration_ns) * 1e-9 ==
          doctest::Approx(coll(sc, pl.tp_dp_cp, 16 * 4 * (f ? 3 : 2) * 4.0)).epsilon(1e-6));
  }
  // tp 1, cp 2, dp 1 under tp_cp: a reduction over the context-parallel pair, counted as CP communication.
  const auto cp = step::simulate(mfusim::testing::shipped_scenario("8xh100_llama3_8b.toml",
                                                                   {"training.precision=\"fp8\"", "cluster.gpus=2", "parallel.tp=1",
                                                                    "parallel.cp=2", "training.global_batch=8",
                                                                    "features.fp8_amax_reduction=\"tp_cp\""}),
                                 opt);
  REQUIRE_FALSE(amax_tasks(cp).empty());
  CHECK(cp.graph->task(amax_tasks(cp)[0]).category == sim::Category::cp_comm);
}

TEST_CASE("fp8 amax reduction: ZeRO-3 units are the layers' alone (the wait opens no unit)") {
  step::SimulateOptions opt;
  opt.split_imbalance = false;
  // Megatron-FSDP over 16 GPUs with pp 2: the waits join the last layer's unit; they add no gather, no
  // reduce-scatter and no memory (the tp x cp group keeps the pace, so only the waits differ).
  for (const char* fsdp : {"features.megatron_fsdp=true", "features.fsdp_version=2"}) {
    CAPTURE(fsdp);
    auto with = [&](const char* v) {
      std::vector<std::string> sets = {"training.precision=\"fp8\"", "cluster.gpus=16", "parallel.pp=2",
                                       "parallel.zero_stage=3", fsdp,
                                       std::string("features.fp8_amax_reduction=\"") + v + "\""};
      if (std::string(fsdp).find("fsdp_version") != std::string::npos) sets.push_back("features.model_code=\"megatron\"");
      return step::simulate(mfusim::testing::shipped_scenario("8xh100_llama3_8b.toml", sets), opt);
    };
    const auto none = with("none"), tp = with("tp_cp");
    REQUIRE(!amax_tasks(tp).empty());
    for (int rank : {0, 1}) {
      CAPTURE(rank);
      CHECK(named(tp, "fsdp all-gather", rank).size() == named(none, "fsdp all-gather", rank).size());
      CHECK(named(tp, "fsdp reduce-scatter", rank).size() == named(none, "fsdp reduce-scatter", rank).size());
      CHECK(named(tp, "fsdp copy-out", rank).size() == named(none, "fsdp copy-out", rank).size());
      CHECK(tp.memory.per_stage_peak_gib[static_cast<std::size_t>(rank)] ==
            doctest::Approx(none.memory.per_stage_peak_gib[static_cast<std::size_t>(rank)]).epsilon(1e-9));
    }
    CHECK(tp.breakdown.dp_comm_exposed == doctest::Approx(none.breakdown.dp_comm_exposed).epsilon(0.02));
  }
}

TEST_CASE("fp8 amax reduction: what run prints, --json carries and diagnose offers") {
  step::SimulateOptions opt;
  opt.split_imbalance = false;
  const auto dp = step::simulate(eight_b({}), opt);
  CHECK(report::text_report(dp).find("recipe tensorwise (per-tensor delayed scaling, amax all-reduce over tp x dp x cp, 8 ranks, "
                                     "per chunk)") != std::string::npos);
  CHECK(report::to_json(dp).find("\"fp8_amax_reduction\": \"tp_dp_cp\"") != std::string::npos);
  const auto tp = step::simulate(eight_b({"features.fp8_amax_reduction=\"tp_cp\""}), opt);
  CHECK(report::text_report(tp).find("amax all-reduce over tp x cp, 2 ranks, per chunk") != std::string::npos);
  const auto te15 = step::simulate(eight_b({"features.fp8_amax_reduction=\"tp\""}), opt);
  CHECK(report::text_report(te15).find("amax all-reduce over tp, 2 ranks, per chunk forward") != std::string::npos);
  const auto cs = step::simulate(eight_b({"features.fp8_recipe=\"current\""}), opt);
  CHECK(report::text_report(cs).find("amax all-reduce") == std::string::npos);
  // diagnose's lever: the tp x cp group, offered only where the all-reduce spans the replicas.
  auto offered = [](const config::Scenario& s) {
    for (const auto& [lever, sets] : study::lever_candidates(s))
      if (sets == std::vector<std::string>{"features.fp8_amax_reduction=tp_cp"}) return true;
    return false;
  };
  CHECK(offered(eight_b({})));
  CHECK_FALSE(offered(eight_b({"features.fp8_amax_reduction=\"tp_cp\""})));
  CHECK_FALSE(offered(eight_b({"training.precision=\"bf16\""})));
}
