// Plan speed on the search space of scenarios/128xh100_70b.toml (Llama-2-70B,
// 128 x H100, global batch 512): configurations per second, with how many
// were rejected by shape rules, pruned by the memory lower bound and
// simulated. Goal (docs/plan.md): >= 10,000 configurations evaluated in
// <= 10 s on 2 cores.
//   plan/10:            the `mfusim plan` core on 2 threads, top 10 (default:
//                       branch and bound on the step-time lower bound)
//   plan/0:             every layout that survives the memory bound simulated
//   simulate_one:       one coarse simulation of the scenario's own layout
//   lower_bound:        the memory lower bound alone, per configuration
#include <benchmark/benchmark.h>

#include "config/loader.h"
#include "step/simulate.h"
#include "study/plan.h"

using namespace mfusim;

namespace {

const config::Scenario& base() {
  static const auto s = config::load_scenario(std::string(MFUSIM_SOURCE_DIR) + "/scenarios/128xh100_70b.toml").base;
  return s;
}

void BM_plan(benchmark::State& state) {
  study::PlanOptions po;
  po.threads = 2;
  po.keep = static_cast<std::size_t>(state.range(0));
  study::PlanResult r;
  for (auto _ : state) {
    r = study::plan(base(), base().gpus, po);
    benchmark::DoNotOptimize(r.fitting);
  }
  const double it = static_cast<double>(state.iterations());
  state.counters["considered"] = static_cast<double>(r.considered);
  state.counters["invalid"] = static_cast<double>(r.invalid);
  state.counters["pruned"] = static_cast<double>(r.pruned);
  state.counters["skipped"] = static_cast<double>(r.skipped);
  state.counters["simulated"] = static_cast<double>(r.simulated);
  state.counters["fit"] = static_cast<double>(r.fitting);
  state.counters["configs/s"] = benchmark::Counter(static_cast<double>(r.considered) * it, benchmark::Counter::kIsRate);
  state.counters["sims/s"] = benchmark::Counter(static_cast<double>(r.simulated) * it, benchmark::Counter::kIsRate);
}

void BM_simulate_one(benchmark::State& state) {
  step::SimulateOptions so;
  so.keep_timeline = false;
  so.per_layer = false;
  for (auto _ : state) {
    auto r = step::simulate(base(), so);
    benchmark::DoNotOptimize(r.step_time_s);
  }
}

void BM_lower_bound(benchmark::State& state) {
  const auto cands = study::enumerate_layouts(base(), base().gpus);
  std::vector<const config::Scenario*> ok;
  for (const auto& c : cands)
    if (config::validate(c).empty()) ok.push_back(&c);
  std::size_t n = 0;
  for (auto _ : state) {
    for (const auto* c : ok) benchmark::DoNotOptimize(study::memory_lower_bound(*c));
    n += ok.size();
  }
  state.counters["configs/s"] = benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsRate);
}

}  // namespace

BENCHMARK(BM_plan)->Arg(10)->Arg(0)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_simulate_one)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_lower_bound)->Unit(benchmark::kMillisecond)->Iterations(1);
