#pragma once
// Transformer Engine's published GEMM profile (validation/te_gemm_profiling, SOURCES.md), shared by the tests
// that read it: the per-layer times and the benchmark layer's twelve calls.
#include <map>
#include <string>
#include <vector>

#include "validation/xla/xla_tables.h"

namespace mfusim::test::te_profile {

// per_layer.csv: {gpu, mode, recipe} joined by '|' -> milliseconds per layer.
inline std::map<std::string, double> per_layer_ms() {
  std::map<std::string, double> t;
  for (const auto& f : validation::xla::csv_rows("validation/te_gemm_profiling/per_layer.csv", 7))
    t[f[0] + "|" + f[1] + "|" + f[2]] = std::stod(f[6]);
  return t;
}

// The benchmark's twelve calls of one layer (hidden 4096, intermediate 16384, 15,872 tokens): each a te.Linear
// forward of M x K by K x N (fprop, dgrad and wgrad shapes alike).
struct Call { double m, k, n; };
inline std::vector<Call> layer_calls() {
  const double M = 31 * 512, h = 4096, f = 16384;
  return {{M, h, 3 * h}, {M, h, h}, {M, h, f}, {M, f, h},      // fprop
          {M, 3 * h, h}, {M, h, h}, {M, f, h}, {M, h, f},      // dgrad
          {h, M, 3 * h}, {h, M, h}, {h, M, f}, {f, M, h}};     // wgrad
}

}  // namespace mfusim::test::te_profile
