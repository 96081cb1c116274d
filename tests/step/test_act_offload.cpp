// Megatron's activation CPU offloading (features.activation_offload_layers; step/act_offload.cpp):
// the first N layers' saved activations cross the host link after their forward and back before
// their backward, one group at a time, synchronised at Transformer Engine's layer windows. Read
// off simulated steps; the closed forms (bytes / bandwidth, the windows) are the oracles.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "config/loader.h"
#include "step/simulate.h"
#include "tests/step/graph_helpers.h"

using namespace mfusim;

namespace {

const std::string kTests = MFUSIM_TEST_DIR;

// Llama-2-7B on 8 H100 (one node), no pipeline, two micro-batches per rank, no recompute.
const char* kOffload = R"(
name = "offload fixture"
model = "llama2-7b"
hardware = "h100-sxm"
[cluster]
gpus = 8
[training]
seq_len = 4096
global_batch = 16
micro_batch = 1
[parallel]
tp = 1
pp = 1
[features]
attention = "flash"
recompute = "none"
)";

config::Scenario scenario(const std::vector<std::string>& sets = {}) {
  return testing::fixture_scenario(kOffload, kTests + "/config/offload_fixture.toml", sets);
}

step::StepResult run(const config::Scenario& s) { return testing::run_with_timeline(s); }

std::string error_of(const std::vector<std::string>& sets) {
  return testing::config_error_of([&] { scenario(sets); });
}

}  // namespace

TEST_CASE("activation offloading: N layers' activations leave and return once per micro-batch, at the host link's rate") {
  const auto base = run(scenario());
  for (int n : {5, 16, 31}) {
    INFO("N = " << n);
    const auto s = scenario({"features.activation_offload_layers=" + std::to_string(n)});
    const auto r = run(s);
    const int mbs = static_cast<int>(s.microbatches());
    const auto d2h = testing::tasks_named(r, "offload to host"), h2d = testing::tasks_named(r, "reload from host");
    CHECK(static_cast<int>(d2h.size()) == n * mbs);
    CHECK(static_cast<int>(h2d.size()) == n * mbs);
    // Each reload: one layer's saved activations (the memory it takes back) over the link; the offloads
    // move the same bytes (TE frees each GPU copy at its window, on the compute stream).
    double reload_bytes = 0, offload_ns = 0;
    for (auto t : h2d) {
      const auto& sp = r.graph->task(t);
      CHECK(sp.memory_delta > 0);
      CHECK(static_cast<double>(sp.duration_ns) ==
            doctest::Approx(static_cast<double>(sp.memory_delta) / s.hardware.pcie_bandwidth * 1e9).epsilon(1e-6));
      reload_bytes += static_cast<double>(sp.memory_delta);
    }
    for (auto t : d2h) offload_ns += static_cast<double>(r.graph->task(t).duration_ns);
    CHECK(offload_ns == doctest::Approx(reload_bytes / s.hardware.pcie_bandwidth * 1e9).epsilon(1e-6));
    // Less activation memory held. A layer's activations (~0.54 GB) take ~8 ms over 64 GB/s, its forward
    // ~2.5 ms: with 5 groups each offload has a 6-layer window and hides; with 16 or 31 (windows of 2 and 1
    // layers) the compute waits for the link.
    CHECK(r.memory.peak_gib < base.memory.peak_gib);
    if (n == 5) CHECK(r.step_time_s == doctest::Approx(base.step_time_s).epsilon(1e-3));
    else CHECK(r.step_time_s > base.step_time_s * 1.05);
  }
  // More layers offloaded, less memory.
  CHECK(run(scenario({"features.activation_offload_layers=31"})).memory.peak_gib <
        run(scenario({"features.activation_offload_layers=5"})).memory.peak_gib);
}

TEST_CASE("activation offloading: a slow host link makes the step wait, and the wait is reported apart") {
  const auto base = run(scenario({"hardware.pcie_bandwidth_gbs=1"}));
  const auto s = scenario({"features.activation_offload_layers=16", "hardware.pcie_bandwidth_gbs=1"});
  const auto r = run(s);
  // One direction's bytes per micro-batch, serial on its stream: the step takes at least that, twice per
  // micro-batch (the offloads of one micro-batch's forward finish before its backward reloads them).
  double per_mb = 0;
  for (auto t : testing::tasks_named(r, "offload to host")) per_mb += static_cast<double>(r.graph->task(t).duration_ns) * 1e-9;
  per_mb /= static_cast<double>(s.microbatches());
  CHECK(r.step_time_s > base.step_time_s + per_mb);
  CHECK(r.breakdown.bubble > 0.5 * per_mb);   // pp = 1: the idle time is the wait ("offload wait")
  CHECK(base.breakdown.bubble == 0);
}

TEST_CASE("activation offloading: Megatron's conditions are errors") {
  CHECK(error_of({"features.activation_offload_layers=32"}).find("fewer layers than the model's 32") != std::string::npos);
  CHECK(error_of({"features.activation_offload_layers=4", "parallel.pp=2", "training.global_batch=32"})
            .find("without pipeline parallelism") != std::string::npos);
  CHECK(error_of({"features.activation_offload_layers=4", "features.recompute=selective"}).find("recomputation") !=
        std::string::npos);
  CHECK(error_of({"features.activation_offload_layers=4", "features.cuda_graphs=true"}).find("CUDA graphs") !=
        std::string::npos);
  CHECK(error_of({"features.activation_offload_layers=-1"}).find("out of range") != std::string::npos);
}
