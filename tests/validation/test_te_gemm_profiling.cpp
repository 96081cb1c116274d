// Transformer Engine's published GEMM profile per fp8 recipe (validation/te_gemm_profiling, SOURCES.md) against
// the quantisation kernels models::detail::fp8_cast_kernels builds for each recipe and the MXFP8 GEMM rate
// (hardware::CostDefaults::mxfp8_gemm_rate): the benchmark's autocast time less its pre-quantized time is
// the quantisation of each call's input (row-wise and column-wise: the weight requires its gradient) and
// weight (row-wise), which the kernels must price from their bytes at each part's bandwidth.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "config/loader.h"
#include "hardware/calibration.h"
#include "hardware/cost_model.h"
#include "models/kernel_builders.h"
#include "tests/validation/te_gemm_profile.h"
#include "validation/xla/xla_tables.h"

using namespace mfusim;
namespace vx = mfusim::validation::xla;
using config::Fp8Recipe;

namespace {

using test::te_profile::Call;
using test::te_profile::layer_calls;

// Seconds per layer of the quantisation kernels the model builds for the benchmark's calls.
double quantisation_seconds(const hardware::CostModel& cm, Fp8Recipe recipe, bool any_layout) {
  const models::detail::Fp8Cast input{recipe, any_layout, true}, weight{recipe, any_layout, false};
  double s = 0;
  for (const Call& c : layer_calls()) {
    for (const auto& k : models::detail::fp8_cast_kernels("x", "x_amax", "x_t", c.m, c.k, 1, input)) s += cm.time(k);
    for (const auto& k : models::detail::fp8_cast_kernels("w", "w_amax", "w_t", c.k, c.n, 1, weight)) s += cm.time(k);
  }
  return s;
}

}  // namespace

TEST_CASE("the fp8 recipes' quantisation kernels price Transformer Engine's published overheads on a B300 and an H200") {
  const auto t = test::te_profile::per_layer_ms();
  const auto b300 = config::load_hardware(vx::source_path("hardware/b300.toml"));
  const auto h200 = config::load_hardware(vx::source_path("hardware/h200.toml"));
  const auto h200_cal = hardware::read_calibration(vx::source_path("hardware/calibration/h200.toml"));
  const hardware::CostModel on_b300(b300, hardware::Precision::fp8);
  const hardware::CostModel on_h200(h200, hardware::Precision::fp8, &h200_cal);

  struct Case { const char* gpu; const char* recipe; Fp8Recipe r; const hardware::CostModel* cm; bool any_layout; };
  // The per-tensor GEMM of delayed scaling is current scaling's kernel: delayed's "pre-quantized" time is an
  // autocast run (the benchmark always quantises it), so both recipes' overheads are taken over current
  // scaling's pre-quantized GEMMs.
  const Case cases[] = {{"B300 SXM6 AC", "current", Fp8Recipe::current, &on_b300, true},
                        {"B300 SXM6 AC", "delayed", Fp8Recipe::tensorwise, &on_b300, true},
                        {"B300 SXM6 AC", "mxfp8", Fp8Recipe::mxfp8, &on_b300, true},
                        {"H200 NVL", "current", Fp8Recipe::current, &on_h200, false},
                        {"H200 NVL", "delayed", Fp8Recipe::tensorwise, &on_h200, false}};
  for (const Case& c : cases) {
    const std::string g = c.gpu;
    const std::string gemm_recipe = std::string(c.recipe) == "mxfp8" ? "mxfp8" : "current";
    const double measured = (t.at(g + "|autocast|" + c.recipe) - t.at(g + "|prequantized|" + gemm_recipe)) * 1e-3;
    const double modelled = quantisation_seconds(*c.cm, c.r, c.any_layout);
    std::printf("TE GEMM profile %-13s %-8s quantisation per layer: published %.3f ms, modelled %.3f ms (%+.0f%%)\n",
                c.gpu, c.recipe, measured * 1e3, modelled * 1e3, (modelled / measured - 1) * 100);
    CAPTURE(g);
    CAPTURE(c.recipe);
    // Within a quarter (modelled -22% to +19%): the published overheads also hold Transformer Engine's small per-call kernels (current
    // scaling's scale computation, delayed scaling's amax-history update) and their run-to-run spread (delayed
    // scaling "pre-quantized" is a second autocast run, 4% slower: 8.123 against 7.802 ms on the B300).
    CHECK(modelled / measured > 0.75);
    CHECK(modelled / measured < 1.25);
  }
  // The recipes' order on each part, as published (delayed < MXFP8 < current on the B300, delayed < current on
  // the H200); it follows from the bytes (3 < 4.06 < 5 per element on Blackwell), so it guards the byte
  // counts, not the source.
  CHECK(quantisation_seconds(on_b300, Fp8Recipe::tensorwise, true) < quantisation_seconds(on_b300, Fp8Recipe::mxfp8, true));
  CHECK(quantisation_seconds(on_b300, Fp8Recipe::mxfp8, true) < quantisation_seconds(on_b300, Fp8Recipe::current, true));
  CHECK(quantisation_seconds(on_h200, Fp8Recipe::tensorwise, false) < quantisation_seconds(on_h200, Fp8Recipe::current, false));
}

TEST_CASE("an MXFP8 GEMM runs at the published B300 ratio of the per-tensor fp8 GEMM's rate") {
  const auto t = test::te_profile::per_layer_ms();
  CHECK(hardware::CostDefaults::mxfp8_gemm_rate ==
        doctest::Approx(t.at("B300 SXM6 AC|prequantized|current") / t.at("B300 SXM6 AC|prequantized|mxfp8")));
  const auto b300 = config::load_hardware(vx::source_path("hardware/b300.toml"));
  const hardware::CostModel fp8(b300, hardware::Precision::fp8), bf16(b300, hardware::Precision::bf16);
  models::LayerKernels tensorwise, mx;
  const models::detail::Fp8Cast tw{Fp8Recipe::tensorwise, true}, mxq{Fp8Recipe::mxfp8, true};
  models::detail::linear("up", "up_dgrad", "up_wgrad", 15872, 4096, 16384, 2, tensorwise, 1, &tw);
  models::detail::linear("up", "up_dgrad", "up_wgrad", 15872, 4096, 16384, 2, mx, 1, &mxq);
  // The same GEMMs, marked MXFP8 only under that recipe; each priced at the rate's inverse on an fp8 model and
  // unchanged where it runs in bf16.
  REQUIRE(tensorwise.f.back().kind == hardware::KernelKind::gemm);
  CHECK_FALSE(tensorwise.f.back().mxfp8);
  CHECK(mx.f.back().mxfp8);
  CHECK(mx.w.back().mxfp8);
  const double tw_s = fp8.time(tensorwise.f.back()) - fp8.launch_time(tensorwise.f.back());
  const double mx_s = fp8.time(mx.f.back()) - fp8.launch_time(mx.f.back());
  REQUIRE(tw_s > 0);
  CHECK(tw_s / mx_s == doctest::Approx(hardware::CostDefaults::mxfp8_gemm_rate).scale(0));
  CHECK(bf16.time(mx.f.back()) / bf16.time(tensorwise.f.back()) == doctest::Approx(1.0).scale(0));
}
