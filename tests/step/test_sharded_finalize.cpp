// The end of a ZeRO-2/3 / FSDP / HSDP / offload step (step/fsdp.cpp, add_sharded_reduce_and_optimizer):
// the gradient norm over each rank's shard, its all-reduce over every rank before any optimizer step,
// torch's clip multiply where the framework always scales (FSDP1 / FSDP2), none where Megatron's
// convention holds; the tied embedding's all-reduce between the first and the last pipeline stage; the
// MTP modules in the last stage's units. docs/fsdp.md "The end of the step".
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "models/params.h"
#include "step/lower.h"
#include "step/simulate.h"
#include "tests/shipped_scenario.h"
#include "tests/step/fsdp_fixture.h"
#include "tests/step/graph_helpers.h"

using namespace mfusim;

namespace {



config::Scenario scenario(const std::vector<std::string>& sets = {}) { return testing::fsdp_fixture(sets); }

int rank_of(const step::StepResult& r, sim::TaskId t) { return r.graph->streams()[r.graph->task(t).stream].rank; }

int count(const step::StepResult& r, const std::string& name) {
  return static_cast<int>(testing::tasks_named(r, name).size());
}

// The task of this name on rank `rank` (the first one).
sim::TaskId on_rank(const step::StepResult& r, const std::string& name, int rank) {
  for (sim::TaskId t : testing::tasks_named(r, name))
    if (rank_of(r, t) == rank) return t;
  return -1;
}

bool warns_tied(const step::StepResult& r) {
  for (const auto& w : r.warnings)
    if (w.find("tied embeddings") != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("ZeRO-3 on a pipeline: each rank's gradient norm, one all-reduce of it, torch's clip multiply, then Adam") {
  // 8 pipeline ranks of 2 GPUs (dp 2) simulated: every rank a pipeline stage.
  const auto r = testing::run_with_timeline(scenario({"parallel.pp=8", "training.global_batch=32"}));
  const int gpus = r.graph->ranks();
  REQUIRE(gpus == 8);
  REQUIRE(count(r, "grad norm") == gpus);
  REQUIRE(count(r, "grad-norm all-reduce") == gpus);
  REQUIRE(count(r, "grad clip") == gpus);   // FSDP2 (torchtitan): clip_grads_with_norm_ always multiplies
  REQUIRE(count(r, "optimizer step") == gpus);
  const auto& tl = *r.timeline;
  std::int64_t last_norm = 0;
  for (sim::TaskId n : testing::tasks_named(r, "grad norm")) last_norm = std::max(last_norm, tl.of(n).end.ns);
  for (int rank = 0; rank < gpus; ++rank) {
    CAPTURE(rank);
    const sim::TaskId norm = on_rank(r, "grad norm", rank), ar = on_rank(r, "grad-norm all-reduce", rank);
    const sim::TaskId clip = on_rank(r, "grad clip", rank), opt = on_rank(r, "optimizer step", rank);
    REQUIRE(norm >= 0);
    REQUIRE(ar >= 0);
    REQUIRE(clip >= 0);
    REQUIRE(opt >= 0);
    // The norm reads the rank's gradient shard once its reduce-scatters are done.
    std::int64_t reduced = 0;
    for (sim::TaskId d : testing::tasks_named(r, "fsdp reduce-scatter"))
      if (rank_of(r, d) == rank) reduced = std::max(reduced, tl.of(d).end.ns);
    CHECK(reduced > 0);
    CHECK(tl.of(norm).start.ns >= reduced);
    // The all-reduce waits for every rank's norm (a synchronisation point), the multiply for the
    // all-reduce, the optimizer step for the multiply.
    CHECK(tl.of(ar).start.ns >= last_norm);
    CHECK(tl.of(clip).start >= tl.of(ar).end);
    CHECK(tl.of(opt).start >= tl.of(clip).end);
    // So the optimizer step starts at least the norm kernel, the all-reduce and the multiply after the
    // rank's last reduce-scatter (before this, it followed the reduce-scatter directly).
    const std::int64_t chain = r.graph->task(norm).duration_ns + r.graph->task(ar).duration_ns + r.graph->task(clip).duration_ns;
    CHECK(chain > 0);
    CHECK(tl.of(opt).start.ns - reduced >= chain);
    // The multiply reads and writes the fp32 shard (8 bytes per parameter), the norm reads it (4): longer.
    CHECK(r.graph->task(clip).duration_ns > r.graph->task(norm).duration_ns);
  }
}

TEST_CASE("sharded step: the clip multiply follows the framework (FSDP1 and FSDP2 always, Megatron-FSDP and ZeRO-2 never); offload's host Adam waits for the norm") {
  struct Case {
    const char* what;
    std::vector<std::string> sets;
    bool multiply;
  };
  const Case cases[] = {
      {"FSDP2 (torchtitan)", {}, true},
      {"FSDP1 (fms-fsdp, llm-foundry)", {"features.fsdp_version=1"}, true},
      {"HSDP, FSDP2", {"parallel.shard_degree=8"}, true},
      {"Megatron-FSDP", {"features.megatron_fsdp=true"}, false},
      {"ZeRO-2 (Megatron's buckets)", {"parallel.zero_stage=2"}, false},
      {"ZeRO-3 with optimizer offload", {"features.offload=\"optimizer\""}, false},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    const auto r = testing::run_with_timeline(scenario(c.sets));
    // (one data-parallel rank simulated: pp = 1)
    REQUIRE(r.graph->ranks() == 1);
    CHECK(count(r, "grad norm") == 1);
    CHECK(count(r, "grad-norm all-reduce") == 1);
    CHECK(count(r, "grad clip") == (c.multiply ? 1 : 0));
  }
  // Offload: the host's Adam (the step's optimizer) starts after the rank's norm all-reduce.
  const auto off = testing::run_with_timeline(scenario({"features.offload=\"optimizer\""}));
  for (int rank = 0; rank < off.graph->ranks(); ++rank) {
    const sim::TaskId ar = on_rank(off, "grad-norm all-reduce", rank), adam = on_rank(off, "host adam", rank);
    REQUIRE(ar >= 0);
    REQUIRE(adam >= 0);
    CHECK(off.timeline->of(adam).start >= off.timeline->of(ar).end);
    // The gradient shard's copy to the host does not wait for the norm's all-reduce (only the host's Adam does).
    const sim::TaskId down = on_rank(off, "offload grads to host", rank);
    REQUIRE(down >= 0);
    CHECK(off.timeline->of(down).start <= off.timeline->of(ar).start);
  }
}

TEST_CASE("a one-GPU sharded step has no gradient norm, no all-reduce of it and no clip (the single-GPU rows ran without)") {
  for (const char* stage : {"parallel.zero_stage=3", "parallel.zero_stage=2"}) {
    CAPTURE(stage);
    const auto r = testing::run_with_timeline(scenario({"cluster.gpus=1", "training.global_batch=1", stage}));
    CHECK(count(r, "optimizer step") == 1);
    CHECK(count(r, "grad norm") == 0);
    CHECK(count(r, "grad-norm all-reduce") == 0);
    CHECK(count(r, "grad clip") == 0);
  }
}

TEST_CASE("ZeRO-3 on a pipeline with tied embeddings: the first and last stage all-reduce their shard of the embedding's gradient") {
  // GPT-3 175B on 1024 A100: tied embeddings, tp 8, pp 8, dp 16.
  // (Megatron-FSDP: Megatron's finalize_model_grads; PyTorch's FSDP has none and warns: test_tied_embedding.cpp)
  const config::Scenario s = testing::shipped_scenario(
      "1024xa100_gpt3_175b.toml", {"parallel.zero_stage=3", "parallel.distributed_optimizer=true", "features.megatron_fsdp=true"});
  REQUIRE(s.model.tied_embeddings);
  REQUIRE(s.parallel.pp == 8);
  REQUIRE(s.parallel.tp == 8);
  const int dp = s.parallel.dp;
  REQUIRE(dp == 16);
  const auto r = testing::run_with_timeline(s);
  CHECK_FALSE(warns_tied(r));
  const auto ar = testing::tasks_named(r, "embedding grads all-reduce");
  REQUIRE(ar.size() == 2);
  std::vector<int> ranks = {rank_of(r, ar[0]), rank_of(r, ar[1])};
  std::sort(ranks.begin(), ranks.end());
  CHECK(ranks.front() == 0);
  CHECK(ranks.back() == r.graph->ranks() - 1);
  const auto& tl = *r.timeline;
  CHECK(tl.of(ar[0]).start == tl.of(ar[1]).start);   // one collective: both sides together
  // The rank's shard of the fp32 gradient of its vocabulary shard (vocab / tp x hidden): 1/dp of the
  // unsharded path's bytes.
  const double bytes = static_cast<double>(s.model.vocab) / 8 * s.model.hidden * 4 / dp;
  CHECK(step::lower(s, {}).embedding_allreduce_bytes == doctest::Approx(bytes).epsilon(1e-12));
  // After both ends' reduce-scatters; each end's gradient norm waits for it.
  for (sim::TaskId t : ar) {
    const int rk = rank_of(r, t);
    for (sim::TaskId d : testing::tasks_named(r, "fsdp reduce-scatter"))
      if (rank_of(r, d) == ranks.front() || rank_of(r, d) == ranks.back()) CHECK(tl.of(t).start >= tl.of(d).end);
    const sim::TaskId norm = on_rank(r, "grad norm", rk);
    REQUIRE(norm >= 0);
    CHECK(tl.of(norm).start >= tl.of(t).end);
  }
  // Untied: none, and no warning either way.
  const auto u = testing::run_with_timeline(
      testing::shipped_scenario("1024xa100_gpt3_175b.toml", {"parallel.zero_stage=3", "parallel.distributed_optimizer=true",
                                                             "features.megatron_fsdp=true", "model.tied_embeddings=false"}));
  CHECK(testing::tasks_named(u, "embedding grads all-reduce").empty());
  CHECK_FALSE(warns_tied(u));
  // ZeRO-2 (the bucketed path) builds it too.
  const auto z2 = testing::run_with_timeline(testing::shipped_scenario("1024xa100_gpt3_175b.toml", {"parallel.zero_stage=2", "parallel.distributed_optimizer=true"}));
  CHECK(testing::tasks_named(z2, "embedding grads all-reduce").size() == 2);
  CHECK_FALSE(warns_tied(z2));
}

TEST_CASE("MTP modules (mtp_depth 1) on the last stage: in the sharded path's reductions and gathers (ZeRO-3's head unit, ZeRO-2's buckets)") {
  // Llama-2-7B on 16 GPUs, pp 2 (dp 8): the last stage's rank holds the output head and, with mtp_depth 1,
  // one MTP module (two RMSNorms, the 2h -> h projection, one block).
  const std::vector<std::string> base = {"parallel.pp=2", "training.global_batch=16"};
  const config::Scenario s1 = scenario([&] {
    auto v = base;
    v.push_back("model.mtp_depth=1");
    return v;
  }());
  const double mtp = models::detail::mtp_parts(s1.model).total();   // tp 1, ep 1: all of it on the rank
  REQUIRE(mtp > 2e8);
  struct Case {
    const char* what;
    std::vector<std::string> sets;
  };
  const Case cases[] = {
      {"ZeRO-3", {}},
      {"ZeRO-2, overlapped reduction and gather", {"parallel.zero_stage=2"}},
      {"ZeRO-2, one reduction at the end", {"parallel.zero_stage=2", "features.overlap_grad_reduce=false"}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    auto sets0 = base, sets1 = base;
    sets0.insert(sets0.end(), c.sets.begin(), c.sets.end());
    sets1.insert(sets1.end(), c.sets.begin(), c.sets.end());
    sets1.push_back("model.mtp_depth=1");
    const auto a = step::lower(scenario(sets0), {}), b = step::lower(scenario(sets1), {});
    REQUIRE(a.sharded_grad_bytes.size() == 2);
    // The first stage's rank is unchanged; the last stage's reduces the MTP module's fp32 gradient once
    // more (pp > 1: one reduce-scatter per unit or bucket per step).
    CHECK(b.sharded_grad_bytes[0] == doctest::Approx(a.sharded_grad_bytes[0]).epsilon(1e-12));
    CHECK(b.sharded_grad_bytes[1] - a.sharded_grad_bytes[1] == doctest::Approx(4.0 * mtp).epsilon(1e-9));
    // and gathers its bf16 parameters with the head: at least once (ZeRO-2's overlapped gather: once;
    // ZeRO-3's head unit: once per gather of that unit).
    const double extra = b.sharded_gather_bytes[1] - a.sharded_gather_bytes[1];
    CHECK(extra >= 2.0 * mtp * (1 - 1e-9));
    const double gathers = extra / (2.0 * mtp);
    CHECK(gathers == doctest::Approx(std::round(gathers)).epsilon(1e-9));
  }
  // ZeRO-2's overlapped buckets reduce every gradient the rank holds once, as the single reduction at
  // the end does (the embedding on the first stage's rank, the final norm, head and MTP module on the
  // last one's), and gather every parameter once, as the gather after the optimizer would.
  auto with = [&](std::vector<std::string> v) {
    v.insert(v.begin(), base.begin(), base.end());
    v.push_back("parallel.zero_stage=2");
    v.push_back("model.mtp_depth=1");
    return step::lower(scenario(v), {});
  };
  const auto overlapped = with({}), at_end = with({"features.overlap_grad_reduce=false", "features.overlap_param_gather=false"});
  for (int r = 0; r < 2; ++r) {
    CAPTURE(r);
    CHECK(overlapped.sharded_grad_bytes[r] == doctest::Approx(at_end.sharded_grad_bytes[r]).epsilon(1e-9));
    CHECK(overlapped.sharded_grad_bytes[r] > 0);
    CHECK(overlapped.sharded_gather_bytes[r] == doctest::Approx(at_end.sharded_gather_bytes[r]).epsilon(1e-9));
  }
}

TEST_CASE("ZeRO-2 with the overlapped parameter gather: a rank without layers still gathers its head (or embedding)") {
  // Llama-2-7B, pp 4, the last stage holding only the final norm and output head.
  const auto s = scenario({"parallel.zero_stage=2", "parallel.pp=4", "training.global_batch=32",
                           "parallel.stage_layers=[11, 11, 10, 0]", "features.overlap_param_gather=true",
                           "features.overlap_grad_reduce=true"});
  REQUIRE(s.parallel.pp == 4);
  const step::Lowered low = step::lower(s, {});
  REQUIRE(low.stage_layers.back().empty());
  REQUIRE(low.sharded_gather_bytes.size() == 4);
  // The head's bf16 parameters (vocab x hidden, untied) and the final norm, gathered over the shard group.
  const double head = static_cast<double>(s.model.vocab) * s.model.hidden + s.model.hidden;
  CHECK(low.sharded_gather_bytes[3] == doctest::Approx(2.0 * head).epsilon(1e-9));
}
