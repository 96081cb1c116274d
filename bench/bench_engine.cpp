// Engine speed on a synthetic pipeline of ~50k tasks: 1F1B with p = 32 ranks
// and m = 400 micro-batches lowered in schedule-lab mode (25.6k compute tasks,
// ~25k stage-to-stage sends). The product target is ~10 ms per simulated step.
//   fast:     no resources, no contention (end times fixed at start)
//   dynamic:  every send shares its rank's NIC (fair share) and interferes
//             with compute (contention 0.1): progress-based re-timing
//   lower+run: lab lowering (Boost.Graph build) plus the run
#include <benchmark/benchmark.h>

#include "schedules/lab.h"
#include "sim/engine.h"

using namespace mfusim;

namespace {

config::ScheduleCosts lab_costs() {
  config::ScheduleCosts c;
  c.f = 1e-3;
  c.b = 2e-3;
  c.comm = 0.1e-3;
  return c;
}

const schedules::PipelineSchedule& pipeline() {
  static const auto s = schedules::one_f_one_b({32, 400, 1});
  return s;
}

sim::TaskGraph with_shared_nics(const sim::TaskGraph& g) {
  sim::TaskGraph h;
  for (const auto& st : g.streams()) h.add_stream(st.rank, st.name, st.compute);
  std::vector<sim::ResourceId> nic;
  for (int r = 0; r < g.ranks(); ++r) nic.push_back(h.add_resource("nic" + std::to_string(r)));
  h.set_contention(0.1);
  for (std::size_t t = 0; t < g.size(); ++t) {
    sim::TaskSpec spec = g.task(static_cast<sim::TaskId>(t));
    if (spec.kind == 'S') {
      spec.resources = {nic[static_cast<std::size_t>(g.streams()[static_cast<std::size_t>(spec.stream)].rank)]};
      spec.interferes = true;
    }
    h.add(spec, g.name(static_cast<sim::TaskId>(t)));
  }
  const auto& graph = g.graph();
  for (std::uint32_t v = 0; v < g.size(); ++v)
    for (auto [e, end] = boost::out_edges(v, graph); e != end; ++e)
      h.depend(static_cast<sim::TaskId>(v), static_cast<sim::TaskId>(boost::target(*e, graph)));
  return h;
}

void report(benchmark::State& state, const sim::TaskGraph& g, std::int64_t events) {
  state.counters["tasks"] = static_cast<double>(g.size());
  state.counters["edges"] = static_cast<double>(g.dependencies());
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(events) * static_cast<double>(state.iterations()),
                                                  benchmark::Counter::kIsRate);
}

void BM_run_fast(benchmark::State& state) {
  const auto g = schedules::lower_lab(pipeline(), lab_costs());
  std::int64_t events = 0;
  for (auto _ : state) {
    auto tl = sim::run(g);
    events = tl.events;
    benchmark::DoNotOptimize(tl.makespan);
  }
  report(state, g, events);
}

void BM_run_dynamic(benchmark::State& state) {
  const auto g = with_shared_nics(schedules::lower_lab(pipeline(), lab_costs()));
  std::int64_t events = 0;
  for (auto _ : state) {
    auto tl = sim::run(g);
    events = tl.events;
    benchmark::DoNotOptimize(tl.makespan);
  }
  report(state, g, events);
}

void BM_lower_and_run(benchmark::State& state) {
  std::int64_t events = 0;
  std::size_t tasks = 0;
  for (auto _ : state) {
    auto r = schedules::run_lab(pipeline(), lab_costs());
    events = r.timeline.events;
    tasks = r.graph.size();
    benchmark::DoNotOptimize(r.makespan_s);
  }
  state.counters["tasks"] = static_cast<double>(tasks);
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(events) * static_cast<double>(state.iterations()),
                                                  benchmark::Counter::kIsRate);
}

}  // namespace

BENCHMARK(BM_run_fast)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_run_dynamic)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_lower_and_run)->Unit(benchmark::kMillisecond);
