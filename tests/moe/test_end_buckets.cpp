// The embedding's and the output head's gradients and parameters in the data-parallel buckets
// (step/data_parallel.cpp): with overlapped gradient reduction and parameter gather, every
// parameter a rank holds is reduced and gathered once, as without overlap (where one reduction
// of the rank's whole gradient does it), the embedding on the ranks of the first stage, the final
// norm and output head on those of the last.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "config/loader.h"
#include "tests/shipped_scenario.h"
#include "models/memory.h"
#include "step/lower.h"

using namespace mfusim;

namespace {
config::Scenario load(const std::string& file, const std::vector<std::string>& sets = {}) {
  return testing::shipped_scenario(file, sets);
}
}  // namespace

TEST_CASE("the embedding's and output head's gradients and parameters are in the overlapped DP buckets") {
  const std::vector<std::string> no_overlap = {"features.overlap_grad_reduce=false", "features.overlap_param_gather=false"};
  struct Case {
    std::string file;
    std::vector<std::string> sets;
  };
  const std::vector<Case> cases = {
      {"2048xh800_deepseek_v3.toml", {}},                       // DualPipe: ranks 0 and 15 hold both ends
      {"2048xh800_deepseek_v3.toml", {"schedule.name=1f1b"}},   // 1F1B: rank 0 the embedding, 15 the head
  };
  const auto s = load("2048xh800_deepseek_v3.toml");
  // One end's parameters on one rank (embedding or head: 129280 x 7168, untied, no TP).
  const double one_end = static_cast<double>(s.model.vocab) * static_cast<double>(s.model.hidden);
  REQUIRE(one_end > 0.9e9);
  for (const auto& c : cases)
    for (bool per_layer : {true, false}) {
      std::string what = c.file + (per_layer ? " per-layer" : " coarse");
      for (const auto& x : c.sets) what += " " + x;
      INFO(what);
      auto sets_b = c.sets;
      sets_b.insert(sets_b.end(), no_overlap.begin(), no_overlap.end());
      step::LowerOptions lo;
      lo.per_layer = per_layer;
      const auto a = step::lower(load(c.file, c.sets), lo), b = step::lower(load(c.file, sets_b), lo);
      const int p = static_cast<int>(a.dp_grad_bytes.size());
      REQUIRE(p == 16);
      for (int r = 0; r < p; ++r) {
        INFO("rank ", r);
        CHECK(a.dp_grad_bytes[r] == doctest::Approx(b.dp_grad_bytes[r]).epsilon(1e-9));
        CHECK(a.expert_dp_grad_bytes[r] == doctest::Approx(b.expert_dp_grad_bytes[r]).epsilon(1e-9));
        CHECK(a.dp_gather_bytes[r] == doctest::Approx(b.dp_gather_bytes[r]).epsilon(1e-9));
        CHECK(a.expert_dp_gather_bytes[r] == doctest::Approx(b.expert_dp_gather_bytes[r]).epsilon(1e-9));
      }
      // the first rank reduces at least the embedding's fp32 gradients beyond a middle rank's layers
      CHECK(a.dp_grad_bytes[0] - a.dp_grad_bytes[1] > 4.0 * one_end * 0.5);
    }
}
