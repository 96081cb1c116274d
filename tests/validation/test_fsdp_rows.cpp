// Published FSDP runs (validation/fsdp/rows.csv) through the same code as
// validate_fsdp (validation/fsdp/fsdp_rows.h): a regression guard on the
// median |error| per half (docs/fsdp.md). Achieved when this guard was set (after the
// calibration, framework AC, per-op SAC, FSDP2 copies, torch loss and host-cost mechanisms):
//   tuning   49 rows: tokens/s per GPU 34.8%, peak memory 18.4% (10 rows)
//   heldout  48 rows: tokens/s per GPU 41.0%, peak memory 19.4% (10 rows)
// (first guard: 47.0% / 29.6% and 51.3% / 32.1%)
// then far from the 10% targets; now 8.1% / 8.3% tokens/s and 5.8% / 5.3% memory (the history below). A change
// that makes them worse by about a point fails, one that improves them should lower these.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "validation/fsdp/fsdp_rows.h"

using namespace mfusim;

TEST_CASE("fsdp rows: every published row is a valid scenario and the medians per half do not regress") {
  const auto rows = validation::fsdp::read_rows(validation::source_path("validation/fsdp/rows.csv"),
                                                validation::source_path("validation/fsdp/split.csv"));
  REQUIRE(rows.size() == 97);
  struct Half { const char* name; double tps, mem; };
  // The tile-form attention fit (run 22, docs/cost-model.md §2) moved the tuning median 34.8 -> 37.1%
  // (an 8k causal forward priced ~8% faster, measured back to back); the eager kernel families measured
  // on the H200 in run 8, now in the shipped h200.toml too, brought it to 34.9% (held-out 41.4%).
  // The torchtitan rows' max_reserved compared with the simulated reserved peak (the caching-allocator
  // model, mechanism reserved_memory): peak memory 18.4 -> 18.1% (tuning), 19.4 -> 12.8% (held-out).
  // FlashAttention-2 for SDPA's rows (run 31): tokens/s 34.1 -> 27.8% (tuning), 39.6 -> 28.0% (held-out). The
  // stated 500 W power limit of torchtitan's H100s (run 33's [power] fit, mechanism power_limit): 27.8 -> 23.4%
  // (tuning), 28.0 -> 23.7% (held-out, printed once after the change). The loss's memory as run 34 measured
  // it (the eager loss's transients, played block by block through the allocator; torchtitan's compiled loss
  // from 2025-04): peak memory 18.1 -> 3.8% (tuning), 12.8 -> 4.4% (held-out, printed once after the change);
  // FSDP's gradients allocated by the backward (run 35): 3.9% (tuning), 3.7% (held-out, printed once after).
  // FSDP's collectives with their own contention class (they had named class 1: none at tp 1; runs 36-37):
  // tokens/s 23.4 -> 18.6% (tuning), 23.7 -> 17.2% (held-out, printed once after the change). The network the
  // rows state (mechanism stated_network: fms-fsdp's node totals): 18.6 -> 15.9% (tuning), 17.2 -> 15.5% (held-out,
  // printed once after the change).
  // llm-foundry's Triton attention at FlashAttention-2's rate (run 38: the rest of their block priced within 0-6%):
  // 15.9 -> 14.0% (tuning), 15.5 -> 13.0% (held-out, printed once after the change).
  // FSDP2's states as PyTorch keeps them (the fp32 shard is the master: 16 bytes per parameter with the gradients,
  // where Megatron's layout holds 18; run 35 measured 16.0 at the optimizer step): peak memory 3.9 -> 5.8%
  // (tuning), 3.7 -> 5.3% (held-out, printed once after the change). Every torchtitan row is now under its
  // published max_reserved: the 2 bytes per parameter had hidden part of the caching allocator's excess on whole
  // steps that the simulated reserved peak still lacks (run 35: torch 1.16-1.33 x allocated; docs/fsdp.md).
  // The gradient reduction precision each source's code sets (mechanism stated_reduce_dtype: fms-fsdp's bfSixteen
  // policy and llm-foundry's PURE mode reduce in bf16; the rows had all reduced in fp32): tokens/s 14.0 -> 15.4%
  // (tuning), 13.0 -> 14.4% (held-out, printed once after the change). A correction of the rows' set-up that moved
  // them away from their published figures (fms-fsdp 7.8 -> 14.2%: its rows had been right with twice the bytes
  // on their stated network); the bound moved with it.
  // FSDP1's gradient cast + divide and FSDP2's copy-in with run 39's contention class (not hidden under the
  // backward beside them): tokens/s 15.4 -> 14.0% (tuning), 14.4 -> 13.8% (held-out, printed once after).
  // Compute at the pace of the slowest of the ranks it waits for every micro-batch (run 40; a ZeRO-3 rank waits
  // for its shard group at every unit's gather): 14.0 -> 12.0% (tuning), 13.8 -> 11.4% (held-out, printed once after).
  // llm-foundry's Triton attention at its own measured rate (run 42, mechanism triton_measured, the calibration's
  // [attention_triton]: 2.2-2.9x FlashAttention-2's time at the rows' shapes): 12.0 -> 8.1% (tuning), 11.4 -> 8.1%
  // (held-out, printed once after the change); both under the 10%. The review's mends of the fit (each launch
  // its own intercept, the busy share, the priced GPU's SMs, bf16 only): 8.1% (tuning), 8.3% (held-out).
  for (const Half h : {Half{"tuning", 0.09, 0.06}, Half{"heldout", 0.09, 0.055}}) {
    std::vector<double> tps, mem;
    int n = 0;
    for (const auto& r : rows) {
      if (r.half != h.name) continue;
      ++n;
      const auto c = validation::fsdp::compare(r);
      CAPTURE(c.id);
      CAPTURE(c.note);
      CHECK(c.expressible);
      if (!c.expressible) continue;
      CHECK(c.predicted_tps > 0);
      tps.push_back(std::fabs(c.tps_error));
      if (c.published_mem > 0) mem.push_back(std::fabs(c.mem_error));
    }
    CAPTURE(h.name);
    CHECK(n >= 48);
    MESSAGE(std::string(h.name) << ": tokens/s median |error| " << 100 * validation::median(tps) << "%, memory "
                   << 100 * validation::median(mem) << "% over " << mem.size());
    CHECK(validation::median(tps) <= h.tps);
    CHECK(validation::median(mem) <= h.mem);
  }
}

TEST_CASE("fsdp rows: the power limit a row's gpu column states") {
  using validation::fsdp::stated_power_limit_w;
  CHECK(stated_power_limit_w("NVIDIA H100 96GB HBM2e SXM, 500 W power limit (Meta Grand Teton)") == 500);
  CHECK(stated_power_limit_w("H100, 450.5 W power limit") == 450.5);
  CHECK(stated_power_limit_w("NVIDIA H100 94/95GB HBM2e SXM, lower TDP") == 0);
  CHECK(stated_power_limit_w(" W power limit") == 0);
  // The 30 Grand Teton rows say 500 W and run at it; the others keep their profile's 700 W.
  const auto rows = validation::fsdp::read_rows(validation::source_path("validation/fsdp/rows.csv"),
                                                validation::source_path("validation/fsdp/split.csv"));
  int at500 = 0;
  for (const auto& r : rows) {
    const auto s = validation::fsdp::row_scenario(r);
    if (s.hardware.power_limit_w == 500) ++at500;
    else CHECK((s.hardware.power_limit_w == 700 || s.hardware.power_limit_w == 0));
  }
  CHECK(at500 == 30);
}

TEST_CASE("fsdp rows: the inter-node network a row's gpu column states, per GPU or the node's over its 8 GPUs") {
  using validation::fsdp::stated_nic_bandwidth;
  // Every distinct statement in rows.csv, verbatim.
  CHECK(stated_nic_bandwidth("NVIDIA H100 96GB HBM2e SXM, 500 W power limit (Meta Grand Teton: 8 GPU/host NVLink, "
                             "400 Gb/s RDMA per GPU)", 8) == doctest::Approx(50e9));
  CHECK(stated_nic_bandwidth("NVIDIA H200 (WhiteFiber; 8 GPU/host NVLink; 400 Gb/s CX-7 RDMA per GPU)", 8) ==
        doctest::Approx(50e9));
  CHECK(stated_nic_bandwidth("NVIDIA A100 80GB, 128 GPUs, 400 Gb/s (README header; 16 nodes x 8 assumed from "
                             "nproc_per_node=8 in scripts/train.sh)", 8) == doctest::Approx(6.25e9));
  CHECK(stated_nic_bandwidth("NVIDIA H100 80GB (README: \"H100 96 GPUs with 800 Gbps\"; 12 nodes x 8)", 8) ==
        doctest::Approx(12.5e9));
  CHECK(stated_nic_bandwidth("NVIDIA A100 40GB (MosaicML platform; 1600 Gb/s node-to-node RoCE)", 8) ==
        doctest::Approx(25e9));
  CHECK(stated_nic_bandwidth("NVIDIA H100 80GB (MosaicML platform; interconnect not stated)", 8) == 0);
  CHECK_THROWS(stated_nic_bandwidth("Gbps", 8));
  CHECK_THROWS(stated_nic_bandwidth("H100 (fast Gb/s network)", 8));
  CHECK(stated_nic_bandwidth("400Gbps", 4) == doctest::Approx(12.5e9));
  CHECK(stated_nic_bandwidth("400Gb/s", 8) == doctest::Approx(6.25e9));
  CHECK(stated_nic_bandwidth("12.5 Gb/s per GPU", 8) == doctest::Approx(12.5e9 / 8));
  CHECK(stated_nic_bandwidth("1,600 Gb/s node-to-node", 8) == doctest::Approx(25e9));
  CHECK(stated_nic_bandwidth("3.2 Tb/s per node", 8) == doctest::Approx(50e9));
  CHECK(stated_nic_bandwidth("3.2 Tbps", 8) == doctest::Approx(50e9));
  CHECK(stated_nic_bandwidth("400 Gb/s per-GPU RDMA", 8) == doctest::Approx(50e9));
  CHECK(stated_nic_bandwidth("400 Gb/s/GPU", 8) == doctest::Approx(50e9));
  // The clause ends at a parenthesis too: a per-GPU figure in brackets after a node's is not the first's.
  CHECK(stated_nic_bandwidth("3200 Gbps per node (400 Gbps per GPU)", 8) == doctest::Approx(50e9));
  // In the rows: the fms-fsdp ones change (A100 6.25, H100 12.5 GB/s per GPU), the stated per-GPU and the
  // llm-foundry A100 ones keep their profile's figure, the unstated keep the profile's.
  const auto rows = validation::fsdp::read_rows(validation::source_path("validation/fsdp/rows.csv"),
                                                validation::source_path("validation/fsdp/split.csv"));
  int changed = 0;
  for (const auto& r : rows) {
    validation::fsdp::Mechanisms off;
    off.stated_network = false;
    const double with = validation::fsdp::row_scenario(r).hardware.nic_bandwidth;
    const double without = validation::fsdp::row_scenario(r, off).hardware.nic_bandwidth;
    CAPTURE(r.at("id"));
    if (r.at("id").rfind("FMS", 0) == 0) {
      CHECK(with < without);
      ++changed;
    } else {
      CHECK(with == without);
    }
  }
  CHECK(changed == 20);
}

TEST_CASE("fsdp rows: llm-foundry's Triton attention at FlashAttention-2's rate, the SDPA rows' too, the rest unchanged") {
  const auto rows = validation::fsdp::read_rows(validation::source_path("validation/fsdp/rows.csv"),
                                                validation::source_path("validation/fsdp/split.csv"));
  validation::fsdp::Mechanisms on, off;
  on.triton_measured = off.triton_measured = false;
  off.triton_at_fa2 = false;
  int lf = 0;
  for (const auto& r : rows) {
    CAPTURE(r.at("id"));
    const auto on_s = validation::fsdp::row_scenario(r, on), off_s = validation::fsdp::row_scenario(r, off);
    if (r.at("id").rfind("LF", 0) == 0) {
      CHECK(on_s.features.attention == config::Attention::flash2);
      CHECK(off_s.features.attention != config::Attention::flash2);
      ++lf;
    } else {
      CHECK(on_s.features.attention == off_s.features.attention);
    }
  }
  CHECK(lf == 34);
}

TEST_CASE("fsdp rows: llm-foundry's attention at its own measured Triton rate (run 42), every other row unchanged") {
  const auto rows = validation::fsdp::read_rows(validation::source_path("validation/fsdp/rows.csv"),
                                                validation::source_path("validation/fsdp/split.csv"));
  validation::fsdp::Mechanisms off;
  off.triton_measured = false;
  int lf = 0;
  for (const auto& r : rows) {
    CAPTURE(r.at("id"));
    const auto on_s = validation::fsdp::row_scenario(r), off_s = validation::fsdp::row_scenario(r, off);
    if (r.at("id").rfind("LF", 0) == 0) {
      CHECK(on_s.features.attention == config::Attention::triton_flash);
      CHECK(off_s.features.attention == config::Attention::flash2);
      ++lf;
    } else {
      CHECK(on_s.features.attention == off_s.features.attention);
    }
  }
  CHECK(lf == 34);
}
