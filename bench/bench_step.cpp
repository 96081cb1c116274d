// Speed of one simulated training step on the shipped scenarios, split into
// its phases: lowering (scenario -> task graph), the engine run, and the whole
// step::simulate (lower + run + analysis off the timeline). Per-layer
// lowering (what `mfusim run` does) and the coarse per-op lowering (what
// `plan` uses). Product target: the 128xh100_70b step in under 10 ms of CPU.
// Counters: tasks and events per step, events/s of the engine.
//   build/bench/bench_step --benchmark_filter=70b
#include <benchmark/benchmark.h>

#include <map>
#include <string>

#include "config/loader.h"
#include "step/simulate.h"
#include "step/lower.h"
#include "sim/engine.h"

using namespace mfusim;

namespace {

const config::Scenario& scenario(const std::string& file) {
  static std::map<std::string, config::Scenario> cache;
  auto it = cache.find(file);
  if (it == cache.end())
    it = cache.emplace(file, config::load_scenario(std::string(MFUSIM_SOURCE_DIR) + "/scenarios/" + file).base).first;
  return it->second;
}

void counters(benchmark::State& state, std::int64_t tasks, std::int64_t events) {
  state.counters["tasks"] = static_cast<double>(tasks);
  state.counters["events"] = static_cast<double>(events);
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(events) * static_cast<double>(state.iterations()),
                                                  benchmark::Counter::kIsRate);
}

void BM_simulate(benchmark::State& state, const std::string& file, bool per_layer) {
  const auto& s = scenario(file);
  step::SimulateOptions o;
  o.per_layer = per_layer;
  o.keep_timeline = false;
  std::int64_t tasks = 0, events = 0;
  for (auto _ : state) {
    const auto r = step::simulate(s, o);
    tasks = r.tasks;
    events = r.events;
    benchmark::DoNotOptimize(r.step_time_s);
  }
  counters(state, tasks, events);
}

void BM_lower(benchmark::State& state, const std::string& file, bool per_layer) {
  const auto& s = scenario(file);
  std::int64_t tasks = 0;
  for (auto _ : state) {
    auto low = step::lower(s, step::LowerOptions{per_layer});
    tasks = static_cast<std::int64_t>(low.graph.size());
    benchmark::DoNotOptimize(low.ranks);
  }
  state.counters["tasks"] = static_cast<double>(tasks);
}

void BM_run(benchmark::State& state, const std::string& file, bool per_layer) {
  const auto& s = scenario(file);
  const auto low = step::lower(s, step::LowerOptions{per_layer});
  std::int64_t events = 0;
  for (auto _ : state) {
    const auto tl = sim::run(low.graph);
    events = tl.events;
    benchmark::DoNotOptimize(tl.makespan);
  }
  counters(state, static_cast<std::int64_t>(low.graph.size()), events);
}

}  // namespace

#define MFUSIM_STEP_BENCH(tag, file)                                                                     \
  BENCHMARK_CAPTURE(BM_simulate, tag##_per_layer, file, true)->Unit(benchmark::kMillisecond);            \
  BENCHMARK_CAPTURE(BM_simulate, tag##_coarse, file, false)->Unit(benchmark::kMillisecond);              \
  BENCHMARK_CAPTURE(BM_lower, tag##_per_layer, file, true)->Unit(benchmark::kMillisecond);               \
  BENCHMARK_CAPTURE(BM_lower, tag##_coarse, file, false)->Unit(benchmark::kMillisecond);                 \
  BENCHMARK_CAPTURE(BM_run, tag##_per_layer, file, true)->Unit(benchmark::kMillisecond);                 \
  BENCHMARK_CAPTURE(BM_run, tag##_coarse, file, false)->Unit(benchmark::kMillisecond)

MFUSIM_STEP_BENCH(70b_128xh100, "128xh100_70b.toml");
MFUSIM_STEP_BENCH(405b_16384xh100, "16384xh100_405b.toml");

