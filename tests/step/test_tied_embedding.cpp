// Megatron's all-reduce of a tied embedding's gradients between the first and the last pipeline stage
// (finalize_model_grads -> _allreduce_word_embedding_grads; step/data_parallel.cpp): after the
// data-parallel gradient sync, before the gradient norm, over the embedding group of two ranks.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "hardware/collectives.h"
#include "step/lower.h"
#include "tests/shipped_scenario.h"
#include "tests/step/graph_helpers.h"

using namespace mfusim;

namespace {
config::Scenario load(const std::vector<std::string>& sets = {}) {
  return testing::shipped_scenario("1024xa100_gpt3_175b.toml", sets);   // GPT-3: tied, tp 8, pp 8, vpp 2
}
int rank_of(const step::StepResult& r, sim::TaskId t) { return r.graph->streams()[r.graph->task(t).stream].rank; }
}  // namespace

TEST_CASE("tied embeddings under pipeline parallelism: the first and last stage all-reduce the embedding's gradients") {
  const config::Scenario s = load();
  REQUIRE(s.model.tied_embeddings);
  REQUIRE(s.parallel.pp == 8);
  const auto r = testing::run_with_timeline(s);
  const auto ar = testing::tasks_named(r, "embedding grads all-reduce");
  REQUIRE(ar.size() == 2);
  std::vector<int> ranks = {rank_of(r, ar[0]), rank_of(r, ar[1])};
  std::sort(ranks.begin(), ranks.end());
  CHECK(ranks == std::vector<int>{0, 7});
  // The whole fp32 main_grad of a rank's vocabulary shard (vocab / 8 x 12288), both ends the same
  // collective: on the NICs (the two GPUs are 7 x 8 x 16 ranks apart, other nodes), its time the
  // collective model's for two ranks in two domains.
  const step::Lowered low = step::lower(s, {});
  REQUIRE(s.model.hidden == 12288);
  const double bytes = static_cast<double>(s.model.vocab) / 8 * 12288 * 4;
  CHECK(low.embedding_allreduce_bytes == doctest::Approx(bytes).epsilon(1e-12));
  hardware::Group g;
  g.size = 2;
  g.domains = 2;
  g.per_domain = 1;
  const double want = hardware::collective_time(hardware::Collective::all_reduce, bytes, g, s.hardware).seconds;
  CAPTURE(want);
  for (sim::TaskId t : ar) CHECK(static_cast<double>(r.graph->task(t).duration_ns) * 1e-9 == doctest::Approx(want).epsilon(1e-6));
  CHECK(want > 5e-3);   // ~315 MB over one 200 Gb/s NIC
  // Each side starts once both ends' gradients are synchronised (their DP reductions and the last
  // stage's loss all-reduce done), and each end's gradient norm, and so every rank's optimizer step,
  // waits for it.
  const auto& tl = *r.timeline;
  std::int64_t synced = 0;
  for (const char* name : {"dp grad reduce", "loss all-reduce"})
    for (sim::TaskId d : testing::tasks_named(r, name))
      if (rank_of(r, d) == 0 || rank_of(r, d) == 7) synced = std::max(synced, tl.of(d).end.ns);
  CHECK(synced > 0);
  for (sim::TaskId t : ar) CHECK(tl.of(t).start.ns >= synced);
  CHECK(tl.of(ar[0]).start == tl.of(ar[1]).start);   // one collective: both sides together, not one after the other
  for (sim::TaskId n : testing::tasks_named(r, "grad norm")) {
    const int rk = rank_of(r, n);
    if (rk != 0 && rk != 7) continue;
    CHECK(tl.of(n).start >= tl.of(ar[0]).end);
  }
  for (sim::TaskId o : testing::tasks_named(r, "optimizer step"))
    CHECK(tl.of(o).start >= std::min(tl.of(ar[0]).end, tl.of(ar[1]).end));
  // Untied: no such all-reduce, and the step is shorter by its time (it runs after every rank's last
  // reduction, on the step's critical path, once).
  const auto u = testing::run_with_timeline(load({"model.tied_embeddings=false"}));
  CHECK(testing::tasks_named(u, "embedding grads all-reduce").empty());
  CHECK(r.step_time_s - u.step_time_s == doctest::Approx(want).epsilon(0.05).scale(0));
  CHECK(step::lower(load({"model.tied_embeddings=false"}), {}).embedding_allreduce_bytes == 0);
}

TEST_CASE("tied embeddings: the pair's links follow Megatron's placement of the first and last stage") {
  struct Case {
    const char* what;
    std::vector<std::string> sets;
    int tp, dp;
    bool crosses;
  };
  const Case cases[] = {
      // pp 2 x tp 4 on 8 GPUs: the first stage GPUs 0-3, the last 4-7, one domain of 8: NVLink.
      {"8 GPUs, one HGX node", {"cluster.gpus=8", "parallel.tp=4", "parallel.pp=2", "training.global_batch=8"}, 4, 1, false},
      // Domains of 72 (GB200 NVL72), tp 8 x dp 8 x pp 2 = 128 GPUs: the peers are 64 apart, under 72, yet most
      // pairs (8..63 with 72..127) straddle a domain boundary: over the NICs.
      {"128 GPUs of NVL72, pp 2",
       {"hardware=gb200-nvl72", "cluster.gpus=128", "parallel.tp=8", "parallel.pp=2", "training.global_batch=64"}, 8, 8, true},
      // 64 GPUs of one domain of 72, tp 8, pp 8: the first stage is GPUs 0-7, the last 56-63: NVLink (the
      // middle stages' GPUs are in no pair: 16 + 56 = 72 would cross).
      {"64 GPUs of NVL72, pp 8",
       {"hardware=gb200-nvl72", "cluster.gpus=64", "parallel.tp=8", "parallel.pp=8", "training.global_batch=16"}, 8, 1, false},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    auto sets = c.sets;
    sets.insert(sets.end(), {"parallel.vpp=1", "schedule.name=1f1b", "features.attention=flash"});
    const auto s = load(sets);
    REQUIRE(s.parallel.dp == c.dp);
    const auto r = testing::run_with_timeline(s);
    const auto ar = testing::tasks_named(r, "embedding grads all-reduce");
    REQUIRE(ar.size() == 2);
    hardware::Group g;
    g.size = 2;
    g.domains = c.crosses ? 2 : 1;
    g.per_domain = c.crosses ? 1 : 2;
    const double bytes = static_cast<double>(s.model.vocab) / c.tp * 12288 * 4;
    const auto* cal = s.calibration ? &*s.calibration : nullptr;
    const double want =
        hardware::collective_time(hardware::Collective::all_reduce, bytes, g, s.hardware, hardware::AlgoChoice::auto_, cal).seconds;
    // The task's duration is the collective's time rounded to the nearest ns (sim::checked_ns): within 0.5 ns
    // of it, bounded here by 1 ns. (A relative 1e-6 on 0.4 ms is 0.4 ns, at that rounding; with Approx's
    // default scale 1 it allowed 1 us.)
    CHECK(std::abs(static_cast<double>(r.graph->task(ar[0]).duration_ns) * 1e-9 - want) <= 1e-9);
  }
}

TEST_CASE("tied embeddings on a pipeline under ZeRO-3: built under Megatron-FSDP; PyTorch's FSDP warns") {
  // (tests/step/test_sharded_finalize.cpp checks its bytes and dependencies)
  auto warned = [](const step::StepResult& r) {
    for (const auto& w : r.warnings)
      if (w.find("tied embeddings") != std::string::npos) return true;
    return false;
  };
  const auto m = testing::run_with_timeline(
      load({"parallel.distributed_optimizer=true", "parallel.zero_stage=3", "features.megatron_fsdp=true"}));
  CHECK(testing::tasks_named(m, "embedding grads all-reduce").size() == 2);
  CHECK_FALSE(warned(m));
  // PyTorch's FSDP runs no finalize_model_grads: no such all-reduce, and the step says it is not modelled.
  const auto t = testing::run_with_timeline(load({"parallel.distributed_optimizer=true", "parallel.zero_stage=3"}));
  CHECK(testing::tasks_named(t, "embedding grads all-reduce").empty());
  CHECK(warned(t));
}

TEST_CASE("tied embeddings: none where one rank holds both ends (DualPipeV) or there is no pipeline") {
  for (const std::vector<std::string>& sets :
       {std::vector<std::string>{"schedule.name=dualpipev", "parallel.vpp=1", "parallel.pp=8"},
        std::vector<std::string>{"schedule.name=1f1b", "parallel.pp=1", "parallel.vpp=1"}}) {
    INFO(sets.front());
    const auto r = testing::run_with_timeline(load(sets));
    CHECK(testing::tasks_named(r, "embedding grads all-reduce").empty());
  }
}
