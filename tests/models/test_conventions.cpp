// A model's block conventions stated apart from its activation (ModelSpec bias, dropout, rope,
// layernorm; models/conventions.h): Nemotron-4 is squared ReLU ("gelu" for its GEMM shapes) with
// LayerNorm and RoPE but no linear biases and no dropout (NeMo NemotronConfig).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "models/layer_kernels.h"
#include "models/params.h"
#include "models/rank_shape.h"
#include "tests/models/fixtures.h"

using namespace mfusim::models;
namespace fx = mfusim::models::fixtures;

namespace {
bool has_kernel(const LayerKernels& lk, const std::string& name) {
  auto in = [&](const std::vector<mfusim::hardware::Kernel>& v) {
    return std::any_of(v.begin(), v.end(), [&](const auto& k) { return k.name == name; });
  };
  return in(lk.f) || in(lk.b) || in(lk.w);
}
ModelSpec nemotron4_15b(bool stated) {
  ModelSpec m = fx::dense("nemotron4-15b", 32, 6144, 24576, 48, 8, 256000, Activation::gelu);
  if (stated) {
    m.bias = false;
    m.dropout = false;
    m.rope = true;
    m.layernorm = true;
  }
  return m;
}
}  // namespace

TEST_CASE("conventions: unset, a GELU model is GPT-style; stated, each one follows the model file") {
  RankShape r;
  r.tp = 4;
  r.micro_batch = 1;
  r.seq_len = 4096;
  const ModelSpec gpt = nemotron4_15b(false), nem = nemotron4_15b(true);
  const LayerKernels g = layer_kernels(gpt, 0, r), n = layer_kernels(nem, 0, r);
  // GPT-style: bias + GELU fused, dropout in the residual, learned positions (no RoPE), LayerNorm.
  CHECK(has_kernel(g, "bias_gelu"));
  CHECK(has_kernel(g, "bias_dropout_add"));
  CHECK_FALSE(has_kernel(g, "rope_q"));
  CHECK(has_kernel(g, "layernorm"));
  // Nemotron-4 as NeMo configures it: no bias, no dropout, RoPE on q and k, LayerNorm kept.
  CHECK_FALSE(has_kernel(n, "bias_gelu"));
  CHECK(has_kernel(n, "gelu"));
  CHECK_FALSE(has_kernel(n, "bias_dropout_add"));
  CHECK(has_kernel(n, "residual_add"));
  CHECK(has_kernel(n, "rope_q"));
  CHECK(has_kernel(n, "rope_k"));
  CHECK(has_kernel(n, "layernorm"));
  CHECK_FALSE(has_kernel(n, "rmsnorm"));
  // Parameters: the biases go (qkv a*d + 2*g*d, o h, fc1 f, fc2 h per layer); the norms keep weight and bias.
  const double h = 6144, f = 24576, d = 128, a = 48, kv = 8;
  const double per_layer_bias = a * d + 2 * kv * d + h + f + h;
  CHECK(layer_params(gpt, 0) - layer_params(nem, 0) == doctest::Approx(per_layer_bias));
  CHECK(count_params(gpt).final_norm == count_params(nem).final_norm);
  // The whole model: 32 layers of biases, nothing else; the total a sanity check against the report's 15.6B
  // (3.1B embedding + 12.5B non-embedding, arXiv:2402.16819 §2, untied; too coarse to see the biases).
  CHECK(count_params(gpt).total - count_params(nem).total == doctest::Approx(32 * per_layer_bias));
  CHECK(count_params(nem).total == doctest::Approx(15.6e9).epsilon(0.01));
  // A bias stated on a SwiGLU model: the gated fc1's bias covers both halves (2 f), its add is in the kernels.
  ModelSpec llama = fx::llama3_8b(), biased = llama;
  biased.bias = true;
  const double lh = 4096, lf = 14336, ld = 128;
  CHECK(layer_params(biased, 0) - layer_params(llama, 0) == doctest::Approx(32 * ld + 2 * 8 * ld + lh + 2 * lf + lh));
  CHECK(has_kernel(layer_kernels(biased, 0, r), "bias_swiglu"));
  CHECK_FALSE(has_kernel(layer_kernels(llama, 0, r), "bias_swiglu"));
  // An RMSNorm stated on a GELU model: one weight per norm, the rmsnorm kernels.
  ModelSpec rms = gpt;
  rms.layernorm = false;
  CHECK(layer_params(gpt, 0) - layer_params(rms, 0) == doctest::Approx(2 * h));
  CHECK(has_kernel(layer_kernels(rms, 0, r), "rmsnorm"));
}
