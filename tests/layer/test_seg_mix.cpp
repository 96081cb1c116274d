// A segment's mix of kernels (layer::LayerCosts::seg_of): the shares of its GPU time in attention and in
// memory-bound kernels and the memory-bound coefficient, which set how it slows beside a collective
// (layer::seg_slowdown; hardware/interference.h: runs 14, 26, 29).
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "hardware/interference.h"
#include "layer/pass_cost.h"
#include "models/kernel_builders.h"
#include "tests/shipped_scenario.h"

using namespace mfusim;

TEST_CASE("seg_of: a segment's attention and memory-bound shares and its memory coefficient") {
  const auto s = testing::shipped_scenario("8xh100_llama3_8b.toml");
  layer::LayerCosts lc(s);
  lc.place();
  const auto& cost = lc.layer_cost(0);
  REQUIRE(!cost.f.segs.empty());
  // The forward's first segment holds the attention core, its projections and norms.
  const layer::Seg& attn = cost.f.segs.front();
  CHECK(attn.attn_share() > 0.05);
  CHECK(attn.mem_share() > 0.0);
  CHECK(attn.attn_share() + attn.mem_share() < 1.0);   // the projections' GEMMs
  CHECK(attn.mem_coef >= hardware::memory_hbm_coefficient(0));
  CHECK(attn.mem_coef <= hardware::memory_hbm_coefficient(1));

  // One memory-bound kernel alone: its execution is the whole segment but for the launch gap.
  const hardware::Kernel k = models::detail::memk("copy", 1e9, 1e9, 0);
  const layer::Seg m = lc.seg_of({&k});
  CHECK(m.attn_share() == 0.0);
  CHECK(m.mem_share() > 0.9);
  CHECK(m.mem_share() <= 1.0);
  const hardware::CostModel cm(s.hardware, s.training.precision, s.calibration ? &*s.calibration : nullptr);
  const double exec = cm.time(k) - cm.launch_time(k);
  const double use = 2e9 / exec / s.hardware.hbm_bandwidth;
  CHECK(m.mem_coef == doctest::Approx(hardware::memory_hbm_coefficient(use)));

  // Its slowdown beside a collective: memory-bound work takes 1 + c f, not the GEMM factor.
  const hardware::Contention c{1.4, 1.1, 0.3};
  const double slow = layer::seg_slowdown(m, c);
  CHECK(slow == doctest::Approx((1 - m.mem_share()) * 1.4 + m.mem_share() * (1 + m.mem_coef * 0.3)));
  CHECK(slow < 1.4);
  CHECK(layer::seg_slowdown(attn, c) < 1.4);
  CHECK(layer::seg_slowdown(attn, c) > 1.0);
  // Nothing beside: no slowdown whatever the mix.
  CHECK(layer::seg_slowdown(attn, hardware::Contention{}) == doctest::Approx(1.0));
  // The engine's form keeps the shares to 1/255.
  const sim::ComputeMix mx = layer::mix_of(attn);
  CHECK(std::abs(mx.attention / 255.0 - attn.attn_share()) <= 0.5 / 255);
  CHECK(std::abs(mx.memory / 255.0 - attn.mem_share()) <= 1.0 / 255);
  CHECK(mx.host_only == 0);
}

TEST_CASE("split_overlap: the part beside the TP collective is GEMM chunks; attention and memory work stay ahead") {
  layer::Seg sg;
  sg.ns = 1000;
  sg.overlap_ns = 400;
  sg.attn_ns = 300;
  sg.mem_ns = 200;
  sg.mem_coef = 0.5;
  sg.comm = hardware::Contention{1.3, 1.1, 0.2};
  const auto [head, tail] = layer::split_overlap(sg);
  CHECK(head.ns == 600);
  CHECK(tail.ns == 400);
  CHECK(tail.attn_share() == 0.0);
  CHECK(tail.mem_share() == 0.0);
  CHECK(layer::seg_slowdown(tail, sg.comm) == doctest::Approx(1.3));   // the GEMM curve
  CHECK(head.attn_share() == doctest::Approx(0.5));
  CHECK(head.mem_share() == doctest::Approx(200.0 / 600.0));
  // A head shorter than the attention and memory work keeps no more than its own time.
  sg.overlap_ns = 900;
  const auto [h2, t2] = layer::split_overlap(sg);
  CHECK(h2.attn_ns + h2.mem_ns <= static_cast<double>(h2.ns));
  CHECK(h2.attn_share() + h2.mem_share() <= 1.0);
}
