// The coarse per-op lowering that `plan` simulates against the per-layer
// lowering that `run` reports. Without TP-comm overlap both play the same
// rules (segments in order on the compute stream, each waiting for its
// chain's previous collective), so the step times must agree closely.
// Where they may differ: the coarse task plays an op's TP/EP collectives
// locally, so a collective never shares its NVLink/NIC with a concurrent
// stage-to-stage send or DP bucket of the same rank (the per-layer run does,
// fair share), and DP buckets start at the end of the op instead of after the
// layer that finished the gradient. Stated tolerance: 2% of the step time.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "config/loader.h"
#include "step/simulate.h"

namespace fs = std::filesystem;
using namespace mfusim;

namespace {
const std::string kRoot = fs::path(MFUSIM_TEST_DIR).parent_path().string();
constexpr double kTolerance = 0.02;

void agree(const std::string& file, const std::vector<std::string>& sets) {
  config::LoadOptions lo;
  lo.overrides = sets;
  lo.overrides.push_back("features.tp_comm_overlap=false");
  const auto s = config::load_scenario(kRoot + "/scenarios/" + file, lo).base;
  step::SimulateOptions so;
  so.keep_timeline = false;
  so.per_layer = true;
  const auto fine = step::simulate(s, so);
  so.per_layer = false;
  const auto coarse = step::simulate(s, so);
  std::string what = file;
  for (const auto& x : sets) what += " " + x;
  INFO(what << ": per-layer " << fine.step_time_s << " s, coarse " << coarse.step_time_s << " s");
  MESSAGE(what << ": per-layer " << fine.step_time_s << " s, coarse " << coarse.step_time_s << " s, diff "
               << 100 * (coarse.step_time_s / fine.step_time_s - 1) << " %");
  CHECK(std::abs(coarse.step_time_s / fine.step_time_s - 1) <= kTolerance);
  CHECK(coarse.memory.fits == fine.memory.fits);
}
}  // namespace

TEST_CASE("coarse and per-layer lowerings agree on step time (no TP-comm overlap)") {
  agree("8xh100_llama3_8b.toml", {});
  agree("128xh100_70b.toml", {});
  agree("128xh100_70b.toml", {"features.flash_attention=true", "features.python_gc=false",
                              "schedule.name=interleaved-1f1b", "parallel.vpp=5"});
  agree("128xh100_70b.toml", {"features.flash_attention=true", "features.python_gc=false", "schedule.name=zb-h1"});
  agree("128xh100_70b.toml", {"features.flash_attention=true", "features.python_gc=false", "schedule.name=dualpipev",
                              "parallel.pp=2", "features.recompute=none"});
  agree("1024xa100_gpt3_175b.toml", {});
  // DualPipe with DeepEP's transfers beside the other chain's compute and the DP reduction overlapped:
  // the coarse task plays the EP slowdown per segment kind (layer::seg_slowdown), the per-layer
  // tasks get it from the engine (sim::ComputeMix).
  agree("2048xh800_deepseek_v3.toml", {});
  // Megatron's combined 1F1B: the steady state's F&B pairs in an interleaved schedule.
  agree("1024xh100_deepseek_v3_megatron.toml", {});
}
