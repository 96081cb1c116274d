#pragma once
// The FSDP tests' fixture: Llama-2-7B on 16 H100 (2 NVLink domains), ZeRO-3 over all 16 (PyTorch FSDP2 by
// default), pure data parallelism, one micro-batch per rank, full recompute. tests/step/test_fsdp.cpp and
// tests/step/test_sharded_finalize.cpp.
#include <string>
#include <vector>

#include "tests/step/graph_helpers.h"

namespace mfusim::testing {

inline constexpr const char* kFsdpFixture = R"(
name = "fsdp fixture"
model = "llama2-7b"
hardware = "h100-sxm"
[cluster]
gpus = 16
[training]
seq_len = 4096
global_batch = 16
micro_batch = 1
[parallel]
tp = 1
pp = 1
zero_stage = 3
[features]
recompute = "full"
)";

inline config::Scenario fsdp_fixture(const std::vector<std::string>& sets = {}) {
  return fixture_scenario(kFsdpFixture, std::string(MFUSIM_TEST_DIR) + "/config/fsdp_fixture.toml", sets);
}

}  // namespace mfusim::testing
