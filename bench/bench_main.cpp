// main() of every benchmark program: BENCHMARK_MAIN, with the process memory
// tuned first as in `mfusim` (sim/process_memory.h), so the benchmarks time
// what the command line runs.
#include <benchmark/benchmark.h>

#include "sim/process_memory.h"

int main(int argc, char** argv) {
  mfusim::sim::tune_process_memory();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
