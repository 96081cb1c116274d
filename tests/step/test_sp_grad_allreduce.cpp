// Megatron's all-reduce over the TP group of the gradients sequence parallelism leaves partial
// (finalize_model_grads -> _allreduce_non_tensor_model_parallel_grads; step/data_parallel.cpp): the
// parameters every TP rank holds whole (norms, row-parallel biases, router, MLA's down-projections) saw
// only their rank's sequence chunk. One coalesced all-reduce per rank after its DP sync, before its
// gradient norm.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "hardware/collectives.h"
#include "models/params.h"
#include "step/lower.h"
#include "tests/shipped_scenario.h"
#include "tests/step/graph_helpers.h"

using namespace mfusim;

namespace {
config::Scenario load(const std::vector<std::string>& sets = {}) {
  return testing::shipped_scenario("128xh100_70b.toml", sets);   // Llama-2-70B: tp 8 with sequence parallelism, pp 4
}
int rank_of(const step::StepResult& r, sim::TaskId t) { return r.graph->streams()[r.graph->task(t).stream].rank; }
}  // namespace

TEST_CASE("sequence parallelism: each rank all-reduces its whole-held parameters' gradients over the TP group") {
  const config::Scenario s = load();
  REQUIRE(s.parallel.tp == 8);
  REQUIRE(s.parallel.pp == 4);
  REQUIRE(s.parallel.vpp == 1);
  REQUIRE(s.parallel.sequence_parallel);
  REQUIRE(s.model.layers == 80);
  const step::Lowered low = step::lower(s, {});
  // Llama: two RMSNorms of `hidden` per layer, nothing else held whole; 20 layers per rank, the last stage
  // also the final norm; fp32 main_grad (4 bytes).
  const double h = s.model.hidden;
  REQUIRE(models::detail::layer_parts(s.model, 0).replicated == doctest::Approx(2 * h));
  REQUIRE(low.sp_grad_allreduce_bytes.size() == 4);
  for (int r = 0; r < 4; ++r) {
    INFO("rank " << r);
    const double want = (20 * 2 * h + (r == 3 ? h : 0.0)) * 4;
    CHECK(low.sp_grad_allreduce_bytes[static_cast<std::size_t>(r)] == doctest::Approx(want).epsilon(1e-12));
  }
  const auto res = testing::run_with_timeline(s);
  const auto ar = testing::tasks_named(res, "sp grads all-reduce");
  REQUIRE(ar.size() == 4);
  const auto& tl = *res.timeline;
  const auto* cal = s.calibration ? &*s.calibration : nullptr;
  hardware::Group tp;   // one HGX node: 8 GPUs, one NVLink domain
  tp.size = 8;
  tp.domains = 1;
  tp.per_domain = 8;
  for (sim::TaskId t : ar) {
    const int r = rank_of(res, t);
    INFO("rank " << r);
    const double bytes = low.sp_grad_allreduce_bytes[static_cast<std::size_t>(r)];
    const double want =
        hardware::collective_time(hardware::Collective::all_reduce, bytes, tp, s.hardware, hardware::AlgoChoice::auto_, cal).seconds;
    // The task's duration is the collective's time rounded to the nearest ns (sim::checked_ns): within 0.5 ns
    // of it, bounded here by 1 ns. (A relative 1e-6 on ~19 us is 0.02 ns, below that rounding; with Approx's
    // default scale 1 it allowed 1 us.)
    CHECK(std::abs(static_cast<double>(res.graph->task(t).duration_ns) * 1e-9 - want) <= 1e-9);
    CHECK(res.graph->task(t).category == sim::Category::tp_comm);
    // After the rank's data-parallel reductions; its gradient norm (and so the optimizer step) after it.
    for (sim::TaskId d : testing::tasks_named(res, "dp grad reduce"))
      if (rank_of(res, d) == r) CHECK(tl.of(t).start >= tl.of(d).end);
    for (sim::TaskId n : testing::tasks_named(res, "grad norm"))
      if (rank_of(res, n) == r) CHECK(tl.of(n).start >= tl.of(t).end);
  }
  // The flatten before and the copy back after: one each per rank.
  CHECK(testing::tasks_named(res, "sp grads flatten").size() == 4);
  CHECK(testing::tasks_named(res, "sp grads copy back").size() == 4);
}

TEST_CASE("sequence parallelism's gradient all-reduce: none without sequence parallelism or without TP") {
  for (const std::vector<std::string>& sets :
       {std::vector<std::string>{"parallel.sequence_parallel=false"},
        std::vector<std::string>{"parallel.tp=1", "parallel.pp=4", "cluster.gpus=16", "training.global_batch=64"}}) {
    INFO(sets.front());
    const auto s = load(sets);
    const auto r = testing::run_with_timeline(s);
    CHECK(testing::tasks_named(r, "sp grads all-reduce").empty());
    CHECK(testing::tasks_named(r, "sp grads flatten").empty());
    const step::Lowered low = step::lower(s, {});
    for (double b : low.sp_grad_allreduce_bytes) CHECK(b == 0);
  }
}

TEST_CASE("sequence parallelism's gradient all-reduce: the router and MLA's down-projections are held whole too") {
  // DeepSeek-V3 shapes (MLA, a router per MoE layer) at tp 2: the rank's whole-held parameters include the
  // router's and the down-projections' (ParamParts::replicated), far more than its norms.
  const config::Scenario s = testing::shipped_scenario(
      "2048xh800_deepseek_v3.toml", {"parallel.tp=2", "parallel.sequence_parallel=true", "parallel.ep=32", "cluster.gpus=2048"});
  REQUIRE(s.parallel.tp == 2);
  const step::Lowered low = step::lower(s, {});
  // An upper bound on any rank's norms' gradient bytes: two of `hidden` per layer of the whole model, 4 bytes.
  const double norms_only = 2.0 * s.model.hidden * s.model.layers * 4;
  double most = 0;
  for (double b : low.sp_grad_allreduce_bytes) most = std::max(most, b);
  CHECK(most > 20 * norms_only);   // per MoE layer ~17M whole-held parameters against ~16k of norms
}

TEST_CASE("sequence parallelism's gradient all-reduce on the sharded path: Megatron's conventions have it, PyTorch's FSDP not") {
  // Megatron-FSDP and the bucketed ZeRO-2 path run Megatron's finalize_model_grads; PyTorch's FSDP with TP reduces
  // those gradients inside the backward (DTensor), which is not modelled.
  struct Case {
    std::vector<std::string> sets;
    bool want;
  };
  const Case cases[] = {
      {{"parallel.zero_stage=2"}, true},
      {{"parallel.zero_stage=3", "features.megatron_fsdp=true"}, true},
      {{"parallel.zero_stage=3"}, false},
  };
  for (const Case& c : cases) {
    INFO(c.sets.back());
    const auto s = load(c.sets);
    const auto r = testing::run_with_timeline(s);
    CHECK(testing::tasks_named(r, "sp grads all-reduce").size() == (c.want ? 4u : 0u));
    const step::Lowered low = step::lower(s, {});
    CHECK((low.sp_grad_allreduce_bytes[0] > 0) == c.want);
    // On the sharded path the rank's fp32 shard of those gradients (over dp = 4 here), as the embedding
    // group's all-reduce there: rank 0's 20 layers' two norms of `hidden`.
    if (c.want) CHECK(low.sp_grad_allreduce_bytes[0] == doctest::Approx(4.0 * 20 * 2 * s.model.hidden / s.parallel.shard()));
  }
}
