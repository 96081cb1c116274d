// Context parallelism as implemented (ring P2P of K/V beside the attention
// steps, load-balanced causal chunks; gradients reduced over dp x cp) and the
// communication-computation interference of the step's collectives.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "config/loader.h"
#include "layer/pass_cost.h"
#include "step/simulate.h"

using namespace mfusim;

TEST_CASE("cp ring: closed forms of the ring's added time") {
  // Compute-bound steps, no interference: the transfers hide completely.
  CHECK(layer::cp_ring_extra(8.0, 1.0, 4, 1.0) == doctest::Approx(0.0));
  // Compute-bound with interference f: each of the cp-1 overlapped steps adds t (1 - 1/f).
  CHECK(layer::cp_ring_extra(8.0, 1.0, 4, 1.5) == doctest::Approx(3 * 1.0 * (1 - 1 / 1.5)));
  // Transfer-bound: each overlapped step lasts the transfer: (cp-1) t + c - core.
  CHECK(layer::cp_ring_extra(2.0, 3.0, 2, 1.0) == doctest::Approx(1 * 3.0 + 1.0 - 2.0));
  CHECK(layer::cp_ring_extra(2.0, 3.0, 1, 1.0) == 0.0);
}

namespace {
std::string scen(int cp, bool overlap_grad) {
  return std::string("model = \"llama3-8b\"\nhardware = \"h100-sxm\"\n[cluster]\ngpus = ") + std::to_string(cp) +
         "\n[training]\nseq_len = 8192\nglobal_batch = 4\nmicro_batch = 1\n[parallel]\ncp = " + std::to_string(cp) +
         "\ndistributed_optimizer = true\n[features]\nflash_attention = true\noverlap_grad_reduce = " +
         (overlap_grad ? "true" : "false") + "\noverlap_param_gather = false\n";
}
}  // namespace

TEST_CASE("cp: gradients are reduced over dp x cp (dp = 1, cp = 2 still reduces)") {
  const auto one = step::simulate(config::load_scenario_string(scen(1, false), "a.toml").base);
  const auto two = step::simulate(config::load_scenario_string(scen(2, false), "b.toml").base);
  CHECK(one.breakdown.dp_comm_exposed == 0.0);
  // Not overlapped: the reduce-scatter + all-gather of the 8B model's gradients over the cp pair is exposed.
  CHECK(two.breakdown.dp_comm_exposed > 0.01);
}

TEST_CASE("interference: an overlapped gradient reduction slows the backward it runs beside") {
  // The same step with the reduction overlapped with the backward (its NCCL kernels hold SMs and
  // stream HBM beside it) and after it (nothing beside the backward): the backward's compute is
  // longer in the first.
  const auto beside = step::simulate(config::load_scenario_string(scen(2, true), "b.toml").base);
  const auto after = step::simulate(config::load_scenario_string(scen(2, false), "b.toml").base);
  CHECK(beside.breakdown.backward > after.breakdown.backward * 1.001);
  CHECK(beside.breakdown.forward == doctest::Approx(after.breakdown.forward).epsilon(1e-9));
}

TEST_CASE("interference_s: the compute's slowdown beside overlapped communication, reported apart") {
  // Overlapped reduction: the backward is longer than with the reduction after it, and interference_s
  // says by how much (the same step otherwise; the breakdown's rank is the only rank).
  const auto beside = step::simulate(config::load_scenario_string(scen(2, true), "b.toml").base);
  const auto after = step::simulate(config::load_scenario_string(scen(2, false), "b.toml").base);
  CHECK(after.interference_s == 0.0);   // nothing runs beside the compute
  CHECK(beside.interference_s > 0.0);
  // It is part of the compute, not an extra part: at most the backward's growth plus the rest of the
  // compute's, and at least most of the backward's growth.
  const double grew = beside.breakdown.backward - after.breakdown.backward;
  CHECK(beside.interference_s <= beside.breakdown.forward + beside.breakdown.backward + beside.breakdown.optimizer);
  REQUIRE(grew > 0);
  CHECK(std::abs(beside.interference_s - grew) <= 0.05 * grew);
  // The parts still sum to the step.
  CHECK(beside.breakdown.total() == doctest::Approx(beside.step_time_s).epsilon(0.01));
}

TEST_CASE("pipeline sends slow the compute beside them by NCCL send/recv's footprint") {
  // Overlapped P2P (overlap_p2p_comm): the stage-to-stage sends run on their own streams while the next
  // micro-batch computes; their kernels hold SMs as the other collectives' do (docs/cost-model.md 4b). Their
  // class once was 0 (nothing slowed).
  auto s = config::load_scenario_string(
               "model = \"llama3-8b\"\nhardware = \"h100-sxm\"\n[cluster]\ngpus = 4\n[training]\nseq_len = 4096\n"
               "global_batch = 16\nmicro_batch = 1\n[parallel]\npp = 4\n[schedule]\nname = \"1f1b\"\n"
               "[features]\nflash_attention = true\noverlap_p2p_comm = true\n",
               "pp.toml")
               .base;
  step::SimulateOptions o;
  o.keep_timeline = true;
  const auto r = step::simulate(s, o);
  int sends = 0;
  for (sim::TaskId t = 0; t < static_cast<sim::TaskId>(r.graph->size()); ++t) {
    const auto& spec = r.graph->task(t);
    if (spec.kind != 'S') continue;
    ++sends;
    REQUIRE(spec.interferes != 0);
    CHECK(r.graph->contention(spec.interferes) > 0.0);
  }
  CHECK(sends > 0);
  CHECK(r.interference_s > 0.0);
}
