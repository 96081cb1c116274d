// MoE dispatch and combine (layer/moe_dispatch.h): DeepEP's node-limited routing, the
// imbalance key, the expert-DP group, and EP exposure under DualPipe. Every timing is read off
// a simulated step; the traffic bound is checked against the routing rule it encodes.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "config/loader.h"
#include "tests/shipped_scenario.h"
#include "hardware/calibration.h"
#include "hardware/cost_model.h"
#include "hardware/interference.h"
#include "layer/moe_dispatch.h"
#include "layer/pass_cost.h"
#include "models/flops.h"
#include "models/layer_kernels.h"
#include "models/params.h"
#include "models/rank_shape.h"
#include "step/items.h"
#include "step/lower.h"
#include "step/simulate.h"

using namespace mfusim;

namespace {

const std::string kRoot = std::filesystem::path(MFUSIM_TEST_DIR).parent_path().string();

config::Scenario load(const std::string& file, const std::vector<std::string>& sets = {}) {
  return testing::shipped_scenario(file, sets);
}

step::StepResult run(const config::Scenario& s) { return step::simulate(s, step::SimulateOptions{}); }

}  // namespace

TEST_CASE("deepep: node-limited routing never puts more than M nodes' worth of bytes on IB") {
  // DeepSeek-V3 §3.2.2: each token goes to at most M nodes, once per node over IB.
  for (int M : {1, 2, 3, 4, 8}) {
    for (int ep : {16, 32, 64}) {
      auto s = load("2048xh800_deepseek_v3.toml", {"moe.imbalance=1.0", "moe.max_nodes_per_token=" + std::to_string(M),
                                                   "parallel.ep=" + std::to_string(ep)});
      hardware::Group g{ep, ep / 8, 8};
      const double T = 4096;
      for (bool combine : {false, true}) {
        const auto tr = layer::deepep_traffic(s, g, T, combine);
        CAPTURE(M);
        CAPTURE(ep);
        CHECK(tr.internode);
        CHECK(tr.ib_bytes <= T * M * tr.token_bytes * (1 + 1e-12));
        CHECK(tr.ib_bytes <= T * (ep / 8) * tr.token_bytes * (1 + 1e-12));   // never more nodes than exist
        CHECK(tr.ib_bytes > 0);
      }
    }
  }
  // fp8 dispatch: 1 byte per element + an fp32 scale per 128; bf16 combine: 2 bytes.
  auto s = load("2048xh800_deepseek_v3.toml");
  hardware::Group g{64, 8, 8};
  CHECK(layer::deepep_traffic(s, g, 1, false).token_bytes == doctest::Approx(7168 + 4 * 56));
  CHECK(layer::deepep_traffic(s, g, 1, true).token_bytes == doctest::Approx(2 * 7168));
}

TEST_CASE("moe.imbalance: 1.0 reproduces the balanced numbers exactly, and the slowest rank's load slows the step") {
  // A skewed routing is slower: the slowest rank gates the all-to-all and the expert GEMMs. The H800
  // scenario ships the profile's 1.19 (tests/moe/test_profile_imbalance.cpp), between balanced and 1.3.
  for (const char* d : {"alltoall", "deepep"}) {
    const auto a = run(load("2048xh800_deepseek_v3.toml", {std::string("moe.dispatcher=") + d, "moe.imbalance=1.0"}));
    const auto b = run(load("2048xh800_deepseek_v3.toml", {std::string("moe.dispatcher=") + d}));
    const auto c = run(load("2048xh800_deepseek_v3.toml", {std::string("moe.dispatcher=") + d, "moe.imbalance=1.3"}));
    CHECK(b.step_time_s > a.step_time_s);
    CHECK(c.step_time_s > b.step_time_s);
    CHECK(b.breakdown.ep_comm_exposed >= a.breakdown.ep_comm_exposed);
  }
  // What the imbalance scales (layer::scale_expert_kernels, scale_expert_permutes): the slowest rank's forward
  // carries imbalance x the FLOPs of its experts' kernels and, under DeepEP, of the receiver's token permutation,
  // and nothing else of the layer.
  {
    const auto s1 = load("2048xh800_deepseek_v3.toml", {"moe.imbalance=1.0"});
    const auto s2 = load("2048xh800_deepseek_v3.toml", {"moe.imbalance=1.25"});
    const int l = s1.model.moe->dense_layers;
    layer::LayerCosts c1(s1), c2(s2);
    c1.place();
    c2.place();
    auto flops = [](const layer::PassCost& pc) {
      double f = 0;
      for (const auto& sg : pc.segs) f += sg.flops;
      return f;
    };
    double routed = 0;
    const auto ks = models::layer_kernels(s1.model, l, c1.shape());
    for (std::size_t i = 0; i < ks.f.size(); ++i) {
      const std::string n = ks.f[i].name;
      const bool experts = i >= ks.f_experts && i < ks.f_experts_end && n != "fp8_weight_transpose";
      if (experts || n == "moe_permute" || n == "moe_unpermute") routed += ks.f[i].flops * ks.f[i].count;
    }
    REQUIRE(routed > 0);
    CHECK(flops(c2.layer_cost(l).f) - flops(c1.layer_cost(l).f) == doctest::Approx(0.25 * routed).epsilon(1e-6));
  }
  // Without expert parallelism one rank holds every expert and all T x top_k rows, however they route: no
  // slowest rank, no change.
  const auto m1 = run(load("64xgb200_mixtral_8x7b.toml", {"parallel.ep=1"}));
  const auto m2 = run(load("64xgb200_mixtral_8x7b.toml", {"parallel.ep=1", "moe.imbalance=1.5"}));
  CHECK(m1.step_time_s == m2.step_time_s);
  CHECK(run(load("64xgb200_mixtral_8x7b.toml", {"moe.imbalance=1.5"})).step_time_s >
        run(load("64xgb200_mixtral_8x7b.toml")).step_time_s);
  // The H100 scenario (Megatron's dispatcher, no [moe] table) with the key given explicitly.
  const auto h = run(load("2048xh100_deepseek_v3.toml"));
  const auto h1 = run(load("2048xh100_deepseek_v3.toml", {"moe.imbalance=1.0", "moe.dispatcher=alltoall"}));
  CHECK(h.step_time_s == h1.step_time_s);
}

TEST_CASE("deepep moves fewer IB bytes than Megatron's all-to-all and exposes less EP time") {
  const auto a2a = run(load("2048xh800_deepseek_v3.toml", {"moe.dispatcher=alltoall"}));
  const auto dep = run(load("2048xh800_deepseek_v3.toml"));
  CAPTURE(a2a.breakdown.ep_comm_exposed);
  CAPTURE(dep.breakdown.ep_comm_exposed);
  CHECK(dep.breakdown.ep_comm_exposed < a2a.breakdown.ep_comm_exposed);
  CHECK(dep.step_time_s < a2a.step_time_s);
}

TEST_CASE("EP exposure under DualPipe falls as compute per F&B pair grows") {
  // DeepSeek-V3 §3.2.1: DualPipe hides one chain's dispatch/combine under the other chain's
  // compute in each F&B pair; the more compute per pair, the less of it is left exposed. Here the compute grows alone: a slower GPU
  // (lower fp8 peak) with the links as they are.
  double prev = 1e9;
  for (double peak : {1978.9e12, 1200e12, 800e12}) {
    auto s = load("2048xh800_deepseek_v3.toml", {"schedule.name=dualpipe", "moe.dispatcher=alltoall"});
    s.hardware.peak_flops_fp8 = peak;
    const auto r = run(s);
    const double share = r.breakdown.ep_comm_exposed / r.step_time_s;
    CAPTURE(peak);
    CAPTURE(share);
    CHECK(share < prev);
    prev = share;
  }
}

TEST_CASE("expert-DP group: dp * cp / ep ranks with the same expert shard") {
  auto s = load("2048xh800_deepseek_v3.toml");
  const auto g = layer::expert_dp_group(s);
  CHECK(g.size == 128 / 64);
  CHECK(g.per_domain == 1);       // stride tp*cp*ep = 64 > 8 GPUs per node
  CHECK(g.domains == 2);
}

TEST_CASE("deepep's comm SMs slow the compute beside them by the measured held-SM curve") {
  auto s = load("2048xh800_deepseek_v3.toml");
  CHECK(layer::deepep_sms(s) == 20);
  const double slow = hardware::compute_slowdown({layer::deepep_sms(s), 0.0}, s.hardware);
  CHECK(slow == doctest::Approx(hardware::sm_slowdown(20)));
  CHECK(slow > 132.0 / 112.0 - 1e-9);   // never below the plain SM share
  s.moe.dispatcher = config::MoeDispatcher::alltoall;
  CHECK(layer::deepep_sms(s) == 0);
}

TEST_CASE("DeepEP's transfers beside compute last as long as DeepSeek's profile measured them") {
  // DeepEP's kernels are paced by their SMs: beside compute they keep 0.719 of the rate they reach
  // alone (hardware::kSmPacedCommBesideCompute, runs 14b/26/29 on the H200). DeepSeek's published
  // training profile (github.com/deepseek-ai/profile-data train.json @de0b460: one DualPipe F&B
  // pair on H800, EP 64) has DeepEP's internode fp8 dispatch at 3.113-3.613 ms (mean 3.405 of 4)
  // and its bf16 combine at 5.847-6.549 ms (mean 6.181 of 8), against the 2.4 and 4.7 ms that
  // DeepEP's published alone bandwidths give. The steady pairs' transfers of the H800 scenario on
  // a middle pipeline rank must land within 10% of the measured means. The profiled rank carried its own
  // load, 0.99 of the mean (validation/deepseek_load/: 32,320 routed rows per pass against 32,768), so the
  // transfers compare at balanced routing, not at the scenario's slowest of 64 ranks (moe.imbalance 1.19).
  auto s = load("2048xh800_deepseek_v3.toml", {"moe.imbalance=1.0"});
  CHECK(hardware::sm_paced_comm_slowdown() == doctest::Approx(1 / 0.719));
  step::SimulateOptions so;
  so.keep_timeline = true;
  const auto r = step::simulate(s, so);
  REQUIRE(r.graph);
  REQUIRE(r.timeline);
  const auto& g = *r.graph;
  std::vector<double> ms;
  for (const auto& iv : r.timeline->intervals) {
    const auto& st = g.streams()[static_cast<std::size_t>(g.task(iv.task).stream)];
    if (st.rank == 8 && st.name == "ep") ms.push_back(static_cast<double>(iv.end.ns - iv.start.ns) / 1e6);
  }
  REQUIRE(ms.size() > 100);
  std::sort(ms.begin(), ms.end());
  // The lower and upper quartiles: the short (fp8 dispatch) and the long (bf16 combine) transfers.
  const double dispatch = ms[ms.size() / 4], combine = ms[3 * ms.size() / 4];
  CAPTURE(dispatch);
  CAPTURE(combine);
  CHECK(std::abs(dispatch / 3.405 - 1) <= 0.10);
  CHECK(std::abs(combine / 6.181 - 1) <= 0.10);
  // The NCCL all-to-all dispatcher is not slowed by the compute beside it (no measurement of NCCL's pacing).
  const auto a2a = load("2048xh800_deepseek_v3.toml", {"moe.dispatcher=alltoall"});
  layer::LayerCosts lc(a2a);
  lc.place();
  CHECK(lc.comm_contention(hardware::Collective::all_to_all, lc.placement().ep).self == 1.0);
}

TEST_CASE("Megatron's combined 1F1B hides most of the EP all-to-all on the Megatron-Bridge H100 scenario") {
  // moe.overlap_ep_comm: the steady state's forward and backward of different micro-batches as one
  // F&B pair, arranged as the report's Figure 4 (Megatron's TransformerLayerSchedulePlan.run has the
  // same order: combine_bwd | dispatch_fwd, dispatch_bwd | combine_fwd beside attention_fwd | mlp_bwd,
  // mlp_dw, mlp_fwd | attention_bwd).
  const auto on = run(load("1024xh100_deepseek_v3_megatron.toml"));
  const auto off = run(load("1024xh100_deepseek_v3_megatron.toml", {"moe.overlap_ep_comm=false"}));
  CAPTURE(on.breakdown.ep_comm_exposed);
  CAPTURE(off.breakdown.ep_comm_exposed);
  CHECK(on.step_time_s < off.step_time_s);
  CHECK(on.breakdown.ep_comm_exposed < 0.2 * off.breakdown.ep_comm_exposed);
  CHECK(on.breakdown.ep_comm_exposed <= 0.10 * on.step_time_s);
  // The same work: the pairs change the order and the overlap, not the FLOPs.
  CHECK(on.tokens_per_s * on.step_time_s == doctest::Approx(off.tokens_per_s * off.step_time_s).epsilon(1e-9));
}

TEST_CASE("DualPipe's F&B pair as Figure 4: each all-to-all beside a whole compute block of the other chain") {
  // One MoE layer per chain, cut as LayerCost::fb_f / fb_b: F = attention | router (dispatch) |
  // shared (beside) | experts (combine) | unpermute; B = unpermute' (combine's gradient) | shared
  // (beside) | experts (dispatch's gradient) | MLP W (beside) | router | attention | attention W (beside).
  auto seg = [](bool ep, bool beside) {
    layer::Seg s;
    s.ns = 1000;
    if (ep) {
      s.comm_ns = 1000;
      s.comm_cat = sim::Category::ep_comm;
    }
    s.beside = beside;
    return s;
  };
  const std::vector<layer::Seg> fs = {seg(false, false), seg(true, false), seg(false, true), seg(true, false), seg(false, false)};
  const std::vector<layer::Seg> bs = {seg(true, false),  seg(false, true), seg(true, false), seg(false, true),
                                      seg(false, false), seg(false, false), seg(false, true)};
  auto items = [](const std::vector<layer::Seg>& v, char k) {
    std::vector<step::Item> out;
    for (const auto& s : v) out.push_back(step::Item{&s, sim::Category::forward, k, 0, 0, false});
    return out;
  };
  const auto fi = items(fs, 'F'), bi = items(bs, 'B');
  auto text = [](const std::vector<step::FbStep>& v) {
    std::string out;
    for (const auto& st : v) {
      out.push_back(st.chain ? 'B' : 'F');
      out.push_back(static_cast<char>('0' + st.item));
      if (st.beside) out.push_back('*');
      out.push_back(' ');
    }
    return out;
  };
  const std::string order = text(step::fb_order(fi, bi));
  // combine(B) issued first, beside ATTN(F); dispatch(F) beside the shared experts, MLP(B) and
  // MLP(W); dispatch(B) beside MLP(F); combine(F) beside the router's and ATTN(B), ATTN(W).
  CHECK(order == "B0 B1* F0 F1 F2* B2 B3* F3 B4 B5 B6* F4 ");
  // Without EP transfers, or with moe.fb_rearrange = false: one segment of each, alternately.
  CHECK(text(step::fb_order(fi, bi, false)) == "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 B5 B6 ");
}

TEST_CASE("the Figure-4 F&B pair exposes less EP time than the plain alternation on the H800 scenario") {
  const auto fig4 = run(load("2048xh800_deepseek_v3.toml"));
  const auto alt = run(load("2048xh800_deepseek_v3.toml", {"moe.fb_rearrange=false"}));
  CAPTURE(fig4.breakdown.ep_comm_exposed);
  CAPTURE(alt.breakdown.ep_comm_exposed);
  CHECK(fig4.breakdown.ep_comm_exposed < alt.breakdown.ep_comm_exposed);
  CHECK(fig4.step_time_s < alt.step_time_s);
  // The target: at most 10% of the step exposed under DualPipe.
  CHECK(fig4.breakdown.ep_comm_exposed <= 0.10 * fig4.step_time_s);
  // Other schedules have no F&B pair: the key changes nothing there.
  for (const char* sched : {"1f1b", "zb-h1"}) {
    const auto a = run(load("2048xh800_deepseek_v3.toml", {std::string("schedule.name=") + sched}));
    const auto b = run(load("2048xh800_deepseek_v3.toml", {std::string("schedule.name=") + sched, "moe.fb_rearrange=false"}));
    CHECK(a.step_time_s == b.step_time_s);
  }
}

TEST_CASE("dense DualPipe and DualPipeV: the F&B pair is the plain alternation, rearranged or not") {
  // No EP transfer: nothing to rearrange (the dense goldens do not move).
  for (const char* sched : {"dualpipe", "dualpipev"}) {
    const std::vector<std::string> base = {std::string("schedule.name=") + sched, "parallel.vpp=1", "parallel.pp=4",
                                           "training.global_batch=64"};
    auto with = base;
    with.push_back("moe.fb_rearrange=false");
    const auto a = run(load("128xh100_70b.toml", base));
    const auto b = run(load("128xh100_70b.toml", with));
    CAPTURE(sched);
    CHECK(a.step_time_s > 0);
    CHECK(a.step_time_s == b.step_time_s);
    CHECK(a.breakdown.tp_comm_exposed == b.breakdown.tp_comm_exposed);
  }
}

TEST_CASE("MTP depth 1 (DeepSeek-V3 §2.2): one more block and projection on the last stage") {
  const auto s1 = load("2048xh800_deepseek_v3.toml");
  auto m0 = s1.model;
  m0.mtp_depth = 0;
  REQUIRE(s1.model.mtp_depth == 1);   // models/deepseek-v3.toml, HF num_nextn_predict_layers
  // Parameters: HF's 685B checkpoint is the 671B main model and a 14B MTP module that stores
  // its own copies of the embedding and output head (which training shares, §2.2).
  const auto c = models::count_params(s1.model);
  CHECK(c.total == models::count_params(m0).total);   // the main model's count does not move
  CHECK(c.mtp > 11e9);
  CHECK(c.total + c.mtp + c.embedding + c.lm_head == doctest::Approx(685e9).epsilon(0.005));
  // FLOPs: one MoE block (37B activated over 61 layers: about 0.6B), the projection and the
  // head once more (0.93B) per token: a few percent over the main model.
  const double f1 = models::model_flops_per_token(s1.model, 4096, false), f0 = models::model_flops_per_token(m0, 4096, false);
  CHECK(f1 / f0 > 1.03);
  CHECK(f1 / f0 < 1.06);
  CHECK(models::model_flops_per_token(s1.model, 4096, true) > models::model_flops_per_token(m0, 4096, true));
  // Kernels: the block's, behind two norms and the 2h -> h projection.
  const auto r = models::rank_shape(s1);
  const auto block = models::layer_kernels(s1.model, 60, r);
  const auto mtp = models::mtp_kernels(s1.model, r);
  REQUIRE(mtp.f.size() >= block.f.size() + 3);   // two norms and the projection (and its fp8 cast)
  const std::size_t pre = mtp.f.size() - block.f.size();
  bool proj = false;
  for (std::size_t i = 0; i < pre; ++i) proj = proj || std::string(mtp.f[i].name) == "mtp_proj";
  CHECK(proj);
  CHECK(mtp.w.size() == block.w.size() + 1);
  CHECK(mtp.f_experts == block.f_experts + pre);
  CHECK(mtp.f_mlp == block.f_mlp + pre);
  CHECK(mtp.b_experts == block.b_experts);   // the prefix's backward runs after the block's
  // The step: slower, and the ranks holding the last stage keep more memory.
  const auto a = run(s1);
  auto s0 = s1;
  s0.model = m0;
  const auto b = run(s0);
  CHECK(a.step_time_s > b.step_time_s);
  CHECK(a.step_time_s < 1.1 * b.step_time_s);
  REQUIRE(a.memory.per_stage_peak_gib.size() == 16);
  CHECK(a.memory.per_stage_peak_gib[0] > b.memory.per_stage_peak_gib[0]);   // DualPipe: rank 0 holds stages 0 and 15
}

TEST_CASE("MTP depth 1: the module's gradients and parameters are in the last stage's DP buckets") {
  // The ranks that hold the last stage (1F1B: the last; DualPipe: 0 and 15, each with one of the two
  // copies; DualPipeV with a head-only last virtual stage: rank 0) reduce the MTP module's gradients
  // (dense parts over dp, routed experts over the expert-DP group) and gather its parameters; the
  // others carry the same bytes with and without it.
  const auto s = load("2048xh800_deepseek_v3.toml");
  REQUIRE(s.model.mtp_depth == 1);
  const auto p = models::detail::mtp_parts(s.model);
  const double tp = s.parallel.tp, ep = s.parallel.ep;
  const double dense = p.tp_sharded / tp + p.replicated, experts = p.experts / (tp * ep);
  REQUIRE(dense > 0.1e9);
  REQUIRE(experts > 0.1e9);
  std::string v_split = "parallel.stage_layers=[1";
  for (int i = 0; i < 30; ++i) v_split += ",2";
  v_split += ",0]";
  struct Case {
    std::vector<std::string> sets;
    std::vector<int> head_ranks;
  };
  const std::vector<Case> cases = {
      {{}, {0, 15}},
      {{"features.overlap_grad_reduce=false", "features.overlap_param_gather=false"}, {0, 15}},
      {{"schedule.name=1f1b"}, {15}},
      {{"schedule.name=1f1b", "features.overlap_grad_reduce=false", "features.overlap_param_gather=false"}, {15}},
      {{"schedule.name=dualpipev", "parallel.last_stage_layers=0", v_split}, {0}},
  };
  for (const auto& c : cases)
    for (bool per_layer : {true, false}) {
      std::string what = per_layer ? "per-layer" : "coarse";
      for (const auto& x : c.sets) what += " " + x;
      INFO(what);
      const auto s1 = load("2048xh800_deepseek_v3.toml", c.sets);
      auto s0 = s1;
      s0.model.mtp_depth = 0;
      step::LowerOptions lo;
      lo.per_layer = per_layer;
      const auto a = step::lower(s1, lo), b = step::lower(s0, lo);
      REQUIRE(a.dp_grad_bytes.size() == 16);
      for (int r = 0; r < 16; ++r) {
        INFO("rank ", r);
        const bool head = std::find(c.head_ranks.begin(), c.head_ranks.end(), r) != c.head_ranks.end();
        CHECK(b.dp_grad_bytes[r] > 0);
        CHECK(b.expert_dp_grad_bytes[r] >= 0);   // 0 on DualPipeV's rank 0: dense layer 0 and the head only
        CHECK(a.dp_grad_bytes[r] - b.dp_grad_bytes[r] == doctest::Approx(head ? 4.0 * dense : 0.0).epsilon(1e-9));
        CHECK(a.expert_dp_grad_bytes[r] - b.expert_dp_grad_bytes[r] ==
              doctest::Approx(head ? 4.0 * experts : 0.0).epsilon(1e-9));
        CHECK(a.dp_gather_bytes[r] - b.dp_gather_bytes[r] == doctest::Approx(head ? 2.0 * dense : 0.0).epsilon(1e-9));
        CHECK(a.expert_dp_gather_bytes[r] - b.expert_dp_gather_bytes[r] ==
              doctest::Approx(head ? 2.0 * experts : 0.0).epsilon(1e-9));
      }
    }
}

TEST_CASE("grouped expert GEMMs: [gemm_grouped] fitted from run 14c, priced against one dense GEMM") {
  // The fit from the measured file: slow at 128 tokens per expert (run 14c: 0.46-0.65 of dense),
  // near dense from a few hundred tokens on.
  std::string report;
  const auto fit = hardware::fit_probe(kRoot + "/validation/runs/run14-interference/results-14c/grouped_gemm.toml", &report);
  REQUIRE(fit.has_gemm_grouped);
  const auto& g = fit.gemm_grouped;
  CHECK(g.samples >= 70);
  CHECK(hardware::grouped_gemm_efficiency(g, 128) > 0.45);
  CHECK(hardware::grouped_gemm_efficiency(g, 128) < 0.70);
  CHECK(hardware::grouped_gemm_efficiency(g, 4096) > 0.9);
  CHECK(hardware::grouped_gemm_efficiency(g, 4096) <= 1.0);
  CHECK(hardware::grouped_gemm_efficiency(g, 64) == hardware::grouped_gemm_efficiency(g, 128));   // flat outside
  const double mid = hardware::grouped_gemm_efficiency(g, 181);   // between the 128 and 256 points
  CHECK(mid > hardware::grouped_gemm_efficiency(g, 128));
  CHECK(mid < hardware::grouped_gemm_efficiency(g, 256));
  // Written and read back unchanged; the shipped H200 calibration carries the same fit.
  const std::string out = "/tmp/mfusim_test_grouped_cal.toml";
  hardware::write_calibration(fit, out);
  const auto back = hardware::read_calibration(out);
  REQUIRE(back.has_gemm_grouped);
  CHECK(back.gemm_grouped.tokens_per_expert == g.tokens_per_expert);
  for (std::size_t i = 0; i < g.efficiency.size(); ++i) CHECK(back.gemm_grouped.efficiency[i] == doctest::Approx(g.efficiency[i]));
  const auto shipped = hardware::read_calibration(kRoot + "/hardware/calibration/h200.toml");
  REQUIRE(shipped.has_gemm_grouped);
  CHECK(shipped.gemm_grouped.tokens_per_expert == g.tokens_per_expert);
  // A file with an efficiency above 1 is refused.
  {
    std::ofstream f(out);
    f << "format = \"mfusim-calibration-1\"\n[gemm_grouped]\ntokens_per_expert = [128, 256]\nefficiency = [0.5, 1.2]\n";
  }
  CHECK_THROWS_WITH_AS(hardware::read_calibration(out), doctest::Contains("'efficiency' values must be numbers in (0, 1]"),
                       std::runtime_error);

  // The cost model: 4 experts of 128 tokens each as one grouped call cost the dense GEMM of 512
  // rows over the measured efficiency; without [gemm_grouped] they stay 4 separate GEMMs.
  auto s = load("2048xh800_deepseek_v3.toml");
  REQUIRE(s.calibration);
  REQUIRE(s.calibration->has_gemm_grouped);
  hardware::Kernel k;
  k.kind = hardware::KernelKind::gemm;
  k.name = "expert_fc1";
  k.m = 128;
  k.n = 4096;
  k.k = 7168;
  k.count = 4;
  std::vector<hardware::Kernel> ks = {k};
  layer::group_expert_gemms(s, ks, 0, 1, false);
  CHECK(ks[0].count == 1);
  CHECK(ks[0].m == 512);
  CHECK(ks[0].flops == doctest::Approx(4 * 2.0 * 128 * 4096 * 7168));
  // (the scenario is fp8: its expert GEMMs take the fp8 per-expert fraction, [gemm_grouped_fp8])
  REQUIRE(s.training.precision == hardware::Precision::fp8);
  REQUIRE(s.calibration->has_gemm_grouped_fp8);
  const double eff = hardware::grouped_gemm_efficiency(s.calibration->gemm_grouped_fp8, 128);
  CHECK(ks[0].grouped_eff == doctest::Approx(eff));
  {   // the same scenario in bf16: bf16's grouped fraction
    auto b = s;
    b.training.precision = hardware::Precision::bf16;
    std::vector<hardware::Kernel> kb = {k};
    layer::group_expert_gemms(b, kb, 0, 1, false);
    CHECK(kb[0].grouped_eff == doctest::Approx(hardware::grouped_gemm_efficiency(s.calibration->gemm_grouped, 128)));
    // the two tables differ there, so the check above tells them apart (the H100's run 55: 0.429 against 0.410)
    CHECK(std::abs(kb[0].grouped_eff - ks[0].grouped_eff) > 0.01);
  }
  const hardware::CostModel cm(s.hardware, s.training.precision, &*s.calibration, false);
  hardware::Kernel dense = ks[0];
  dense.grouped_eff = 0;
  CHECK(cm.time(ks[0]) - cm.launch_time(ks[0]) == doctest::Approx((cm.time(dense) - cm.launch_time(dense)) / eff).scale(0));
  auto none = s;
  none.calibration->has_gemm_grouped = false;   // an fp8-only calibration still groups the fp8 expert GEMMs
  std::vector<hardware::Kernel> fp8_only = {k};
  layer::group_expert_gemms(none, fp8_only, 0, 1, false);
  CHECK(fp8_only[0].count == 1);
  CHECK(fp8_only[0].grouped_eff == doctest::Approx(eff));
  none.calibration->has_gemm_grouped_fp8 = false;
  std::vector<hardware::Kernel> loop = {k};
  layer::group_expert_gemms(none, loop, 0, 1, false);
  CHECK(loop[0].count == 4);
  CHECK(loop[0].grouped_eff == 0);
  // The weight gradient groups along its reduction (the tokens).
  hardware::Kernel w = k;
  w.name = "expert_fc1_wgrad";
  w.m = 7168;
  w.n = 4096;
  w.k = 128;
  std::vector<hardware::Kernel> ws = {w};
  layer::group_expert_gemms(s, ws, 0, 1, true);
  CHECK(ws[0].k == 512);
  CHECK(ws[0].m == 7168);
  CHECK(ws[0].grouped_eff == doctest::Approx(eff));
}

TEST_CASE("fp8 expert GEMMs: [gemm_grouped_fp8] fitted from runs 44-45's per-expert fp8 GEMMs against one fp8 GEMM") {
  // Run 45 alone (one fp8 GEMM per expert on one stream and on Transformer Engine's four, against one fp8 GEMM
  // over all the tokens): 0.42-0.45 at 128 tokens per expert, near one GEMM from 512 on; below bf16's grouped
  // call (run 14c) where the experts see few tokens.
  const auto fit = hardware::fit_probe(kRoot + "/validation/runs/run45-te-multistream/results/grouped_gemm.toml", nullptr);
  REQUIRE(fit.has_gemm_grouped_fp8);
  const auto& f = fit.gemm_grouped_fp8;
  CHECK(f.samples == 156);   // 78 points x (fp8_loop, fp8_loop4)
  CHECK(hardware::grouped_gemm_efficiency(f, 128) > 0.35);
  CHECK(hardware::grouped_gemm_efficiency(f, 128) < 0.5);
  CHECK(hardware::grouped_gemm_efficiency(f, 256) < 0.8);
  CHECK(hardware::grouped_gemm_efficiency(f, 4096) > 0.9);
  CHECK(hardware::grouped_gemm_efficiency(f, 128) < hardware::grouped_gemm_efficiency(fit.gemm_grouped, 128) - 0.05);
  // The shipped calibration: both runs' rows (paired within their run), written and read back.
  const auto shipped = hardware::read_calibration(kRoot + "/hardware/calibration/h200.toml");
  REQUIRE(shipped.has_gemm_grouped_fp8);
  CHECK(shipped.gemm_grouped_fp8.samples == 234);   // run 44: 78 fp8_loop; run 45: 78 fp8_loop + 78 fp8_loop4
  const std::string out = "/tmp/mfusim_test_grouped_fp8_cal_" + std::to_string(::getpid()) + ".toml";
  hardware::write_calibration(shipped, out);
  const auto back = hardware::read_calibration(out);
  REQUIRE(back.has_gemm_grouped_fp8);
  REQUIRE(back.gemm_grouped_fp8.efficiency.size() == shipped.gemm_grouped_fp8.efficiency.size());
  for (std::size_t i = 0; i < back.gemm_grouped_fp8.efficiency.size(); ++i)
    CHECK(back.gemm_grouped_fp8.efficiency[i] == doctest::Approx(shipped.gemm_grouped_fp8.efficiency[i]));
  // Without fp8 rows a probe file fits no fp8 curve (run 14c: no fp8 dense twin).
  const auto old = hardware::fit_probe(kRoot + "/validation/runs/run14-interference/results-14c/grouped_gemm.toml", nullptr);
  CHECK_FALSE(old.has_gemm_grouped_fp8);
}

TEST_CASE("the coarse lowering plays the Figure-4 pair as the per-layer tasks do (H800 scenario)") {
  // plan ranks layouts with the coarse lowering: its play of an F&B pair follows fb_order and
  // slows the compute beside the other chain's transfer by the same footprint.
  for (const char* order : {"true", "false"}) {
    const auto s = load("2048xh800_deepseek_v3.toml", {std::string("moe.fb_rearrange=") + order});
    step::SimulateOptions coarse;
    coarse.per_layer = false;
    const auto a = run(s);
    const auto b = step::simulate(s, coarse);
    CAPTURE(order);
    CHECK(b.step_time_s == doctest::Approx(a.step_time_s).epsilon(0.02));
    CHECK(b.breakdown.ep_comm_exposed == doctest::Approx(a.breakdown.ep_comm_exposed).epsilon(0.1));
  }
}

TEST_CASE("moe.imbalance scales an expert GEMM's tokens: the rows forward, the reduction of the weight gradient") {
  const auto s = load("2048xh800_deepseek_v3.toml", {"moe.imbalance=1.5"});
  const auto lk = models::layer_kernels(s.model, s.model.layers - 1, models::rank_shape(s));   // a MoE layer
  auto f = lk.f;
  auto w = lk.w;
  layer::scale_expert_kernels(s, f, lk.f_experts, lk.f_experts_end);
  layer::scale_expert_wgrads(s, w);
  int fwd = 0, wgrad = 0;
  for (std::size_t i = lk.f_experts; i < lk.f_experts_end; ++i)
    if (lk.f[i].kind == hardware::KernelKind::gemm) {
      ++fwd;
      CHECK(f[i].m == std::llround(lk.f[i].m * 1.5));   // tokens
      CHECK(f[i].n == lk.f[i].n);
      CHECK(f[i].k == lk.f[i].k);
    }
  for (std::size_t i = 0; i < lk.w.size(); ++i) {
    if (lk.w[i].kind != hardware::KernelKind::gemm || std::string(lk.w[i].name).rfind("expert_", 0) != 0) {
      CHECK(w[i].flops == lk.w[i].flops);   // not an expert kernel: untouched
      continue;
    }
    ++wgrad;
    CHECK(w[i].k == std::llround(lk.w[i].k * 1.5));   // tokens are the reduction
    CHECK(w[i].m == lk.w[i].m);                        // the weight does not grow
    CHECK(w[i].n == lk.w[i].n);
    CHECK(w[i].flops == doctest::Approx(lk.w[i].flops * 1.5));
  }
  CHECK(fwd >= 2);
  CHECK(wgrad >= 2);
}
