// DeepSeek-V3's blockwise fp8 recipe (features.fp8_recipe = "blockwise"; arXiv 2412.19437 §3.3.2)
// and moe.fp8_activation_cache's kernels: the quantisation and transpose kernels around the fp8
// GEMMs (models/kernel_builders.cpp linear_blockwise, models/layer_kernels.cpp), their bytes from
// the recipe (1 byte per element + one fp32 scale per 128; weights one per 128 x 128), where they
// appear, and that a simulated step pays their time.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "config/loader.h"
#include "hardware/cost_model.h"
#include "layer/moe_dispatch.h"
#include "models/kernel_builders.h"
#include "models/layer_kernels.h"
#include "models/rank_shape.h"
#include "step/simulate.h"

using namespace mfusim;

namespace {
const std::string kRoot = std::filesystem::path(MFUSIM_TEST_DIR).parent_path().string();

config::Scenario deepseek(const std::vector<std::string>& sets = {}) {
  config::LoadOptions o;
  o.overrides = sets;
  return config::load_scenario(kRoot + "/scenarios/2048xh800_deepseek_v3.toml", o).base;
}

int count_named(const std::vector<hardware::Kernel>& ks, std::string_view name) {
  return static_cast<int>(std::count_if(ks.begin(), ks.end(), [&](const hardware::Kernel& k) { return name == k.name; }));
}
int count_prefix(const models::LayerKernels& lk, std::string_view prefix) {
  int n = 0;
  for (const auto* v : {&lk.f, &lk.b, &lk.w})
    for (const auto& k : *v) n += std::string_view(k.name).rfind(prefix, 0) == 0 ? 1 : 0;
  return n;
}
const hardware::Kernel& named(const std::vector<hardware::Kernel>& ks, std::string_view name, int nth = 0) {
  for (const auto& k : ks)
    if (name == k.name && nth-- == 0) return k;
  FAIL("no kernel " << name);
  return ks.front();
}
}  // namespace

TEST_CASE("blockwise fp8: one linear's kernels, their order and their bytes from the recipe") {
  using namespace models::detail;
  const double T = 4096, in = 7168, out = 1536;
  models::LayerKernels lk;
  Fp8Operands io;
  io.x_saved_bytes = kFp8TileBytes;   // the forward's fp8 copy (moe.fp8_activation_cache)
  linear_blockwise("q_down", "q_down_dgrad", "q_down_wgrad", T, in, out, 2, lk, 1, io);
  std::reverse(lk.b.begin(), lk.b.end());   // as layer_kernels does once at the end
  auto names = [](const std::vector<hardware::Kernel>& ks) {
    std::vector<std::string> n;
    for (const auto& k : ks) n.emplace_back(k.name);
    return n;
  };
  CHECK(names(lk.f) == std::vector<std::string>{"fp8_quant_x", "fp8_scale_transpose", "q_down"});
  CHECK(names(lk.b) == std::vector<std::string>{"fp8_quant_dy", "fp8_weight_transpose", "fp8_scale_transpose",
                                                "q_down_dgrad", "fp8_quant_t_x", "fp8_quant_t_dy"});
  CHECK(names(lk.w) == std::vector<std::string>{"q_down_wgrad"});
  // x [4096, 7168] bf16 in, fp8 out with 56 fp32 scales per row
  CHECK(lk.f[0].bytes == doctest::Approx(T * in * 2 + T * in + 4 * T * 56));
  CHECK(lk.f[1].bytes == doctest::Approx(2 * 4 * T * 56));
  // dy [4096, 1536]: 12 scales per row
  CHECK(lk.b[0].bytes == doctest::Approx(T * out * 2 + T * out + 4 * T * 12));
  // the fp8 weight [1536, 7168] and its 12 x 56 block scales, read and written transposed
  CHECK(lk.b[1].bytes == doctest::Approx(2 * (out * in + 4 * 12 * 56)));
  // x^T from the fp8 copy: read 1 + 4/128, write 1 byte + the scales
  CHECK(lk.b[4].bytes == doctest::Approx(T * in * (1 + 4.0 / 128) + T * in + 4 * T * 56));
  CHECK(lk.b[5].bytes == doctest::Approx(T * out * 2 + T * out + 4 * T * 12));
  // GEMM operands fp8, output bf16
  CHECK(lk.f[2].bytes == doctest::Approx(T * in + in * out + 2 * T * out));
  CHECK(lk.w[0].bytes == doctest::Approx(in * T + T * out + 2 * in * out));

  // Operands arriving quantised (the dispatch, the combine's backward): no quantisation of them;
  // the routed experts' weights transposed in the forward, one kernel over the group's experts.
  models::LayerKernels ex;
  Fp8Operands eio;
  eio.x_quantised = eio.dy_quantised = eio.weight_transpose_in_forward = true;
  linear_blockwise("expert_fc1", "expert_fc1_dgrad", "expert_fc1_wgrad", 8192, 7168, 4096, 2, ex, 4, eio);
  std::reverse(ex.b.begin(), ex.b.end());
  // The scales still copied into the grouped GEMM's layout (profile-data: a direct_copy before each m_grouped GEMM).
  CHECK(names(ex.f) == std::vector<std::string>{"fp8_scale_transpose", "fp8_weight_transpose", "expert_fc1"});
  CHECK(names(ex.b) == std::vector<std::string>{"fp8_scale_transpose", "expert_fc1_dgrad", "fp8_quant_t_x", "fp8_quant_t_dy"});
  CHECK(ex.f[0].bytes == doctest::Approx(2 * 4 * 4 * 8192.0 * 56));   // [rows, 7168 / 128] fp32, read and written
  CHECK(ex.b[0].bytes == doctest::Approx(2 * 4 * 4 * 8192.0 * 32));   // dy [rows, 4096 / 128]
  CHECK(ex.f[1].count == 1);
  CHECK(ex.f[1].bytes == doctest::Approx(2 * (4 * 4096.0 * 7168 + 4 * 4 * 32 * 56)));
  CHECK(ex.b[2].bytes == doctest::Approx(4 * 8192.0 * 7168 * 3 + 4 * 4 * 8192.0 * 56));   // from bf16 x (default)
}

TEST_CASE("blockwise fp8 kernels appear only under fp8 with the blockwise recipe") {
  const auto s = deepseek();
  REQUIRE(s.features.fp8_recipe == config::Fp8Recipe::blockwise);
  const int moe_layer = s.model.moe->dense_layers;
  const auto bw = models::layer_kernels(s.model, moe_layer, models::rank_shape(s));
  const auto tw_s = deepseek({"features.fp8_recipe=tensorwise"});
  const auto tw = models::layer_kernels(tw_s.model, moe_layer, models::rank_shape(tw_s));
  const auto bf_s = deepseek({"training.precision=bf16"});
  const auto bf = models::layer_kernels(bf_s.model, moe_layer, models::rank_shape(bf_s));
  for (const char* p : {"fp8_quant", "fp8_weight_transpose", "fp8_scale_transpose"}) {
    CAPTURE(p);
    CHECK(count_prefix(bw, p) > 0);
    CHECK(count_prefix(tw, p) == 0);
    CHECK(count_prefix(bf, p) == 0);
  }
  CHECK(count_prefix(bw, "fp8_cast") == 0);
  CHECK(count_prefix(tw, "fp8_cast_x") > 0);
  CHECK(count_prefix(bf, "fp8_cast_x") == 0);
  // One weight transpose per fp8 linear: q_down, q_up, kv_down, kv_up, attn_out, the shared expert's
  // two and the routed experts' two (the router stays bf16).
  CHECK(count_prefix(bw, "fp8_weight_transpose") == 9);
}

TEST_CASE("blockwise fp8 with DeepEP's fp8 dispatch: the MoE input quantised once, before the dispatch") {
  const auto s = deepseek();
  const int L = s.model.moe->dense_layers;
  const auto sh = models::rank_shape(s);
  REQUIRE(sh.fp8_dispatch);
  const auto lk = models::layer_kernels(s.model, L, sh);
  const double Tn = 4096, h = 7168;
  CHECK(count_named(lk.f, "fp8_quant_dispatch") == 1);
  CHECK(named(lk.f, "fp8_quant_dispatch").bytes == doctest::Approx(Tn * h * 3 + 4 * Tn * 56));
  CHECK(count_named(lk.b, "fp8_quant_combine_grad") == 1);
  // before the experts in both passes (the dispatch and the combine's backward start there)
  auto index = [](const std::vector<hardware::Kernel>& ks, std::string_view n) {
    return static_cast<std::size_t>(std::find_if(ks.begin(), ks.end(), [&](const auto& k) { return n == k.name; }) - ks.begin());
  };
  CHECK(index(lk.f, "fp8_quant_dispatch") < lk.f_experts);
  CHECK(index(lk.b, "fp8_quant_combine_grad") < lk.b_experts);
  // MLA's four projections and the output projection quantise their inputs; the routed and shared
  // experts' first GEMMs read the dispatch's copy, the second GEMMs the SwiGLU's fp8 output.
  CHECK(count_named(lk.f, "fp8_quant_x") == 5);
  // Without the fp8 dispatch both first GEMMs quantise their own inputs.
  const auto s2 = deepseek({"moe.fp8_dispatch=false"});
  const auto lk2 = models::layer_kernels(s2.model, L, models::rank_shape(s2));
  CHECK(count_named(lk2.f, "fp8_quant_dispatch") == 0);
  CHECK(count_named(lk2.b, "fp8_quant_combine_grad") == 0);
  CHECK(count_named(lk2.f, "fp8_quant_x") == 7);
}

TEST_CASE("moe.fp8_activation_cache: the attention output and SwiGLU input quantised, dequantised, the SwiGLU recomputed") {
  const auto on = deepseek();
  const auto off = deepseek({"moe.fp8_activation_cache=false"});
  const int L = 0;   // a dense layer: one SwiGLU MLP
  const auto a = models::layer_kernels(on.model, L, models::rank_shape(on));
  const auto b = models::layer_kernels(off.model, L, models::rank_shape(off));
  const double T = 4096, o = 128 * 128, F = static_cast<double>(on.model.ffn_hidden);
  CHECK(count_named(a.f, "fp8_cache_attn_out") == 1);
  CHECK(count_named(a.b, "fp8_cache_attn_out_dequant") == 1);
  CHECK(count_named(b.f, "fp8_cache_attn_out") == 0);
  CHECK(named(a.f, "fp8_cache_attn_out").bytes == doctest::Approx(T * o * (2 + 1 + 4.0 / 128)));
  CHECK(named(a.f, "fp8_cache_swiglu_in").bytes == doctest::Approx(T * 2 * F * 3 + 4 * T * 2 * F / 128));
  CHECK(named(a.b, "fp8_cache_swiglu_in_dequant").bytes == doctest::Approx(T * 2 * F * (1 + 4.0 / 128 + 2)));
  CHECK(count_named(b.f, "fp8_cache_swiglu_in") == 0);
  // the SwiGLU backward writes the recomputed output (bf16) too
  CHECK(named(a.b, "swiglu_bwd").bytes - named(b.b, "swiglu_bwd").bytes == doctest::Approx(2 * T * F));
}

TEST_CASE("moe.recompute_norm_up_proj: a recomputed fp8 up-projection quantises its input again") {
  auto quants_in_b = [](const config::Scenario& s) {
    auto ks = models::layer_kernels(s.model, 0, models::rank_shape(s));
    const int before = count_named(ks.b, "fp8_quant_x");
    if (s.moe.recompute_norm_up_proj) layer::add_norm_up_proj_recompute(ks.f, ks.b);
    return count_named(ks.b, "fp8_quant_x") - before;
  };
  CHECK(quants_in_b(deepseek()) == 2);   // q_up and kv_up
  CHECK(quants_in_b(deepseek({"moe.recompute_norm_up_proj=false"})) == 0);
}

TEST_CASE("blockwise fp8: a step without overlap is slower by the time of the added kernels") {
  // One H100, Llama-3-8B, one micro-batch: the step's compute is the sum of the kernels' stream
  // times, so the difference between the two recipes is the difference of their kernels' times.
  auto scen = [](const char* recipe) {
    const std::string text = std::string("model = \"llama3-8b\"\nhardware = \"h100-sxm\"\n[cluster]\ngpus = 1\n") +
                             "[training]\nseq_len = 4096\nglobal_batch = 1\nmicro_batch = 1\nprecision = \"fp8\"\n"
                             "[features]\nfp8_recipe = \"" + recipe + "\"\n";
    return config::load_scenario_string(text, "fp8.toml").base;
  };
  auto kernel_seconds = [](const config::Scenario& s) {
    hardware::CostModel cost(s.hardware, s.training.precision, s.calibration ? &*s.calibration : nullptr,
                             s.features.cuda_graphs);
    const auto sh = models::rank_shape(s);
    models::settle_gemm_duty(s.model, sh, cost);
    auto sum = [&](const models::LayerKernels& lk) {
      double t = 0;
      for (const auto* v : {&lk.f, &lk.b, &lk.w}) {
        std::vector<const hardware::Kernel*> p;
        for (const auto& k : *v) p.push_back(&k);
        t += cost.stream_time(p).gpu_seconds;
      }
      return t;
    };
    double t = sum(models::embedding_kernels(s.model, sh)) + sum(models::head_kernels(s.model, sh));
    for (int l = 0; l < s.model.layers; ++l) t += sum(models::layer_kernels(s.model, l, sh));
    return t;
  };
  const auto tw = scen("tensorwise"), bw = scen("blockwise");
  const double dk = kernel_seconds(bw) - kernel_seconds(tw);
  const double ds = step::simulate(bw, {}).step_time_s - step::simulate(tw, {}).step_time_s;
  CAPTURE(dk);
  CAPTURE(ds);
  CHECK(dk > 0.005);   // the weight transposes and the second quantisation of x and dy cost milliseconds
  CHECK(ds == doctest::Approx(dk).epsilon(0.02).scale(0));
}

TEST_CASE("moe.imbalance scales the experts' token kernels, not the transposed copy of their weights") {
  const auto s = deepseek({"moe.imbalance=1.2"});
  const int L = s.model.moe->dense_layers;
  const auto lk = models::layer_kernels(s.model, L, models::rank_shape(s));
  auto f = lk.f, b = lk.b;
  layer::scale_expert_kernels(s, f, lk.f_experts, lk.f_experts_end);
  layer::scale_expert_kernels(s, b, lk.b_experts, lk.b_experts_end);
  int transposes = 0, quants = 0;
  for (std::size_t i = lk.f_experts; i < lk.f_experts_end; ++i)
    if (std::string_view(f[i].name) == "fp8_weight_transpose") {
      CHECK(f[i].bytes == lk.f[i].bytes);
      ++transposes;
    }
  for (std::size_t i = lk.b_experts; i < lk.b_experts_end; ++i)
    if (std::string_view(b[i].name).rfind("fp8_quant", 0) == 0) {
      CHECK(b[i].bytes == doctest::Approx(1.2 * lk.b[i].bytes));
      ++quants;
    }
  CHECK(transposes == 2);   // the routed experts' two weights, in the forward
  CHECK(quants >= 4);       // x and dy of both GEMMs for the weight gradients, dy of the first
}

TEST_CASE("MLA: the dense K and V the attention core reads are copies, built again with the up-projections") {
  const auto s = deepseek();
  const auto& l = *s.model.mla;
  const double T = 4096, H = static_cast<double>(s.model.heads), nope = static_cast<double>(l.qk_nope_head_dim),
               rope = static_cast<double>(l.qk_rope_head_dim), vd = static_cast<double>(l.v_head_dim);
  auto ks = models::layer_kernels(s.model, 0, models::rank_shape(s));
  // K: k_nope of every head and the one k_pe read, [T, H, nope + rope] written; V copied out
  CHECK(named(ks.f, "mla_k_concat").bytes == doctest::Approx(2 * T * (H * nope + rope) + 2 * T * H * (nope + rope)));
  CHECK(named(ks.f, "mla_v_copy").bytes == doctest::Approx(2 * 2 * T * H * vd));
  CHECK(count_named(ks.b, "mla_k_concat_bwd") == 1);
  CHECK(count_named(ks.b, "mla_v_copy_bwd") == 1);
  auto f = ks.f, b = ks.b;
  layer::add_norm_up_proj_recompute(f, b);
  for (const char* n : {"rope_q", "rope_k", "mla_k_concat", "mla_v_copy"}) {
    CAPTURE(n);
    CHECK(count_named(b, n) == 1);
  }
  // a model without MLA has none, and its rotary embedding is not recomputed with the norms
  config::LoadOptions o;
  const auto d = config::load_scenario(kRoot + "/scenarios/64xgb200_mixtral_8x7b.toml", o).base;
  auto dk = models::layer_kernels(d.model, 0, models::rank_shape(d));
  CHECK(count_named(dk.f, "mla_k_concat") == 0);
  auto df = dk.f, db = dk.b;
  layer::add_norm_up_proj_recompute(df, db);
  CHECK(count_named(db, "rope_q") == 0);
}
