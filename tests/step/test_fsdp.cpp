// ZeRO-2/3, FSDP units and HSDP on the simulated timeline (docs/fsdp.md): the
// collectives per unit per pass, the two-level HSDP reduction, the sharded
// states, and ZeRO-1 spelled two ways. Every number is read off a simulated
// step; closed forms are the oracles.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "config/loader.h"
#include "hardware/interference.h"
#include "models/flops.h"
#include "models/memory.h"
#include "models/params.h"
#include "models/rank_shape.h"
#include "report/json.h"
#include "step/simulate.h"
#include "study/diagnose.h"
#include "tests/step/fsdp_fixture.h"
#include "tests/step/graph_helpers.h"
#include "study/plan.h"

using namespace mfusim;

namespace {

const std::string kTests = MFUSIM_TEST_DIR;


config::Scenario scenario(const std::vector<std::string>& sets = {}) { return testing::fsdp_fixture(sets); }

step::StepResult run(const config::Scenario& s) { return testing::run_with_timeline(s); }

double total_ns(const step::StepResult& r, const std::string& name) {
  double ns = 0;
  for (sim::TaskId t : testing::tasks_named(r, name)) ns += static_cast<double>(r.graph->task(t).duration_ns);
  return ns;
}

int count(const step::StepResult& r, const std::string& name) {
  return static_cast<int>(testing::tasks_named(r, name).size());
}

std::string error_of(const std::vector<std::string>& sets) {
  return testing::config_error_of([&] { scenario(sets); });
}

}  // namespace

TEST_CASE("FSDP: one all-gather per unit per pass with reshard_after_forward, one per unit without") {
  // Units: 32 transformer blocks + embedding + head = 34. With reshard_after_forward every unit is gathered
  // for its forward and again for its backward, except FSDP2's root units (embedding, head) and torchtitan's
  // last block, which stay gathered from their forward to their backward: 34 + 31 per micro-batch.
  const auto s = scenario();
  REQUIRE(s.parallel.zero() == 3);
  const auto r = run(s);
  CHECK(count(r, "fsdp all-gather") == 65);
  CHECK(count(r, "fsdp reduce-scatter") == 34);   // one per unit after its backward
  CHECK(count(r, "hsdp all-reduce") == 0);
  const auto kept = run(scenario({"features.reshard_after_forward=false"}));
  CHECK(count(kept, "fsdp all-gather") == 34);
  CHECK(count(kept, "fsdp reduce-scatter") == 34);
  // Two micro-batches (pp = 1: FSDP2 gathers and reduce-scatters every micro-batch).
  const auto two = run(scenario({"training.global_batch=32"}));
  CHECK(count(two, "fsdp all-gather") == 130);
  CHECK(count(two, "fsdp reduce-scatter") == 68);
}

TEST_CASE("FSDP: the gathers cost time and a fp8 all-gather halves their bytes") {
  const auto bf16 = run(scenario());
  const auto fp8 = run(scenario({"features.fp8_all_gather=true"}));
  double ag16 = 0, ag8 = 0;
  for (std::size_t i = 0; i < bf16.graph->size(); ++i)
    if (bf16.graph->name(static_cast<sim::TaskId>(i)) == "fsdp all-gather") ag16 += static_cast<double>(bf16.graph->task(static_cast<sim::TaskId>(i)).duration_ns);
  for (std::size_t i = 0; i < fp8.graph->size(); ++i)
    if (fp8.graph->name(static_cast<sim::TaskId>(i)) == "fsdp all-gather") ag8 += static_cast<double>(fp8.graph->task(static_cast<sim::TaskId>(i)).duration_ns);
  CHECK(ag16 > 0);
  CHECK(ag8 < 0.75 * ag16);
  CHECK(ag8 > 0.4 * ag16);
}

TEST_CASE("HSDP: reduce-scatter within the shard group, then all-reduce across replicas") {
  const auto r = run(scenario({"parallel.shard_degree=8"}));
  const int rs = count(r, "fsdp reduce-scatter");
  CHECK(rs == 34);
  CHECK(count(r, "hsdp all-reduce") == rs);
  // The states are sharded over 8 ranks, not 16: twice the per-GPU states of full sharding (the static
  // ones: the gradients are allocated by the backward, docs/fidelity.md section 2).
  const auto full = run(scenario());
  const double st8 = r.memory.params_gib + r.memory.optimizer_gib;
  const double st16 = full.memory.params_gib + full.memory.optimizer_gib;
  CHECK(st8 == doctest::Approx(2 * st16).epsilon(0.01));
}

TEST_CASE("ZeRO-3 memory per GPU: (params + grads + optimizer) / dp, plus the gathered units at the peak") {
  const auto s = scenario();
  const auto r = run(s);
  const double P = models::count_params(s.model).total;
  const double gib = 1024.0 * 1024.0 * 1024.0;
  // FSDP2 (fsdp_version 2, the default): the fp32 shard is the master (4) beside Adam's m, v (8): 12 bytes per
  // parameter over 16 ranks, static (run 35: 16.0 bytes per parameter with the gradients at the optimizer
  // step); the fp32 gradient shard (4) is allocated by the backward and freed by the optimizer step
  // (zero_grad set_to_none): the optimizer's release, and at the peak either none of it or all of it.
  const double states = r.memory.params_gib + r.memory.optimizer_gib;
  CHECK(r.memory.params_gib == doctest::Approx(4.0 * P / 16 / gib).epsilon(0.01));
  CHECK(states == doctest::Approx(12.0 * P / 16 / gib).epsilon(0.01));
  // Megatron-FSDP's layout (features.megatron_fsdp): a bf16 shard (2) beside the fp32 master and m, v (12).
  const auto mf = run(scenario({"features.megatron_fsdp=true"}));
  CHECK(mf.memory.params_gib == doctest::Approx(2.0 * P / 16 / gib).epsilon(0.01));
  CHECK(mf.memory.params_gib + mf.memory.optimizer_gib == doctest::Approx(14.0 * P / 16 / gib).epsilon(0.01));
  // PyTorch's FSDP1 (fsdp_version 1) keeps its flat fp32 shard as the master too (the bf16 copy it gathers from
  // is freed after each gather): FSDP2's 12 bytes.
  const auto v1 = run(scenario({"features.fsdp_version=1"}));
  CHECK(v1.memory.params_gib == doctest::Approx(4.0 * P / 16 / gib).epsilon(0.01));
  CHECK(v1.memory.params_gib + v1.memory.optimizer_gib == doctest::Approx(12.0 * P / 16 / gib).epsilon(0.01));
  const double shard = 4.0 * P / 16;
  auto released = [](const step::StepResult& x) {
    return static_cast<double>(x.graph->task(testing::tasks_named(x, "optimizer step").front()).memory_release);
  };
  CHECK(released(r) == doctest::Approx(shard).epsilon(0.001));
  CHECK((r.memory.grads_gib == doctest::Approx(0) || r.memory.grads_gib == doctest::Approx(shard / gib).epsilon(0.001)));
  // The peak holds at least one gathered block (2 bytes per parameter of a block) above the states.
  const double block = 2.0 * (P - 2.0 * 32000 * 4096) / 32 / gib;
  CHECK(r.memory.peak_gib > states + block);
  // ZeRO-2: parameters replicated (2 bytes each), gradients and optimizer sharded.
  const auto z2 = run(scenario({"parallel.zero_stage=2"}));
  CHECK(z2.memory.params_gib == doctest::Approx(2.0 * P / gib).epsilon(0.01));
  CHECK(z2.memory.grads_gib <= shard / gib * 1.001);
  CHECK(released(z2) == doctest::Approx(shard).epsilon(0.001));
  CHECK(count(z2, "fsdp all-gather") == 0);
}

TEST_CASE("zero_stage = 1 is distributed_optimizer = true; zero_stage = 0 is false") {
  const auto a = run(scenario({"parallel.zero_stage=1"}));
  auto sb = scenario({"parallel.zero_stage=1"});
  const auto plain = config::load_scenario_string(std::string(testing::kFsdpFixture).replace(std::string(testing::kFsdpFixture).find("zero_stage = 3"), 14, "distributed_optimizer = true"),
                                                  kTests + "/config/fsdp_fixture.toml", {}).base;
  REQUIRE(plain.parallel.zero() == 1);
  const auto b = run(plain);
  CHECK(a.step_time_s == b.step_time_s);
  CHECK(a.memory.peak_gib == b.memory.peak_gib);
  CHECK(a.tasks == b.tasks);
  const auto z0 = scenario({"parallel.zero_stage=0"});
  CHECK_FALSE(z0.parallel.distributed_optimizer);
  CHECK(sb.parallel.distributed_optimizer);
}

TEST_CASE("FSDP keys: contradictions and bad shard degrees are errors with a position") {
  const std::string e = error_of({"parallel.zero_stage=1", "parallel.distributed_optimizer=false"});
  CHECK(e.find("contradicts") != std::string::npos);
  // In the file: the error points at the zero_stage key (its value: line 14, column 14 of the fixture text).
  std::string text = testing::kFsdpFixture;
  text.replace(text.find("zero_stage = 3"), 14, "zero_stage = 2\ndistributed_optimizer = false");
  std::string in_file = "(no error)";
  try {
    config::load_scenario_string(text, kTests + "/config/fsdp_fixture.toml", {});
  } catch (const config::ConfigError& x) {
    in_file = x.what();
  }
  CAPTURE(in_file);
  CHECK(in_file.find("fsdp_fixture.toml:14:14: error: 'parallel.zero_stage' = 2 contradicts") != std::string::npos);
  CHECK(error_of({"parallel.shard_degree=3"}).find("does not divide dp=16") != std::string::npos);
  CHECK(error_of({"parallel.zero_stage=4"}).find("out of range") != std::string::npos);
  CHECK(error_of({"features.offload=\"params\"", "parallel.zero_stage=2"}).find("zero_stage = 3") != std::string::npos);
}

TEST_CASE("Offload: the optimizer's state leaves the GPU and the step gains the PCIe copies") {
  const auto on = run(scenario({"features.offload=\"optimizer\""}));
  const auto off = run(scenario());
  CHECK(on.memory.optimizer_gib == 0);
  CHECK(count(on, "offload grads to host") == 1);
  CHECK(on.step_time_s > off.step_time_s);   // 6 bytes per local parameter over 64 GB/s PCIe vs a 4 ms GPU Adam
}

TEST_CASE("plan: a ZeRO scenario's search covers zero_stage 1-3 and HSDP; the memory lower bound holds under ZeRO-3") {
  const auto base = scenario();
  const auto all = study::enumerate_layouts(base, 16);
  int z[4] = {0, 0, 0, 0}, hsdp = 0;
  for (const auto& s : all) {
    z[s.parallel.zero()] += 1;
    if (s.parallel.shard_degree > 0) ++hsdp;
  }
  CHECK(z[1] > 0);
  CHECK(z[2] == z[1]);
  CHECK(z[3] == z[1]);
  CHECK(hsdp > 0);
  // Megatron-FSDP as the base runs it: a Megatron-FSDP base's ZeRO-3 layouts stay Megatron-FSDP and its
  // ZeRO-1/2 ones are valid (without megatron_fsdp); from a ZeRO-2 base a Megatron block shards as
  // Megatron-FSDP (diagnose's lever), torchtitan's as FSDP2; an FSDP2 base stays FSDP2.
  for (const auto& s : all) CHECK_FALSE(s.features.megatron_fsdp);
  const auto mf = study::enumerate_layouts(scenario({"features.megatron_fsdp=true"}), 16);
  int mf3 = 0, mf12 = 0;
  for (const auto& s : mf) {
    CHECK(s.features.megatron_fsdp == (s.parallel.zero() == 3));
    for (const auto& d : config::validate(s)) CHECK(d.message.find("megatron_fsdp") == std::string::npos);
    (s.parallel.zero() == 3 ? mf3 : mf12) += 1;
  }
  CHECK(mf3 > 0);
  CHECK(mf12 == 2 * mf3);
  for (const auto& s : study::enumerate_layouts(scenario({"parallel.zero_stage=2"}), 16))
    CHECK(s.features.megatron_fsdp == (s.parallel.zero() == 3));
  for (const auto& s : study::enumerate_layouts(scenario({"parallel.zero_stage=2", "features.model_code=\"torchtitan\""}), 16))
    CHECK_FALSE(s.features.megatron_fsdp);
  // A Megatron scenario's search is unchanged: ZeRO-1 only.
  const auto megatron = study::enumerate_layouts(scenario({"parallel.zero_stage=1"}), 16);
  for (const auto& s : megatron) CHECK(s.parallel.zero() == 1);
  CHECK(megatron.size() * 6 >= all.size());
  // The lower bound (sharded states + activations) never exceeds the simulated peak.
  const auto r = run(base);
  CHECK(study::memory_lower_bound(base) <= r.memory.peak_gib * 1024.0 * 1024.0 * 1024.0 * 1.0001);
  CHECK(study::memory_lower_bound(base) < study::memory_lower_bound(scenario({"parallel.zero_stage=1"})));
}

TEST_CASE("diagnose: proposes ZeRO-2, ZeRO-3 and offload when the step does not fit") {
  // Llama-2-70B on 32 GPUs with pure data parallelism and ZeRO-1: the replicated bf16 weights and
  // fp32 gradients alone (6 bytes x 69B) exceed 80 GB; ZeRO-3 holds 18 bytes x 69B / 32 = 36 GiB.
  const auto path = (std::filesystem::temp_directory_path() / "mfusim_fsdp_diagnose.toml").string();
  {
    std::string text = testing::kFsdpFixture;
    text.replace(text.find("llama2-7b"), 9, "llama2-70b");
    text.replace(text.find("zero_stage = 3"), 14, "zero_stage = 1");
    text.replace(text.find("gpus = 16"), 9, "gpus = 32");
    text.replace(text.find("global_batch = 16"), 17, "global_batch = 32");
    std::ofstream(path) << text;
  }
  const auto d = study::diagnose(path, {});
  std::filesystem::remove(path);
  CHECK_FALSE(d.base.memory.fits);
  bool z2 = false, z3 = false, off = false, z3_fits = false;
  for (const auto& l : d.levers) {
    z2 = z2 || l.lever.rfind("ZeRO-2", 0) == 0;
    if (l.lever.rfind("ZeRO-3", 0) == 0) {
      z3 = true;
      z3_fits = l.fits;
      // A Megatron scenario shards as Megatron-FSDP (its layout, no PyTorch FSDP copies or casts).
      CHECK(l.change.find("features.megatron_fsdp=true") != std::string::npos);
    }
    off = off || l.lever.rfind("offload", 0) == 0;
  }
  CHECK(z2);
  CHECK(z3);
  CHECK(off);
  CHECK(z3_fits);
}

TEST_CASE("recompute_every: full recompute on every N-th block only (torchtitan's selective layer AC)") {
  const auto every1 = run(scenario());
  const auto every2 = run(scenario({"features.recompute_every=2"}));
  const auto none = run(scenario({"features.recompute=\"none\""}));
  // 32 blocks: 16 checkpointed at N = 2 (blocks 2, 4, ..., 32 counted from 1), every one at N = 1.
  CHECK(every2.breakdown.recompute == doctest::Approx(every1.breakdown.recompute / 2).epsilon(0.02).scale(0));
  CHECK(every2.breakdown.recompute > 0);
  CHECK(every2.step_time_s < every1.step_time_s);
  CHECK(every2.step_time_s > none.step_time_s);
  CHECK(every2.memory.activations_gib > every1.memory.activations_gib);
  CHECK(every2.memory.activations_gib < none.memory.activations_gib);
  CHECK(every2.hfu < every1.hfu);
  // The per-block rule: a block that is not checkpointed keeps what recompute = none keeps.
  const auto s2 = scenario({"features.recompute_every=2"});
  const auto sh = models::rank_shape(s2);
  auto sh_none = sh;
  sh_none.recompute = config::Recompute::none;
  CHECK_FALSE(models::checkpointed(sh, 0));
  CHECK(models::checkpointed(sh, 1));
  CHECK(models::activation_bytes(s2.model, 0, sh) == models::activation_bytes(s2.model, 0, sh_none));
  CHECK(models::activation_bytes(s2.model, 1, sh) < models::activation_bytes(s2.model, 1, sh_none));
  // Only with full recompute; at least 1.
  CHECK(error_of({"features.recompute=\"selective\"", "features.recompute_every=2"}).find("needs features.recompute = \"full\"") !=
        std::string::npos);
  CHECK(error_of({"features.recompute_every=0"}).find("out of range") != std::string::npos);
}

TEST_CASE("selective-op: torchtitan's per-op SAC recomputes wk, wo, w3 and the memory-bound ops, not attention") {
  const auto sel = run(scenario({"features.recompute=\"selective\""}));
  const auto op = run(scenario({"features.recompute=\"selective-op\""}));
  const auto full = run(scenario());
  CHECK(op.breakdown.recompute > sel.breakdown.recompute);
  CHECK(op.breakdown.recompute < full.breakdown.recompute);
  CHECK(op.memory.activations_gib < sel.memory.activations_gib);
  CHECK(op.memory.activations_gib > full.memory.activations_gib);
  // Saved per token (Llama-2-7B: h 4096, MHA, ffn 11008, bf16): block input h, wq out h, wv out h,
  // SDPA out h and its fp32 LSE (4 x 32 heads), w1 out ffn, w2 out h.
  const auto s = scenario({"features.recompute=\"selective-op\""});
  const double per_token = 2.0 * (4096 + 4096 + 4096 + 4096 + 11008 + 4096) + 4.0 * 32;
  CHECK(models::activation_bytes(s.model, 0, models::rank_shape(s)) == doctest::Approx(per_token * 4096));
  // HFU counts the recomputed GEMMs: wk (h x h for MHA), wo (h x h), w3 (h x ffn), 2 FLOPs per MAC.
  const double extra = 32 * 2.0 * (4096.0 * 4096 + 4096.0 * 4096 + 4096.0 * 11008);
  CHECK(models::recompute_flops_per_token(s.model, 4096, config::Recompute::selective_op) == doctest::Approx(extra));
}

TEST_CASE("Offload: the host's Adam runs at the host's memory bandwidth; parameter offload copies each gathered shard") {
  const auto on = run(scenario({"features.offload=\"optimizer\""}));
  REQUIRE(count(on, "host adam") == 1);
  // 30 bytes per local parameter at 76.8 GB/s against the fp32 gradient shard's 4 bytes at 64 GB/s PCIe.
  CHECK(total_ns(on, "host adam") / total_ns(on, "offload grads to host") == doctest::Approx(30.0 * 64 / (4.0 * 76.8)).epsilon(1e-3));
  CHECK(count(on, "fsdp params to gpu") == 0);
  const auto params = run(scenario({"features.offload=\"params\""}));
  CHECK(count(params, "fsdp params to gpu") == count(params, "fsdp all-gather"));
  // Each copy: the rank's bf16 shard of the unit (1/16) over 64 GB/s; all of them: every gather's shard.
  const double per_pass_bytes = 2.0 * models::count_params(scenario().model).total / 16;
  CHECK(total_ns(params, "fsdp params to gpu") > 1e9 * per_pass_bytes / 64e9);
  CHECK(total_ns(params, "fsdp params to gpu") < 2.0 * 1e9 * per_pass_bytes / 64e9);
  CHECK(params.step_time_s > on.step_time_s);
  // A hardware file without the host's memory bandwidth cannot run offload.
  auto s = scenario({"features.offload=\"optimizer\""});
  s.hardware.host_memory_bandwidth = 0;
  bool refused = false;
  for (const auto& d : config::validate(s)) refused = refused || d.message.find("host_memory_bandwidth_gbs") != std::string::npos;
  CHECK(refused);
}

TEST_CASE("fsdp_version: FSDP2 copies each gathered unit out on the compute stream; FSDP1 casts and pre-divides its gradients; Megatron-FSDP neither") {
  const auto v2 = run(scenario());
  const auto v1 = run(scenario({"features.fsdp_version=1"}));
  const auto mf = run(scenario({"features.megatron_fsdp=true"}));
  CHECK(count(v2, "fsdp copy-out") == count(v2, "fsdp all-gather"));
  CHECK(count(v2, "fsdp reduce copy-in") == count(v2, "fsdp reduce-scatter"));
  CHECK(count(v1, "fsdp copy-out") == 0);
  CHECK(count(v1, "fsdp reduce copy-in") == 0);
  CHECK(count(v1, "fsdp1 grad cast + divide") == count(v1, "fsdp reduce-scatter"));
  for (const char* name : {"fsdp copy-out", "fsdp reduce copy-in", "fsdp1 grad cast + divide"}) CHECK(count(mf, name) == 0);
  CHECK(v2.step_time_s > mf.step_time_s);
  // Both gradient kernels run on the reduce-scatter stream with run 39's class: not hidden under the
  // backward beside them (every kind of compute slows by hardware::side_elementwise_slowdown, the
  // kernel stretches by kSideElementwiseStretch while the rank computes).
  for (const auto* r : {&v2, &v1})
    for (const char* name : {"fsdp reduce copy-in", "fsdp1 grad cast + divide"})
      for (const auto id : testing::tasks_named(*r, name)) {
        const auto cls = r->graph->task(id).interferes;
        REQUIRE(cls != 0);
        CHECK(r->graph->contention_uniform(cls));
        CHECK(r->graph->contention(cls) == doctest::Approx(hardware::side_elementwise_slowdown() - 1.0));
        CHECK(r->graph->contention_self(cls) == doctest::Approx(hardware::kSideElementwiseStretch - 1.0));
      }
  // FSDP1's kernel moves, per gradient element of the unit, the cast (2 read, 4 written) and the in-place
  // pre-division (4 + 4) with the fp32 reduction; the pre-division alone (2 + 2) with bf16; plus the shard's
  // post-division (1/16 of the pre-division here).
  auto cast_ns = [&](const step::StepResult& r) {
    const auto cast = testing::tasks_named(r, "fsdp1 grad cast + divide");
    REQUIRE(!cast.empty());
    return static_cast<double>(r.graph->task(cast.front()).duration_ns);
  };
  const auto v1b = run(scenario({"features.fsdp_version=1", "features.reduce_dtype=\"bf16\""}));
  // Same rate (memory-bound, same kernel size class): the time ratio is the bytes' ratio, (14 + 8/16) / (4 + 4/16).
  CHECK(cast_ns(v1) / cast_ns(v1b) == doctest::Approx((14.0 + 0.5) / (4.0 + 0.25)).epsilon(0.05));
  CHECK(error_of({"features.fsdp_version=3"}).find("out of range") != std::string::npos);
  CHECK(error_of({"features.megatron_fsdp=true", "parallel.zero_stage=2"}).find("needs parallel.zero_stage = 3") != std::string::npos);
}

TEST_CASE("cross_entropy = fp32 / compiled: the loss's kept bytes and transients are run 34's, and the step's peak holds them") {
  const auto fused = scenario();
  const auto fp32 = scenario({"features.cross_entropy=\"fp32\""});
  const auto compiled = scenario({"features.cross_entropy=\"compiled\""});
  const double T = 4096, V = 32000, h = 4096, x = T * V;
  // Kept from the forward to the backward: fp32 logits (fused), log_softmax's fp32 output (eager),
  // the bf16 logits (compiled); run 34 after the forward: 4.00 and 2.00 bytes per logit.
  CHECK(models::head_activation_bytes(fused.model, models::rank_shape(fused)) == doctest::Approx(T * (2 * 2 * h + 4 * V)));
  CHECK(models::head_activation_bytes(fp32.model, models::rank_shape(fp32)) == doctest::Approx(T * (2 * 2 * h + 4 * V)));
  CHECK(models::head_activation_bytes(compiled.model, models::rank_shape(compiled)) == doctest::Approx(T * (2 * 2 * h + 2 * V)));
  // Held only while the head runs: run 34's peaks 10 / 12 (eager) and 2 / 4 (compiled) bytes per logit.
  const auto e = models::head_memory(fp32.model, models::rank_shape(fp32));
  CHECK(e.saved + e.forward_bytes() == doctest::Approx(10 * x));
  CHECK(e.saved + e.backward_bytes() == doctest::Approx(12 * x));
  const auto c = models::head_memory(compiled.model, models::rank_shape(compiled));
  CHECK(c.forward_bytes() == 0);
  CHECK(c.saved + c.backward_bytes() == doctest::Approx(4 * x));
  CHECK(models::head_memory(fused.model, models::rank_shape(fused)).backward_bytes() == 0);
  // The simulated step with Llama-3-8B's 128k vocabulary: one micro-batch, full recompute, so the allocated
  // peak is at the head's backward, where eager holds 8 bytes per logit more than the fused loss and the
  // compiled one the same (2 + 2 = 4).
  const std::string l3 = "model=\"llama3-8b\"";
  const auto f8 = scenario({l3}), e8 = scenario({l3, "features.cross_entropy=\"fp32\""}),
             c8 = scenario({l3, "features.cross_entropy=\"compiled\""});
  const double x8 = T * 128256;
  const auto rf = run(f8), re = run(e8), rc = run(c8);
  constexpr double GiB = 1024.0 * 1024.0 * 1024.0;
  CHECK((re.memory.peak_gib - rf.memory.peak_gib) * GiB == doctest::Approx(8 * x8).epsilon(0.001));
  CHECK(std::abs(rc.memory.peak_gib - rf.memory.peak_gib) * GiB < 1e6);
  // The coarse lowering (plan's) holds the same transient: its merged head ops allocate up to it.
  step::SimulateOptions so;
  so.per_layer = false;
  const auto ce = step::simulate(e8, so), cf = step::simulate(f8, so);
  CHECK((ce.memory.peak_gib - cf.memory.peak_gib) * GiB == doctest::Approx(8 * x8).epsilon(0.001));
  CHECK(study::memory_lower_bound(e8) <= ce.memory.peak_gib * GiB);
  // Their kernels: eager's fp32 copy, log_softmax and nll_loss cost more than one fused pass each way.
  CHECK(re.step_time_s > rf.step_time_s);
  CHECK(re.step_time_s > rc.step_time_s);
  // The planner's memory bound sees the transient as the step does.
  CHECK(study::memory_lower_bound(e8) - study::memory_lower_bound(f8) == doctest::Approx(8 * x8).epsilon(0.001));
  CHECK(study::memory_lower_bound(e8) <= re.memory.peak_gib * GiB);
}

TEST_CASE("run --json: the resolved scenario carries the ZeRO / FSDP keys") {
  const auto r = run(scenario({"parallel.shard_degree=8", "features.recompute_every=2", "features.fsdp_version=1"}));
  const auto m = run(scenario({"features.megatron_fsdp=true"}));
  std::string mjson = report::to_json(m);
  mjson.erase(std::remove(mjson.begin(), mjson.end(), ' '), mjson.end());
  CHECK(mjson.find("\"megatron_fsdp\":true") != std::string::npos);
  CHECK(report::to_json(r).find("megatron_fsdp") == std::string::npos);   // absent: PyTorch's FSDP
  std::string json = report::to_json(r);
  json.erase(std::remove(json.begin(), json.end(), ' '), json.end());
  for (const char* k : {"\"zero_stage\":3", "\"shard_degree\":8", "\"recompute_every\":2", "\"reshard_after_forward\":true",
                        "\"fsdp_prefetch\":1", "\"offload\":\"none\"", "\"fp8_all_gather\":false", "\"reduce_dtype\":\"fp32\"",
                        "\"fsdp_version\":1", "\"cross_entropy\":\"fused\""}) {
    CAPTURE(k);
    CHECK(json.find(k) != std::string::npos);
  }
}

TEST_CASE("diagnose: a ZeRO-3 scenario with full recompute gets torchtitan's lighter checkpointing as levers") {
  const auto path = (std::filesystem::temp_directory_path() / "mfusim_fsdp_diagnose_ac.toml").string();
  auto levers_of = [&](const std::string& text) {
    std::ofstream(path) << text;
    const auto d = study::diagnose(path, {});
    std::filesystem::remove(path);
    std::vector<std::string> names;
    for (const auto& l : d.levers) names.push_back(l.lever);
    return names;
  };
  auto has = [](const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); };
  const auto every1 = levers_of(testing::kFsdpFixture);
  CHECK(has(every1, "per-op selective recompute"));
  CHECK(has(every1, "full recompute every 2nd block"));
  CHECK(has(every1, "no recompute"));
  // Checkpointing every 2nd block already: leaving full recompute resets recompute_every, so the
  // lighter levers stay valid (a lever the scenario refuses is dropped).
  std::string text = testing::kFsdpFixture;
  text += "recompute_every = 2\n";
  const auto every2 = levers_of(text);
  CHECK(has(every2, "no recompute"));
  CHECK(has(every2, "selective recompute"));
  CHECK(has(every2, "per-op selective recompute"));
  CHECK_FALSE(has(every2, "full recompute every 2nd block"));
}

TEST_CASE("cross_entropy = fp32: the transients through every lowering, pipeline stages and the coarse one") {
  // The fixture as Llama-3-8B with pp 2 and 1F1B (the head on the last stage), ZeRO-1, two micro-batches per
  // rank: the per-layer lowering (record/replay programs) and the coarse one; the last stage's peak rises by
  // the backward's transient (8 bytes per logit), the first stage's does not move.
  auto load = [&](const std::string& ce) {
    return scenario({"model=\"llama3-8b\"", "parallel.zero_stage=1", "parallel.pp=2", "schedule.name=\"1f1b\"",
                     "features.cross_entropy=\"" + ce + "\""});
  };
  const auto fused = load("fused"), eager = load("fp32");
  const double x = 4096.0 * 128256, GiB = 1024.0 * 1024.0 * 1024.0;
  for (const bool per_layer : {true, false}) {
    CAPTURE(per_layer);
    step::SimulateOptions so;
    so.per_layer = per_layer;
    const auto rf = step::simulate(fused, so), re = step::simulate(eager, so);
    REQUIRE(rf.memory.per_stage_peak_gib.size() == 2);
    CHECK((re.memory.per_stage_peak_gib[1] - rf.memory.per_stage_peak_gib[1]) * GiB == doctest::Approx(8 * x).epsilon(0.001));
    CHECK(re.memory.per_stage_peak_gib[0] == doctest::Approx(rf.memory.per_stage_peak_gib[0]));
    CHECK(study::memory_lower_bound(eager) <= re.memory.peak_gib * GiB);
  }
}

TEST_CASE("features.optimizer_foreach: torch's foreach AdamW holds an fp32 temporary of the stepped parameters (run 35)") {
  // Full recompute and the compiled loss: the activations' peak stays under the optimizer step's.
  auto s = config::load_scenario(kTests + "/../validation/fsdp/run35/fsdp2-head.toml").base;
  REQUIRE(s.features.optimizer_foreach);
  s.features.recompute = config::Recompute::full;
  s.features.cross_entropy = config::CrossEntropy::compiled;
  auto fused = s;
  fused.features.optimizer_foreach = false;
  const auto r = run(s), rf = run(fused);
  const double P = models::count_params(s.model).total, gib = 1024.0 * 1024.0 * 1024.0;
  const auto opt = testing::tasks_named(r, "optimizer step");
  REQUIRE(opt.size() == 1);
  // One rank: the whole model is its shard; the temporary (4 bytes per parameter) allocated at the step's start,
  // freed at its end with the gradients (4 bytes per parameter, allocated by the backward).
  CHECK(static_cast<double>(r.graph->task(opt.front()).memory_delta) == doctest::Approx(4 * P).epsilon(1e-6));
  CHECK(static_cast<double>(r.graph->task(opt.front()).memory_release) == doctest::Approx(8 * P).epsilon(1e-6));
  const auto opt_f = testing::tasks_named(rf, "optimizer step");
  CHECK(rf.graph->task(opt_f.front()).memory_delta == 0);
  // During the step: the static states, the gradients and the temporary.
  const double states = (r.memory.params_gib + r.memory.optimizer_gib) * gib;
  CHECK(r.memory.peak_gib * gib >= states + 8 * P + 2 * gib - 1e6);
  CHECK(r.memory.peak_gib > rf.memory.peak_gib);
  CHECK(report::to_json(r).find("\"optimizer_foreach\": true") != std::string::npos);
}

TEST_CASE("gradients allocated by the backward: the planner's bound stays below the step, a tied embedding counts once") {
  const double gib = 1024.0 * 1024.0 * 1024.0;
  // The bound leaves out the gradients a zero_grad(set_to_none) recipe allocates in the backward (it had held
  // them and pruned layouts that fit: run 35's one-rank step, the fixture's ZeRO-2).
  auto r35 = config::load_scenario(kTests + "/../validation/fsdp/run35/fsdp2-head.toml").base;
  for (const auto& s : {r35, scenario({"parallel.zero_stage=2"}), scenario({"features.cross_entropy=\"fp32\""})}) {
    const auto r = run(s);
    CHECK(study::memory_lower_bound(s) <= r.memory.peak_gib * gib);
  }
  // A tied model on zb-v, the plain recipe: rank 0 holds the first and the last stage, whose embedding and
  // output head are one tensor: its gradients (fp32) equal its parameters (fp32) once the backward has run.
  const std::string tied = R"(
name = "tied zb-v"
model = "gpt-1.7b"
hardware = "h100-sxm"
[cluster]
gpus = 4
[training]
seq_len = 2048
global_batch = 16
micro_batch = 1
master_weights = "fp32-autocast"
[parallel]
tp = 1
pp = 4
[schedule]
name = "zb-v"
)";
  const auto s = config::load_scenario_string(tied, kTests + "/config/tied.toml", {}).base;
  const auto r = run(s);
  double released = 0;
  for (sim::TaskId t : testing::tasks_named(r, "optimizer step"))
    if (r.graph->streams()[r.graph->task(t).stream].rank == 0) released = static_cast<double>(r.graph->task(t).memory_release);
  // (params_gib is the peak rank's: rank 0 here, the V schedule's first rank holding the embedding and head)
  const auto& per = r.memory.per_stage_peak_gib;
  REQUIRE(per.size() == 4);
  REQUIRE(per[0] == *std::max_element(per.begin(), per.end()));
  CHECK(released == doctest::Approx(r.memory.params_gib * gib).epsilon(0.001));
}

TEST_CASE("FSDP collectives slow the compute beside them by their own kernels' footprint (not another class's)") {
  // ZeRO-3 (per-unit gathers and reduce-scatters) and ZeRO-2 (the overlapped bucket gathers and the
  // reduce-scatters of step/fsdp.cpp): each collective's contention class is its own collective's over its
  // group (layers_.comm_contention), as the ZeRO-1 buckets of data_parallel.cpp have it. These tasks once
  // named class 1 whatever it held: none in a tp 1 step (no interference at all), TP's with tensor parallelism.
  // A class with a GEMM slowdown > 0 (class 1 had none registered in these tp 1 steps: factor 0).
  auto slows = [](const step::StepResult& r, const std::string& name) {
    const auto ts = testing::tasks_named(r, name);
    REQUIRE_FALSE(ts.empty());
    for (sim::TaskId t : ts) {
      const int c = r.graph->task(t).interferes;
      CHECK(c != 0);
      CHECK(r.graph->contention(c) > 0.0);
    }
  };
  for (const char* stage : {"parallel.zero_stage=3", "parallel.zero_stage=2"}) {
    CAPTURE(stage);
    const auto r = run(scenario({stage, "features.overlap_param_gather=true", "features.overlap_grad_reduce=true"}));
    slows(r, "fsdp reduce-scatter");
    slows(r, std::string(stage).back() == '3' ? "fsdp all-gather" : "dp param gather");
    CHECK(r.interference_s > 0.0);
  }
  // HSDP: the replicas' all-reduce of the shard too, with its own class (not the gather's, registered first).
  const auto h = run(scenario({"parallel.shard_degree=8"}));
  slows(h, "hsdp all-reduce");
  const int ar = h.graph->task(testing::tasks_named(h, "hsdp all-reduce").front()).interferes;
  CHECK(ar != h.graph->task(testing::tasks_named(h, "fsdp all-gather").front()).interferes);
  CHECK(ar != h.graph->task(testing::tasks_named(h, "fsdp reduce-scatter").front()).interferes);
  // The all-gather's class and the reduce-scatter's are their own: the reduction reads and writes HBM that
  // the gather does not, so the two classes differ.
  const auto r = run(scenario());
  const auto ag = testing::tasks_named(r, "fsdp all-gather");
  const auto rs = testing::tasks_named(r, "fsdp reduce-scatter");
  REQUIRE_FALSE(ag.empty());
  REQUIRE_FALSE(rs.empty());
  CHECK(r.graph->task(ag.front()).interferes != r.graph->task(rs.front()).interferes);
}

TEST_CASE("features.optimizer_foreach: the step's eight passes move 80 bytes per parameter where the fused kernel moves 28-30 (run 37)") {
  // The optimizer step's duration with foreach over without: memory-bound at one rate, it scales with the bytes.
  auto ratio = [](const config::Scenario& s) {
    auto fe = s;
    fe.features.optimizer_foreach = true;
    const auto r = run(s), rf = run(fe);
    const auto o = testing::tasks_named(r, "optimizer step"), of = testing::tasks_named(rf, "optimizer step");
    REQUIRE(o.size() == 1);
    REQUIRE(of.size() == 1);
    CHECK(rf.breakdown.optimizer > r.breakdown.optimizer);
    return static_cast<double>(rf.graph->task(of.front()).duration_ns) /
           static_cast<double>(r.graph->task(o.front()).duration_ns);
  };
  // ZeRO-3 (step/fsdp.cpp's step): FSDP2's fp32 shard is the master, so the fused step moves 28 bytes per
  // parameter (FSDP1's too); Megatron-FSDP's 30 (its bf16 copy written too); the foreach passes add 80 - 28.
  CHECK(ratio(scenario()) == doctest::Approx((28.0 + models::kForeachAdamExtraBytes) / 28.0).epsilon(0.02));
  CHECK(ratio(scenario({"features.fsdp_version=1"})) == doctest::Approx((28.0 + models::kForeachAdamExtraBytes) / 28.0).epsilon(0.02));
  CHECK(ratio(scenario({"features.megatron_fsdp=true"})) ==
        doctest::Approx((30.0 + models::kForeachAdamExtraBytes) / 30.0).epsilon(0.02));
  // ZeRO-1 (step/data_parallel.cpp's step): the same passes over the rank's shard; the gradient read at the
  // reduce dtype's width (features.reduce_dtype, 4 bytes by default).
  const auto z1 = scenario({"parallel.zero_stage=1"});
  const double fused = 30.0 - (4.0 - models::grad_bytes(z1.features.reduce_fp32, false));
  CHECK(ratio(z1) == doctest::Approx((fused + models::kForeachAdamExtraBytes) / fused).epsilon(0.02));
}

TEST_CASE("diagnose: a scenario with torch's foreach AdamW gets 'fused AdamW', which shrinks the optimizer step") {
  // run 35's one-rank FSDP2 step (optimizer_foreach = true): the whole model is the rank's shard.
  const auto d = study::diagnose(kTests + "/../validation/fsdp/run35/fsdp2-head.toml", {});
  const study::LeverResult* fused = nullptr;
  for (const auto& l : d.levers)
    if (l.lever == "fused AdamW") fused = &l;
  REQUIRE(fused != nullptr);
  CHECK(fused->step_time_s < d.base.step_time_s);
  CHECK(fused->shrinks == "optimizer");
  CHECK(fused->change.find("features.optimizer_foreach=false") != std::string::npos);
  CHECK(study::why_it_helps("fused AdamW", "optimizer").find("eight passes") != std::string::npos);
}
