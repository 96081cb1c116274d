// ZeRO-2/3 with expert parallelism (step/fsdp.cpp): a layer's routed experts are their own FSDP module,
// sharded over the members of the shard group that hold the same experts (shard x cp / ep of them, as
// models::sharded_static_memory holds them); their gathers and reductions run over that group, the dense
// parameters' over the shard group. Closed forms (hardware::collective_time on the groups, the model's
// parameter parts) are the oracles.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "hardware/collectives.h"
#include "models/params.h"
#include "step/simulate.h"
#include "tests/step/graph_helpers.h"

using namespace mfusim;

namespace {

// Mixtral 8x7B on 16 H100 (2 NVLink domains of 8), ep 4 over the data-parallel ranks, ZeRO-3 over all 16.
constexpr const char* kMoeFsdp = R"(
name = "moe fsdp fixture"
model = "mixtral-8x7b"
hardware = "h100-sxm"
[cluster]
gpus = 16
[training]
seq_len = 4096
global_batch = 16
micro_batch = 1
[parallel]
tp = 1
pp = 1
ep = 4
zero_stage = 3
[features]
recompute = "full"
)";

config::Scenario moe(const std::vector<std::string>& sets = {}) {
  return testing::fixture_scenario(kMoeFsdp, std::string(MFUSIM_TEST_DIR) + "/step/moe_fsdp_fixture.toml", sets);
}

std::vector<double> durations(const step::StepResult& r, const std::string& name) {
  std::vector<double> out;
  for (sim::TaskId t : testing::tasks_named(r, name)) out.push_back(static_cast<double>(r.graph->task(t).duration_ns) * 1e-9);
  return out;
}

double coll(const config::Scenario& s, hardware::Collective c, double bytes, const hardware::Group& g) {
  return hardware::collective_time(c, bytes, g, s.hardware, hardware::AlgoChoice::auto_,
                                   s.calibration ? &*s.calibration : nullptr)
      .seconds;
}

}  // namespace

TEST_CASE("ZeRO-3 with ep: each MoE unit's routed experts are gathered and reduced over the expert shard group") {
  const auto s = moe();
  REQUIRE(s.parallel.ep == 4);
  REQUIRE(s.parallel.dp == 16);
  const auto r = testing::run_with_timeline(s);
  // 32 MoE blocks + embedding + head: 34 forward gathers and 31 backward ones (the root units and the last
  // block stay gathered); the experts' gathers go with the blocks' alone.
  const auto dense = durations(r, "fsdp all-gather");
  const auto expert = durations(r, "fsdp expert all-gather");
  CHECK(dense.size() == 65);
  CHECK(expert.size() == 63);
  // The expert shard group: the 16 / 4 = 4 ranks with the same experts, every 4th rank: 2 in each node.
  const hardware::Group eg{4, 2, 2};
  const double experts_per_rank = models::detail::layer_parts(s.model, 0).experts / s.parallel.ep;
  const double want = coll(s, hardware::Collective::all_gather, 2.0 * experts_per_rank, eg);
  for (double t : expert) CHECK(t == doctest::Approx(want).epsilon(1e-6));
  // (Not faster for being smaller: over the whole shard group, 8 ranks in each node, the same bytes take a third of
  // the time, since each rank's NIC then carries a sixteenth of them, here a quarter.)
  CHECK(coll(s, hardware::Collective::all_gather, 2.0 * experts_per_rank, hardware::Group{16, 2, 8}) < want);
  // A block's dense gather carries its dense parameters only (attention, router, norms).
  const auto p = models::detail::layer_parts(s.model, 0);
  const double block_dense = coll(s, hardware::Collective::all_gather, 2.0 * (p.tp_sharded + p.replicated), hardware::Group{16, 2, 8});
  int blocks = 0;
  for (double t : dense)
    if (std::abs(t - block_dense) <= 2e-9) ++blocks;   // (durations in whole nanoseconds)
  CHECK(blocks == 63);
  // One expert reduce-scatter per block after its backward, over the same group, in fp32 (reduce_fp32).
  const auto ers = durations(r, "fsdp expert reduce-scatter");
  CHECK(ers.size() == 32);
  const double rs = coll(s, hardware::Collective::reduce_scatter, (s.features.reduce_fp32 ? 4.0 : 2.0) * experts_per_rank, eg);
  for (double t : ers) CHECK(t == doctest::Approx(rs).epsilon(1e-6));
  CHECK(durations(r, "fsdp reduce-scatter").size() == 34);   // every unit's dense part
}

TEST_CASE("ZeRO-3 with ep = the shard group: each rank holds its experts whole, nothing of them is gathered or reduced") {
  const auto s = moe({"parallel.ep=8", "cluster.gpus=8", "training.global_batch=8"});
  REQUIRE(s.parallel.dp == 8);
  const auto r = testing::run_with_timeline(s);
  CHECK(testing::tasks_named(r, "fsdp expert all-gather").empty());
  CHECK(testing::tasks_named(r, "fsdp expert reduce-scatter").empty());
  CHECK(testing::tasks_named(r, "fsdp all-gather").size() == 65);   // the dense parts still are
}

TEST_CASE("ZeRO-2 with ep: the experts' gradient buckets are reduce-scattered over the expert shard group") {
  const auto s = moe({"parallel.zero_stage=2"});
  const auto r = testing::run_with_timeline(s);
  // A block's routed experts on a rank (2 of Mixtral's 8, 352M parameters) fill more than a bucket
  // (step::bucket_params: 40M at dp 16), so each block's backward flushes its own expert bucket: one
  // reduce-scatter of exactly that block's expert gradients per block, over the group of 4.
  const double experts_per_rank = models::detail::layer_parts(s.model, 0).experts / s.parallel.ep;
  REQUIRE(experts_per_rank > 40e6);
  const auto ers = durations(r, "fsdp expert reduce-scatter");
  CHECK(ers.size() == 32);
  const double w = s.features.reduce_fp32 ? 4.0 : 2.0;
  const double want = coll(s, hardware::Collective::reduce_scatter, w * experts_per_rank, hardware::Group{4, 2, 2});
  for (double t : ers) CHECK(t == doctest::Approx(want).epsilon(1e-6));
}

TEST_CASE("HSDP with ep above the shard group: each rank holds its experts whole and all-reduces them with their other holders") {
  // shard_degree 2 < ep 4: no two ranks of a shard group hold the same experts, so nothing of them is
  // reduce-scattered; their gradients are all-reduced over the 16 / 4 = 4 ranks that hold them (every 4th
  // rank, 2 in each node), not over the dense parameters' replica group of 8 (one rank of each shard group).
  const auto s = moe({"parallel.shard_degree=2"});
  const auto r = testing::run_with_timeline(s);
  CHECK(testing::tasks_named(r, "fsdp expert all-gather").empty());
  CHECK(testing::tasks_named(r, "fsdp expert reduce-scatter").empty());
  const double experts_per_rank = models::detail::layer_parts(s.model, 0).experts / s.parallel.ep;
  const double w = s.features.reduce_fp32 ? 4.0 : 2.0;
  const double expert_ar = coll(s, hardware::Collective::all_reduce, w * experts_per_rank, hardware::Group{4, 2, 2});
  const auto ars = durations(r, "hsdp all-reduce");
  int expert = 0;
  for (double t : ars)
    if (t == doctest::Approx(expert_ar).epsilon(1e-6)) ++expert;
  CHECK(expert == 32);            // one per block
  CHECK(ars.size() == 32 + 34);   // and every unit's dense shard over the 8 replicas
}

TEST_CASE("ZeRO-2/3 with ep: ep and the shard group must divide one another") {
  CHECK(testing::config_error_of([] { moe({"parallel.ep=8", "cluster.gpus=24", "parallel.tp=2", "training.global_batch=12"}); })
            .find("must divide one another") != std::string::npos);
  CHECK(testing::config_error_of([] { moe({"parallel.ep=8", "cluster.gpus=24", "parallel.tp=2", "training.global_batch=12",
                                           "parallel.zero_stage=1"}); }) == "(no error)");
}

TEST_CASE("ZeRO-3 with ep and MTP: the MTP module's routed experts go with the head unit, over the expert shard group") {
  const auto base = testing::run_with_timeline(moe());
  const auto r = testing::run_with_timeline(moe({"model.mtp_depth=1"}));
  // The head unit (gathered once: FSDP2's root stays gathered to its backward) now has experts: one more expert
  // gather and one more expert reduce-scatter, each of the MTP block's experts on the rank.
  CHECK(testing::tasks_named(r, "fsdp expert all-gather").size() == testing::tasks_named(base, "fsdp expert all-gather").size() + 1);
  CHECK(testing::tasks_named(r, "fsdp expert reduce-scatter").size() ==
        testing::tasks_named(base, "fsdp expert reduce-scatter").size() + 1);
  CHECK(testing::tasks_named(r, "fsdp all-gather").size() == testing::tasks_named(base, "fsdp all-gather").size());
}
