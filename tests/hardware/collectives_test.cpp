#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "hardware/collectives.h"
#include "tests/hardware/test_helpers.h"

using namespace mfusim::hardware;
using mfusim::hardware::testing::h100;
using mfusim::hardware::testing::overall_collectives;

namespace {
const double kB_nv = 450e9 * 0.80;   // NVLink bus bandwidth: nccl-tests H100 ~360 GB/s of 450
const double kB_ib = 50e9 * 0.90;    // NDR 400 Gb/s NIC: ~45 GB/s of 50
const double kA_nv = 1e-6, kA_ib = 5e-6;
const Group kNode8{8, 1, 8};
}  // namespace

TEST_CASE("collective times equal the nccl-tests formulas inside one NVLink domain") {
  // nccl-tests doc/PERFORMANCE.md (formulas.md §4.1), plus alpha per step:
  //   all-reduce (ring)       t = 2(n-1)/n * S/B + 2(n-1) a
  //   reduce-scatter, all-gather t = (n-1)/n * S/B + (n-1) a
  //   all-to-all               t = (n-1)/n * S/B + (n-1) a
  //   send/recv                t = S/B + a
  const HardwareSpec hw = h100();
  const double S = 256e6;
  const int n = 8;
  CHECK(collective_time(Collective::all_reduce, S, kNode8, hw, AlgoChoice::ring).seconds ==
        doctest::Approx(2.0 * (n - 1) / n * S / kB_nv + 2.0 * (n - 1) * kA_nv).epsilon(1e-12));
  CHECK(collective_time(Collective::reduce_scatter, S, kNode8, hw).seconds ==
        doctest::Approx(double(n - 1) / n * S / kB_nv + (n - 1) * kA_nv).epsilon(1e-12));
  CHECK(collective_time(Collective::all_gather, S, kNode8, hw).seconds ==
        doctest::Approx(double(n - 1) / n * S / kB_nv + (n - 1) * kA_nv).epsilon(1e-12));
  CHECK(collective_time(Collective::all_to_all, S, kNode8, hw).seconds ==
        doctest::Approx(double(n - 1) / n * S / kB_nv + (n - 1) * kA_nv).epsilon(1e-12));
  CHECK(collective_time(Collective::send_recv, S, Group{2, 1, 2}, hw).seconds ==
        doctest::Approx(S / kB_nv + kA_nv).epsilon(1e-12));
  // Tree (double binary tree, pipelined): t = 2 S/B + 2 ceil(log2 n) a.
  CHECK(collective_time(Collective::all_reduce, S, kNode8, hw, AlgoChoice::tree).seconds ==
        doctest::Approx(2.0 * S / kB_nv + 2.0 * 3 * kA_nv).epsilon(1e-12));
  // Bus bandwidth identity (nccl-tests): busbw = algbw * 2(n-1)/n = B when a = 0.
  HardwareSpec no_latency = hw;
  no_latency.nvlink_latency = 0;
  const double t = collective_time(Collective::all_reduce, S, kNode8, no_latency, AlgoChoice::ring).seconds;
  CHECK((S / t) * 2.0 * (n - 1) / n == doctest::Approx(kB_nv));
  // A group of one costs nothing.
  CHECK(collective_time(Collective::all_reduce, S, Group{}, hw).seconds == 0.0);
}

TEST_CASE("collectives across domains with one rank per domain run on the NIC") {
  // DP group with tp=8: one rank per node, each on its own rail NIC.
  const HardwareSpec hw = h100();
  const double S = 1e9;
  const Group dp{16, 16, 1};
  const int n = 16;
  CHECK(collective_time(Collective::all_reduce, S, dp, hw, AlgoChoice::ring).seconds ==
        doctest::Approx(2.0 * (n - 1) / n * S / kB_ib + 2.0 * (n - 1) * kA_ib).epsilon(1e-12));
  CHECK(collective_time(Collective::reduce_scatter, S, dp, hw).seconds ==
        doctest::Approx(double(n - 1) / n * S / kB_ib + (n - 1) * kA_ib).epsilon(1e-12));
  CHECK(collective_time(Collective::all_to_all, S, dp, hw).seconds ==
        doctest::Approx(double(n - 1) / n * S / kB_ib + (n - 1) * kA_ib).epsilon(1e-12));
  CHECK(collective_time(Collective::send_recv, S, Group{2, 2, 1}, hw).seconds ==
        doctest::Approx(S / kB_ib + kA_ib).epsilon(1e-12));
  const auto t = collective_time(Collective::all_reduce, S, dp, hw, AlgoChoice::ring);
  CHECK(t.nic_bytes == doctest::Approx(2.0 * (n - 1) / n * S));
  CHECK(t.nvlink_bytes == doctest::Approx(0.0));
}

TEST_CASE("hierarchical all-reduce lies between its intra- and inter-node bounds") {
  // Bandwidth bounds (alpha = 0): lower, all of S on NVLink, 2(n-1)/n * S/B_nvlink;
  // upper, all of S on one NIC per rank, 2(n-1)/n * S/B_nic.
  // Hierarchical = 2 (p-1)/p S/B_nv + all-reduce of S/p over the d domains on the NIC.
  HardwareSpec hw = h100();
  hw.nvlink_latency = 0;
  hw.nic_latency = 0;
  const int n = 64, p = 8, d = 8;
  for (const Group& g : {Group{64, 8, 8}, Group{64, 16, 4}, Group{64, 32, 2}}) {
    for (double S : {1e6, 64e6, 1e9, 8e9}) {
      const double intra = 2.0 * (n - 1) / n * S / kB_nv;
      const double inter = 2.0 * (n - 1) / n * S / kB_ib;
      const auto h = hierarchical_all_reduce(S, g, hw);
      CHECK(h.algorithm == Algorithm::hierarchical);
      CHECK(h.seconds > intra);
      CHECK(h.seconds < inter);
    }
  }
  // With latency, the closed form term by term (ceil(log2 8) = 3 tree steps).
  const HardwareSpec real = h100();
  for (double S : {1e6, 1e9}) {
    const double ring_inter = 2.0 * (d - 1) / d * (S / p) / kB_ib + 2.0 * (d - 1) * kA_ib;
    const double tree_inter = 2.0 * (S / p) / kB_ib + 2.0 * 3 * kA_ib;
    CHECK(hierarchical_all_reduce(S, Group{64, 8, 8}, real).seconds ==
          doctest::Approx(2.0 * ((p - 1.0) / p * S / kB_nv + (p - 1) * kA_nv) + std::min(ring_inter, tree_inter)).scale(0));
    CHECK(hierarchical_all_reduce(S, Group{64, 8, 8}, real).seconds <
          2.0 * (n - 1) / n * S / kB_ib + 2.0 * (n - 1) * kA_ib);
  }
}

TEST_CASE("TP of 16 on 8-GPU domains is slower than TP of 8") {
  const HardwareSpec hw = h100();
  const Placement p8 = place(Layout{8, 1, 1, 4, 1}, hw);
  const Placement p16 = place(Layout{16, 1, 1, 2, 1}, hw);
  CHECK_FALSE(p8.tp.crosses_domains());
  CHECK(p16.tp.domains == 2);
  CHECK(p16.tp.per_domain == 8);
  REQUIRE(p16.warnings.size() == 1);
  CHECK(p16.warnings[0].rfind("tp=16 spans 2 NVLink domains of 8 GPUs", 0) == 0);
  CHECK(p8.warnings.empty());
  for (double S : {1e6, 32e6, 512e6}) {
    for (Collective c : {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter}) {
      CHECK(collective_time(c, S, p16.tp, hw).seconds > collective_time(c, S, p8.tp, hw).seconds);
    }
  }
}

TEST_CASE("ring vs tree crossover by message size at 64 ranks across nodes") {
  // Tree: 2 log2(n) latency steps; ring: 2(n-1). Ring's bandwidth term 2(n-1)/n S/B is
  // smaller than tree's 2 S/B, so tree wins small messages and ring wins large ones.
  const HardwareSpec hw = h100();
  const Group g{64, 64, 1};
  auto ring = [&](double S) { return collective_time(Collective::all_reduce, S, g, hw, AlgoChoice::ring).seconds; };
  auto tree = [&](double S) { return collective_time(Collective::all_reduce, S, g, hw, AlgoChoice::tree).seconds; };
  CHECK(tree(1e3) < ring(1e3));
  CHECK(tree(1e6) < ring(1e6));
  CHECK(ring(16e9) < tree(16e9));
  // Exactly one crossover over powers of two.
  int switches = 0;
  bool tree_wins = true;
  for (double S = 1024; S <= 64e9; S *= 2) {
    const bool now = tree(S) < ring(S);
    if (now != tree_wins) ++switches;
    tree_wins = now;
  }
  CHECK(switches == 1);
  CHECK_FALSE(tree_wins);
  // Closed-form crossover: 2(n-1) a + 2(n-1)/n S/B = 2 log2(n) a + 2 S/B
  //   => S* = (2(n-1) - 2 log2 n) a B n / 2.
  const double s_star = (2.0 * 63 - 12) * kA_ib * kB_ib * 64 / 2;
  CHECK(tree(0.99 * s_star) < ring(0.99 * s_star));
  CHECK(ring(1.01 * s_star) < tree(1.01 * s_star));
}

TEST_CASE("auto picks the fastest algorithm; forced choices are obeyed") {
  const HardwareSpec hw = h100();
  for (const Group& g : {Group{8, 1, 8}, Group{64, 64, 1}, Group{64, 8, 8}, Group{32, 4, 8}, Group{576, 8, 72}}) {
    for (double S = 256; S <= 32e9; S *= 4) {
      const auto r = collective_time(Collective::all_reduce, S, g, hw, AlgoChoice::ring);
      const auto t = collective_time(Collective::all_reduce, S, g, hw, AlgoChoice::tree);
      const auto a = collective_time(Collective::all_reduce, S, g, hw, AlgoChoice::auto_);
      CHECK(r.algorithm == Algorithm::ring);
      CHECK(t.algorithm == Algorithm::tree);
      double best = std::min(r.seconds, t.seconds);
      if (g.crosses_domains() && g.per_domain > 1) best = std::min(best, hierarchical_all_reduce(S, g, hw).seconds);
      CHECK(a.seconds == doctest::Approx(best).scale(0));
      CHECK(a.seconds <= r.seconds);
      CHECK(a.seconds <= t.seconds);
    }
  }
}

TEST_CASE("placement follows Megatron order: TP, CP, EP (inside DP), DP, PP") {
  const HardwareSpec hw = h100();
  // 128 GPUs: tp=8 fills a node, so DP and PP groups are one rank per node.
  const Placement a = place(Layout{8, 1, 1, 4, 4}, hw);
  CHECK(a.tp.size == 8);
  CHECK(a.tp.domains == 1);
  CHECK(a.dp.size == 4);
  CHECK(a.dp.domains == 4);
  CHECK(a.dp.per_domain == 1);
  CHECK(a.pp_link.crosses_domains());
  // tp=2, cp=2, dp=8 (ep=2 inside it), pp=2: EP stride tp*cp = 4, two ranks in one node.
  const Placement b = place(Layout{2, 2, 2, 8, 2}, hw);
  CHECK(b.cp.domains == 1);
  CHECK(b.ep.size == 2);
  CHECK(b.ep.domains == 1);
  CHECK(b.dp.size == 8);
  CHECK(b.dp.domains == 4);
  CHECK(b.dp.per_domain == 2);
  // MoE: tp=1, ep=8 of dp=64: an expert group is one node.
  const Placement c = place(Layout{1, 1, 8, 64, 1}, hw);
  CHECK(c.ep.domains == 1);
  CHECK(c.ep.per_domain == 8);
  CHECK(c.dp.domains == 8);
  // ep=16 spans two nodes of 8.
  const Placement e = place(Layout{1, 1, 16, 64, 1}, hw);
  CHECK(e.ep.domains == 2);
  CHECK(e.ep.per_domain == 8);
  // tp=3 on 8-GPU nodes: some group straddles a node boundary.
  const Placement f = place(Layout{3, 1, 1, 8, 1}, hw);
  CHECK(f.tp.domains == 2);
  CHECK_FALSE(f.warnings.empty());
  // NVL72: tp=8 x dp=9 in one 72-GPU domain.
  HardwareSpec nvl = hw;
  nvl.gpus_per_node = 72;
  const Placement g = place(Layout{8, 1, 1, 9, 2}, nvl);
  CHECK(g.dp.domains == 1);
  CHECK(g.pp_link.crosses_domains());
}

TEST_CASE("a calibration's collective fit replaces the default efficiencies") {
  HardwareSpec hw = h100();
  const Calibration cal = overall_collectives();
  const double S = 1e8;
  CHECK(collective_time(Collective::all_reduce, S, kNode8, hw, AlgoChoice::ring, &cal).seconds ==
        doctest::Approx(2.0 * 7 / 8 * S / 300e9 + 2.0 * 7 * 2e-6).scale(0));
  CHECK(collective_time(Collective::all_gather, S, Group{4, 4, 1}, hw, AlgoChoice::ring, &cal).seconds ==
        doctest::Approx(3.0 / 4 * S / 40e9 + 3 * 8e-6).scale(0));
  CHECK(nvlink_efficiency() == 0.80);
  CHECK(nic_efficiency() == 0.90);
  CHECK(nvlink_efficiency(&cal, &hw) == doctest::Approx(300.0 / 450));
  CHECK(nic_efficiency(&cal, &hw) == doctest::Approx(40.0 / 50));
}
