// The cluster on the simulated timeline: DP gradient buckets and parameter
// gathers, TP placement across NVLink domains, TP comm overlap, NCCL
// algorithm choice, EP all-to-alls under 1F1B vs DualPipe, and NIC sharing
// between PP sends and DP buckets. Every number is read off a simulated step
// (step::simulate), never from a closed form; each case quotes its rule.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "config/loader.h"
#include "step/simulate.h"

using namespace mfusim;

namespace {

const std::string kTests = MFUSIM_TEST_DIR;
const std::string kRoot = std::filesystem::path(MFUSIM_TEST_DIR).parent_path().string();

// Llama-2-7B on 64 H100: tp 2, dp 32, 16 micro-batches of 4096 tokens per
// rank: a small model relative to the compute of one step.
const char* kDense = R"(
name = "cluster fixture"
model = "llama2-7b"
hardware = "h100-sxm"
[cluster]
gpus = 64
[training]
seq_len = 4096
global_batch = 512
micro_batch = 1
[parallel]
tp = 2
pp = 1
sequence_parallel = true
distributed_optimizer = true
[features]
overlap_grad_reduce = true
overlap_param_gather = true
)";

config::Scenario scenario(const std::string& text, const std::vector<std::string>& sets = {}) {
  config::LoadOptions o;
  o.overrides = sets;
  return config::load_scenario_string(text, kTests + "/config/cluster_fixture.toml", o).base;
}

step::StepResult run(const config::Scenario& s, bool keep = false) {
  step::SimulateOptions o;
  o.keep_timeline = keep;
  return step::simulate(s, o);
}

}  // namespace

TEST_CASE("DP: with overlap_grad_reduce and overlap_param_gather, exposed DP communication is ~0 for a small model") {
  // Megatron DDP (overlap_grad_reduce): a bucket's reduce-scatter starts as soon as the last backward of
  // its layers has produced their gradients, on a separate stream, during the remaining backward; with
  // overlap_param_gather the distributed optimizer's all-gathers run ahead of the forward that needs
  // them. Only the last bucket's reduce and the first bucket's gather can be exposed.
  const auto on = run(scenario(kDense));
  const auto off = run(scenario(kDense, {"features.overlap_grad_reduce=false", "features.overlap_param_gather=false"}));
  CAPTURE(on.breakdown.dp_comm_exposed);
  CAPTURE(off.breakdown.dp_comm_exposed);
  CHECK(on.breakdown.dp_comm_exposed < 0.01 * on.step_time_s);
  CHECK(off.breakdown.dp_comm_exposed > 0.02 * off.step_time_s);
  CHECK(on.breakdown.dp_comm_exposed < 0.1 * off.breakdown.dp_comm_exposed);
  CHECK(on.step_time_s < off.step_time_s);
}

TEST_CASE("DP without overlap: exposed DP communication grows with dp and falls with NIC bandwidth") {
  // Ring reduce-scatter + all-gather over the NIC (dp ranks in different nodes, tp = 8):
  //   (n-1)/n * S/B + (n-1) alpha each (nccl-tests PERFORMANCE.md), S = this rank's gradient (fp32)
  //   or bf16 parameter shard set, B the NIC bus bandwidth. Per-rank work is held fixed (global batch
  //   scales with dp), so only the collective changes.
  double prev = 0;
  for (int dp : {2, 4, 8, 16}) {
    auto s = scenario(kDense, {"parallel.tp=8", "cluster.gpus=" + std::to_string(8 * dp),
                               "training.global_batch=" + std::to_string(16 * dp),
                               "features.overlap_grad_reduce=false", "features.overlap_param_gather=false"});
    const double e = run(s).breakdown.dp_comm_exposed;
    CAPTURE(dp);
    CAPTURE(e);
    CHECK(e > prev);
    prev = e;
  }
  auto s = scenario(kDense, {"parallel.tp=8", "cluster.gpus=128", "training.global_batch=256",
                             "features.overlap_grad_reduce=false", "features.overlap_param_gather=false"});
  const double base = run(s).breakdown.dp_comm_exposed;
  s.hardware.nic_bandwidth *= 2;   // e.g. 400 -> 800 Gb/s per GPU
  const double fast = run(s).breakdown.dp_comm_exposed;
  CAPTURE(base);
  CAPTURE(fast);
  // Bandwidth term halves, latency term stays: strictly between half and the original.
  CHECK(fast < 0.75 * base);
  CHECK(fast > 0.45 * base);
}

TEST_CASE("TP = 16 across two NVLink domains of 8 is slower than inside one domain of 16") {
  // Placement puts TP innermost (Megatron order): tp=16 on 8-GPU nodes spans 2 domains, so every ring
  // step of the TP collectives waits for a NIC hop (NIC latency) and the ring's bandwidth is capped by
  // per_domain x NIC (8 x 25 GB/s on DGX A100 < NVLink 300 GB/s).
  // GPT-3 175B: 96 heads (MHA), so tp = 16 divides heads and KV heads.
  auto s = scenario(kDense, {"hardware=a100-sxm-80gb", "model=gpt3-175b", "parallel.tp=16", "cluster.gpus=64",
                             "training.seq_len=2048", "training.global_batch=32"});
  const auto two_domains = run(s);
  s.hardware.gpus_per_node = 16;
  const auto one_domain = run(s);
  CAPTURE(two_domains.breakdown.tp_comm_exposed);
  CAPTURE(one_domain.breakdown.tp_comm_exposed);
  CHECK(std::any_of(two_domains.warnings.begin(), two_domains.warnings.end(),
                    [](const std::string& w) { return w.find("tp=16 spans 2 NVLink domains") != std::string::npos; }));
  CHECK(two_domains.breakdown.tp_comm_exposed > 1.5 * one_domain.breakdown.tp_comm_exposed);
  CHECK(two_domains.step_time_s > one_domain.step_time_s);
}

TEST_CASE("tp_comm_overlap reduces exposed TP communication") {
  // Megatron's TP comm overlap (userbuffers): the collective of a block starts after the first of its
  // tp GEMM chunks and runs beside the rest, so only what exceeds the remaining GEMM time is exposed.
  const auto s = scenario(kDense, {"parallel.tp=8", "cluster.gpus=64", "training.global_batch=128"});
  const auto off = run(s);
  auto s2 = s;
  s2.features.tp_comm_overlap = true;
  const auto on = run(s2);
  CAPTURE(off.breakdown.tp_comm_exposed);
  CAPTURE(on.breakdown.tp_comm_exposed);
  CHECK(off.breakdown.tp_comm_exposed > 0);
  CHECK(on.breakdown.tp_comm_exposed < 0.5 * off.breakdown.tp_comm_exposed);
  CHECK(on.step_time_s < off.step_time_s);
}

TEST_CASE("nccl_algo: tree vs ring changes all-reduces only") {
  // NCCL implements tree for all-reduce only; reduce-scatter and all-gather are always rings.
  // (a) Sequence parallelism + distributed optimizer: every TP and DP collective is a reduce-scatter or
  //     an all-gather, so ring and tree give the same compute and TP time; the only all-reduces are the
  //     step's synchronisations of a few bytes (gradient norm over all ranks, loss over dp), whose ring
  //     and tree differ by their latency terms only: a ring's 2(n-1) steps against the tree's
  //     2 log2 n, 0.6 ms at the 64 ranks here (5 us per NIC step). Over the TP group, one all-reduce at the
  //     step's end: the norms' gradients sequence parallelism leaves partial (step/data_parallel.cpp), a few
  //     MB inside one NVLink domain of 8, whose ring and tree differ by microseconds.
  const auto sp_ring = run(scenario(kDense, {"parallel.tp=8", "features.nccl_algo=ring"}));
  const auto sp_tree = run(scenario(kDense, {"parallel.tp=8", "features.nccl_algo=tree"}));
  const double tp_diff = std::abs(sp_ring.breakdown.tp_comm_exposed - sp_tree.breakdown.tp_comm_exposed);
  CHECK(tp_diff > 0);      // that all-reduce follows the algorithm
  CHECK(tp_diff < 5e-5);   // and nothing else of TP does
  CHECK(sp_ring.breakdown.forward == doctest::Approx(sp_tree.breakdown.forward).epsilon(1e-9));
  CHECK(std::abs(sp_ring.step_time_s - sp_tree.step_time_s) < 1e-3);
  // (b) Without SP the TP collectives are all-reduces inside one NVLink domain of 8: ring moves
  //     2(n-1)/n S per rank, the double binary tree 2 S (nccl-tests PERFORMANCE.md), so for large
  //     activations the tree is slower.
  const auto ar_ring = run(scenario(kDense, {"parallel.tp=8", "parallel.sequence_parallel=false", "features.nccl_algo=ring"}));
  const auto ar_tree = run(scenario(kDense, {"parallel.tp=8", "parallel.sequence_parallel=false", "features.nccl_algo=tree"}));
  const auto ar_auto = run(scenario(kDense, {"parallel.tp=8", "parallel.sequence_parallel=false", "features.nccl_algo=auto"}));
  CAPTURE(ar_ring.breakdown.tp_comm_exposed);
  CAPTURE(ar_tree.breakdown.tp_comm_exposed);
  CHECK(ar_tree.breakdown.tp_comm_exposed > ar_ring.breakdown.tp_comm_exposed);
  // auto takes the fastest per collective, so it is never slower than either fixed choice.
  CHECK(ar_auto.breakdown.tp_comm_exposed <= ar_ring.breakdown.tp_comm_exposed * (1 + 1e-9));
  CHECK(ar_auto.breakdown.tp_comm_exposed <= ar_tree.breakdown.tp_comm_exposed * (1 + 1e-9));
}

TEST_CASE("MoE with EP across nodes: DualPipe's F&B hides all-to-alls that 1F1B exposes") {
  // DeepSeek-V3 report §3.2.1: DualPipe overlaps the forward of one micro-batch with the backward of
  // another so that each chunk's all-to-all dispatch/combine runs under the other chunk's compute —
  // the reason DualPipe exists. 1F1B runs each chunk's all-to-alls between its own segments.
  const std::string path = kRoot + "/scenarios/2048xh100_deepseek_v3.toml";
  config::LoadOptions o;
  o.overrides = {"schedule.name=1f1b"};
  const auto f1b = run(config::load_scenario(path, o).base);
  o.overrides = {"schedule.name=dualpipe"};
  const auto dual = run(config::load_scenario(path, o).base);
  CAPTURE(f1b.breakdown.ep_comm_exposed);
  CAPTURE(dual.breakdown.ep_comm_exposed);
  CHECK(f1b.breakdown.ep_comm_exposed > 0);
  CHECK(dual.breakdown.ep_comm_exposed < 0.9 * f1b.breakdown.ep_comm_exposed);
  CHECK(dual.step_time_s < f1b.step_time_s);
}

TEST_CASE("Two transfers on one NIC each go slower: PP sends and DP buckets share the NIC") {
  // The engine shares a resource's capacity fairly among the tasks on it (sim/engine.h): a DP bucket's
  // reduce-scatter that overlaps a stage-to-stage send on the same rank's NIC takes longer than its
  // duration alone. Set-up: tp = 8 fills a node, so both the PP hop and the DP ring leave on the NIC.
  auto s = scenario(kDense, {"model=llama2-13b", "parallel.tp=8", "parallel.pp=4", "cluster.gpus=256",
                             "training.global_batch=256", "parallel.distributed_optimizer=false"});
  const auto r = run(s, true);
  const auto& g = *r.graph;
  const auto& tl = *r.timeline;
  int shared = 0, slowed = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const auto& t = g.task(static_cast<sim::TaskId>(i));
    if (t.category != sim::Category::dp_comm || t.resources.empty()) continue;
    const auto& iv = tl.of(static_cast<sim::TaskId>(i));
    const int rank = g.streams()[static_cast<std::size_t>(t.stream)].rank;
    bool overlaps_send = false;
    for (std::size_t j = 0; j < g.size() && !overlaps_send; ++j) {
      const auto& u = g.task(static_cast<sim::TaskId>(j));
      if (u.category != sim::Category::pp_comm || u.resources != t.resources) continue;
      if (g.streams()[static_cast<std::size_t>(u.stream)].rank != rank) continue;
      const auto& jv = tl.of(static_cast<sim::TaskId>(j));
      overlaps_send = jv.start < iv.end && iv.start < jv.end;
    }
    if (!overlaps_send) continue;
    ++shared;
    if (iv.end.ns - iv.start.ns > t.duration_ns) ++slowed;
  }
  CAPTURE(shared);
  CHECK(shared > 0);
  CHECK(slowed == shared);
}
