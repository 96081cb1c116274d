// torchtitan's Llama block (features.model_code = "torchtitan", models/eager_recipe.cpp): its eager
// kernels as run 23's H200 trace lists them (validation/runs/run23-eager-trace), what torch.compile
// leaves of them, per-op SAC's replay, and the block against run 18's measurement
// (validation/runs/run18-fsdp-sac: Llama-3-8B blocks, seq 8192, one H200).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "config/loader.h"
#include "hardware/calibration.h"
#include "hardware/cost_model.h"
#include "models/layer_kernels.h"
#include "models/rank_shape.h"
#include "report/json.h"
#include "step/simulate.h"
#include "tests/models/fixtures.h"

using namespace mfusim;
using hardware::Kernel;

namespace {

const std::string kRoot = std::string(MFUSIM_TEST_DIR) + "/..";

models::RankShape shape(bool torchtitan, bool compiled, config::Recompute rc = config::Recompute::none, int mbs = 1) {
  models::RankShape r;
  r.micro_batch = mbs;
  r.seq_len = 8192;
  r.sequence_parallel = false;
  r.flash_attention = true;
  r.fused_kernels = compiled;
  r.recompute = rc;
  r.torchtitan = torchtitan;
  return r;
}

int count(const std::vector<Kernel>& ks, const std::string& name) {
  int n = 0;
  for (const auto& k : ks)
    if (name == k.name) n += k.count;
  return n;
}
const Kernel* find(const std::vector<Kernel>& ks, const std::string& name) {
  for (const auto& k : ks)
    if (name == k.name) return &k;
  return nullptr;
}
bool any_containing(const std::vector<Kernel>& ks, const std::string& part) {
  return std::any_of(ks.begin(), ks.end(), [&](const Kernel& k) { return std::string(k.name).find(part) != std::string::npos; });
}
double seconds(const std::vector<Kernel>& ks, const hardware::CostModel& cm) {
  double t = 0;
  for (const auto& k : ks) t += cm.time(k);
  return t;
}
double block_seconds(const models::LayerKernels& lk, const hardware::CostModel& cm) {
  return seconds(lk.f, cm) + seconds(lk.b, cm) + seconds(lk.w, cm) + seconds(lk.r, cm);
}

}  // namespace

TEST_CASE("torchtitan block: repeat_kv copies K and V to every query head under GQA only") {
  const auto gqa = models::layer_kernels(models::fixtures::llama3_8b(), 0, shape(true, false));   // 32 heads, 8 KV
  const double T = 8192, kv_bytes = 2 * T * 8 * 128;
  REQUIRE(find(gqa.f, "k_repeat") != nullptr);
  REQUIRE(find(gqa.f, "v_repeat") != nullptr);
  CHECK(find(gqa.f, "k_repeat")->bytes == doctest::Approx(kv_bytes + 4 * kv_bytes));   // read once, written 32 / 8 times
  CHECK(find(gqa.b, "k_repeat_bwd")->bytes == doctest::Approx(4 * kv_bytes + kv_bytes));
  CHECK(count(gqa.b, "v_repeat_bwd") == 1);
  // MHA (n_kv_heads == n_heads): repeat_kv returns x itself, no kernel.
  const auto mha = models::layer_kernels(models::fixtures::llama2_7b(), 0, shape(true, false));
  CHECK(find(mha.f, "k_repeat") == nullptr);
  CHECK(find(mha.b, "v_repeat_bwd") == nullptr);
  // Megatron's block with flash attention: no repeat (the fused kernel reads the grouped heads).
  const auto meg = models::layer_kernels(models::fixtures::llama3_8b(), 0, shape(false, false));
  CHECK(find(meg.f, "k_repeat") == nullptr);
  // Compiled: SDPA is an extern kernel reading dense K and V, so the copies stay.
  const auto comp = models::layer_kernels(models::fixtures::llama3_8b(), 0, shape(true, true));
  CHECK(count(comp.f, "k_repeat") == 1);
  CHECK(count(comp.b, "k_repeat_bwd") == 1);
}

TEST_CASE("torchtitan block: eager RMSNorm and RoPE casts, the input-gradient sums; compiled, none of them") {
  const auto m = models::fixtures::llama3_8b();
  const auto eager = models::layer_kernels(m, 0, shape(true, false));
  const double x = 8192.0 * 4096;
  // RMSNorm: x.float() (2 bytes read, 4 written per element) and type_as (4 read, 2 written), twice per block.
  CHECK(count(eager.f, "rmsnorm_to_fp32") == 2);
  CHECK(count(eager.f, "rmsnorm_to_bf16") == 2);
  CHECK(find(eager.f, "rmsnorm_to_fp32")->bytes == doctest::Approx(6 * x));
  CHECK(find(eager.f, "rmsnorm_to_fp32")->family == hardware::MemFamily::cast_up);
  CHECK(count(eager.b, "rmsnorm_to_fp32_bwd") == 2);
  // RoPE in fp32 complex arithmetic on q and k, with its casts.
  CHECK(find(eager.f, "rope_q_complex_mul")->bytes == doctest::Approx(8 * x + 4 * 8192.0 * 128));
  CHECK(count(eager.f, "rope_k_to_bf16") == 1);
  CHECK(count(eager.b, "rope_q_freqs_conj") == 1);
  CHECK_FALSE(any_containing(eager.f, "rope_cat"));   // not the Hugging Face rotate_half pieces
  // wq / wk / wv and w1 / w3 are separate linears: their input gradients are summed.
  CHECK(count(eager.b, "qkv_dx_sum") == 2);
  CHECK(count(eager.b, "mlp_up_dx_sum") == 1);
  // The transposes around SDPA are views: the attention output goes straight into wo.
  for (std::size_t i = 0; i + 1 < eager.f.size(); ++i)
    if (std::string(eager.f[i].name) == "flash_attn_fwd") CHECK(std::string(eager.f[i + 1].name) == "attn_out");
  // The final norm of the head is the same RMSNorm class.
  models::ModelSpec mh = m;
  CHECK(count(models::head_kernels(mh, shape(true, false)).f, "rmsnorm_to_fp32") == 1);

  // torch.compile: Inductor fuses the casts, the complex multiply and the gradient sums into
  // its norm and RoPE kernels: the compiled torchtitan block is the compiled Megatron block
  // plus repeat_kv and its backward, kernel for kernel.
  const auto comp = models::layer_kernels(m, 0, shape(true, true));
  const auto meg = models::layer_kernels(m, 0, shape(false, true));
  for (const char* part : {"_to_fp32", "_to_bf16", "complex", "dx_sum", "freqs_conj"}) {
    CAPTURE(part);
    CHECK(any_containing(eager.f, part) + any_containing(eager.b, part) > 0);
    CHECK_FALSE(any_containing(comp.f, part));
    CHECK_FALSE(any_containing(comp.b, part));
  }
  CHECK(comp.f.size() == meg.f.size() + 2);
  CHECK(comp.b.size() == meg.b.size() + 2);
  CHECK(comp.w.size() == meg.w.size());
}

TEST_CASE("torchtitan block: per-op SAC replays the eager kernels too, not SDPA nor the last residual add") {
  const auto m = models::fixtures::llama3_8b();
  const auto hw = config::load_hardware(kRoot + "/hardware/h200.toml");
  const auto cal = hardware::read_calibration(kRoot + "/hardware/calibration/h200.toml");
  const hardware::CostModel cm(hw, hardware::Precision::bf16, &cal, false);
  const auto tt = models::layer_kernels(m, 0, shape(true, false, config::Recompute::selective_op));
  const auto meg = models::layer_kernels(m, 0, shape(false, false, config::Recompute::selective_op));
  // run 23's trace of the replay: both norms with their casts, wk, RoPE, the two repeats, wo, the
  // first residual add, silu, w3 and the gate multiply; SDPA's outputs are saved; the replay stops
  // after the gate multiply (w2 is saved, the last add's output is not needed).
  CHECK(count(tt.r, "rmsnorm_to_fp32") == 2);
  CHECK(count(tt.r, "rope_q_complex_mul") == 1);
  CHECK(count(tt.r, "k_repeat") == 1);
  CHECK(count(tt.r, "v_repeat") == 1);
  CHECK(count(tt.r, "flash_attn_fwd") == 0);
  CHECK(count(tt.r, "residual_add") == 1);
  CHECK(count(meg.r, "residual_add") == 2);
  REQUIRE_FALSE(tt.r.empty());
  CHECK(std::string(tt.r.back().name) == "swiglu_mul");
  // The replay's GEMMs are unchanged (wk, wo, w3): only memory-bound kernels were added.
  auto gemm_flops = [](const std::vector<Kernel>& ks) {
    double f = 0;
    for (const auto& k : ks)
      if (k.kind == hardware::KernelKind::gemm) f += k.flops;
    return f;
  };
  CHECK(gemm_flops(tt.r) == doctest::Approx(gemm_flops(meg.r)));
  const double r_tt = seconds(tt.r, cm), r_meg = seconds(meg.r, cm);
  MESSAGE("per-op SAC replay per block, mbs 1: torchtitan " << r_tt * 1e3 << " ms, Megatron list " << r_meg * 1e3
                                                            << " ms (run 18 measured 3.96 ms)");
  CHECK(r_tt > r_meg + 0.2e-3);
}

TEST_CASE("torchtitan block: closer to run 18's H200 measurement than the Megatron list it replaces") {
  // Run 18 (validation/runs/run18-fsdp-sac/README.md): forward + backward per Llama-3-8B block,
  // seq 8192, eager torchtitan code, AC none / per-op SAC, ms.
  struct Row {
    int mbs;
    config::Recompute rc;
    double measured_ms;
  };
  const auto m = models::fixtures::llama3_8b();
  const auto hw = config::load_hardware(kRoot + "/hardware/h200.toml");
  const auto cal = hardware::read_calibration(kRoot + "/hardware/calibration/h200.toml");
  const hardware::CostModel cm(hw, hardware::Precision::bf16, &cal, false);
  for (const Row r : {Row{1, config::Recompute::none, 23.82}, Row{2, config::Recompute::none, 48.18},
                      Row{1, config::Recompute::selective_op, 27.78}, Row{2, config::Recompute::selective_op, 55.96}}) {
    CAPTURE(r.mbs);
    const std::string rc = config::to_string(r.rc);
    CAPTURE(rc);
    const double tt = 1e3 * block_seconds(models::layer_kernels(m, 0, shape(true, false, r.rc, r.mbs)), cm);
    const double meg = 1e3 * block_seconds(models::layer_kernels(m, 0, shape(false, false, r.rc, r.mbs)), cm);
    MESSAGE("modelled " << tt << " ms (Megatron list " << meg << "), measured " << r.measured_ms);
    CHECK(std::fabs(tt / r.measured_ms - 1) < std::fabs(meg / r.measured_ms - 1) - 0.04);
    CHECK(std::fabs(tt / r.measured_ms - 1) < 0.10);
  }
}

TEST_CASE("features.model_code: torchtitan needs a dense SwiGLU model, SDPA's fused attention and bf16 parameters") {
  const std::string base = R"(
name = "tt"
model = "llama3-8b"
hardware = "h200"
[cluster]
gpus = 8
[training]
seq_len = 8192
global_batch = 8
micro_batch = 1
[parallel]
zero_stage = 3
[features]
model_code = "torchtitan"
)";
  auto error_of = [&](const std::vector<std::string>& sets) -> std::string {
    config::LoadOptions o;
    o.overrides = sets;
    try {
      config::load_scenario_string(base, kRoot + "/tests/config/tt_fixture.toml", o);
    } catch (const config::ConfigError& e) {
      return e.what();
    }
    return "(no error)";
  };
  CHECK(error_of({}) == "(no error)");
  CHECK(error_of({"features.attention=\"hf_eager\""}).find("flash or cuDNN") != std::string::npos);
  CHECK(error_of({"training.master_weights=\"fp32-autocast\""}).find("bf16 parameters") != std::string::npos);
  CHECK(error_of({"model=\"gpt3-175b\""}).find("dense Llama block") != std::string::npos);
  CHECK(error_of({"features.model_code=\"titan\""}).find("model_code") != std::string::npos);
  config::LoadOptions o;
  o.overrides = {"features.fused_kernels=false", "features.recompute=\"selective-op\""};
  const auto s = config::load_scenario_string(base, kRoot + "/tests/config/tt_fixture.toml", o).base;
  CHECK(s.features.model_code == config::ModelCode::torchtitan);
  CHECK(models::rank_shape(s).torchtitan);
  // Through the whole step: the eager torchtitan block is slower than the Megatron list of the same
  // scenario, its recompute longer; the resolved JSON names the model code only when it is torchtitan.
  auto meg_s = s;
  meg_s.features.model_code = config::ModelCode::megatron;
  step::SimulateOptions so;
  so.keep_timeline = false;
  const auto tt = step::simulate(s, so), meg = step::simulate(meg_s, so);
  CHECK(tt.step_time_s > meg.step_time_s * 1.03);
  std::string jt = report::to_json(tt), jm = report::to_json(meg);
  jt.erase(std::remove(jt.begin(), jt.end(), ' '), jt.end());
  jm.erase(std::remove(jm.begin(), jm.end(), ' '), jm.end());
  CHECK(jt.find("\"model_code\":\"torchtitan\"") != std::string::npos);
  CHECK(jm.find("model_code") == std::string::npos);
}
