// Memory accounting against Korthikanti 2022 (Table 2, eq. 5/6) and Zero Bubble
// (M_B, M_W), and the mixed-precision Adam bytes per parameter.
#include <doctest/doctest.h>

#include <cmath>

#include "models/memory.h"
#include "models/params.h"
#include "tests/models/fixtures.h"
#include "config/loader.h"
#include "tests/config/config_test_helpers.h"

using namespace mfusim::models;
namespace fx = mfusim::models::fixtures;

namespace {
// Korthikanti's assumptions: no flash attention, dropout masks of 1 byte, 16-bit activations.
RankShape kor(int t, bool sp, Recompute rc, std::int64_t b = 1, std::int64_t s = 2048) {
  RankShape r;
  r.tp = t;
  r.sequence_parallel = sp;
  r.recompute = rc;
  r.micro_batch = b;
  r.seq_len = s;
  r.flash_attention = false;
  return r;
}
}  // namespace

TEST_CASE("Korthikanti Table 2: activation memory per layer, exact") {
  for (const ModelSpec& m : {fx::gpt_22b(), fx::gpt_175b(), fx::mt_nlg_530b(), fx::gpt_1t()}) {
    for (int t : {1, 2, 8}) {
      for (std::int64_t b : {1, 4}) {
        const double s = 2048, h = m.hidden, a = m.heads, sbh = s * b * h;
        INFO(m.name << " t=" << t << " b=" << b);
        // tensor parallel (baseline): sbh(10 + 24/t + 5as/(ht))
        CHECK(activation_bytes(m, 0, kor(t, false, Recompute::none, b)) ==
              doctest::Approx(sbh * (10 + 24.0 / t + 5 * a * s / (h * t))).epsilon(1e-12));
        // tensor + sequence parallel: sbh(34/t + 5as/(ht))
        CHECK(activation_bytes(m, 0, kor(t, true, Recompute::none, b)) ==
              doctest::Approx(sbh * (34.0 / t + 5 * a * s / (h * t))).epsilon(1e-12));
        // tensor parallel + selective: sbh(10 + 24/t)
        CHECK(activation_bytes(m, 0, kor(t, false, Recompute::selective, b)) ==
              doctest::Approx(sbh * (10 + 24.0 / t)).epsilon(1e-12));
        // tensor + sequence + selective: sbh(34/t)
        CHECK(activation_bytes(m, 0, kor(t, true, Recompute::selective, b)) ==
              doctest::Approx(sbh * 34.0 / t).epsilon(1e-12));
        // full recompute: sbh(2) (the paper's row, without SP; with SP mfusim stores 2sbh/t)
        CHECK(activation_bytes(m, 0, kor(t, false, Recompute::full, b)) == doctest::Approx(2 * sbh).epsilon(1e-12));
        CHECK(activation_bytes(m, 0, kor(t, true, Recompute::full, b)) ==
              doctest::Approx(2 * sbh / t).epsilon(1e-12));
      }
    }
  }
}

TEST_CASE("Korthikanti eq. 5 / eq. 6: first-stage totals over L layers (1F1B, SP)") {
  const ModelSpec m = fx::gpt_175b();
  const double s = 2048, b = 1, h = m.hidden, a = m.heads, L = m.layers, t = 8;
  CHECK(L * activation_bytes(m, 0, kor(8, true, Recompute::none)) ==
        doctest::Approx(s * b * h * L / t * (34 + 5 * a * s / h)).epsilon(1e-12));
  CHECK(L * activation_bytes(m, 0, kor(8, true, Recompute::selective)) ==
        doctest::Approx(34 * s * b * h * L / t).epsilon(1e-12));
}

TEST_CASE("Korthikanti: 5as/h = 80 (GPT-3), 64 (MT-NLG); selective saves 70% / 65% of activations") {
  auto saving = [](const ModelSpec& m) {
    return 1 - activation_bytes(m, 0, kor(8, true, Recompute::selective)) /
                   activation_bytes(m, 0, kor(8, true, Recompute::none));
  };
  CHECK(std::round(100 * saving(fx::gpt_175b())) == 70);
  CHECK(std::round(100 * saving(fx::mt_nlg_530b())) == 65);
}

TEST_CASE("Zero Bubble Table 1: M_B = sb(34h + 5as), M_W = 32sbh per GPT layer") {
  for (const ModelSpec& m : {fx::gpt_22b(), fx::gpt_175b()}) {
    const double s = 2048, b = 2, h = m.hidden, a = m.heads;
    CHECK(activation_bytes(m, 0, kor(1, false, Recompute::none, 2)) ==
          doctest::Approx(s * b * (34 * h + 5 * a * s)).epsilon(1e-12));
    CHECK(w_stash_bytes(m, 0, kor(1, false, Recompute::none, 2)) == doctest::Approx(32 * s * b * h).epsilon(1e-12));
    CHECK(w_stash_bytes(m, 0, kor(1, false, Recompute::none, 2)) <
          activation_bytes(m, 0, kor(1, false, Recompute::none, 2)));
  }
}

TEST_CASE("adaptations: flash drops the s^2 term, GQA shrinks K/V, SwiGLU keeps gate+up, MoE top_k copies") {
  const ModelSpec g = fx::gpt_175b();
  RankShape r = kor(8, true, Recompute::none);
  r.flash_attention = true;
  const double s = 2048, h = g.hidden, sbh = s * h;
  // flash: 34/t sbh - dropout on probabilities is not materialised, + fp32 LSE (4 bytes per head per token)
  CHECK(activation_bytes(g, 0, r) == doctest::Approx(sbh * 34 / 8 + s * 4 * 96 / 8).epsilon(1e-12));
  // GQA: Llama-2-70B vs the same shape with MHA differs by K and V of (64-8) heads of 128 dims: 2 * 2 * 56 * 128 / t
  const ModelSpec l = fx::llama2_70b();
  ModelSpec mha = l;
  mha.kv_heads = 64;
  CHECK(activation_bytes(mha, 0, r) - activation_bytes(l, 0, r) ==
        doctest::Approx(s * 2.0 * 2 * 56 * 128 / 8).epsilon(1e-12));
  // SwiGLU MLP (no dropout, no bias): norm in 2h, fc1 in 2h, gate+up 4f, swiglu out 2f => with SP all / t
  ModelSpec dense_l = l;
  RankShape r1 = r;
  r1.tp = 1;
  const double attn = 2 * 8192.0 + 2 * 8192 + 2 * (8192 + 1024) + 2 * 1024 + 2 * 8192 + 4 * 64;
  CHECK(activation_bytes(dense_l, 0, r1) == doctest::Approx(s * (attn + 4 * 8192.0 + 6 * 28672)).epsilon(1e-12));
  // MoE: Mixtral (h 4096, 8 kv heads of 128) holds norm input, router input, fp32
  // router probabilities (8), and top_k = 2 copies of (permuted input 2h + SwiGLU 6f).
  const ModelSpec mx = fx::mixtral_8x7b();
  const double mx_attn = 2 * 4096.0 + 2 * 4096 + 2 * (4096 + 1024) + 2 * 1024 + 2 * 4096 + 4 * 32;
  CHECK(activation_bytes(mx, 0, r1) ==
        doctest::Approx(s * (mx_attn + 2 * 4096.0 + 2 * 4096 + 4 * 8 + 2 * (2 * 4096 + 6 * 14336))).epsilon(1e-12));
}

TEST_CASE("embedding / head extras: fp32 logits 4sbv/t") {
  const ModelSpec m = fx::gpt_175b();
  const RankShape r = kor(8, true, Recompute::none);
  const double s = 2048, h = m.hidden;
  CHECK(head_activation_bytes(m, r) == doctest::Approx(4 * s * h / 8 + 4 * s * 51200 / 8).epsilon(1e-12));
  CHECK(embedding_activation_bytes(m, r) == doctest::Approx(s * h / 8).epsilon(1e-12));
  CHECK(embedding_activation_bytes(fx::llama3_8b(), r) == 0);
}

TEST_CASE("static memory: 18 bytes/param, or 6 + 12/dp with the distributed optimizer") {
  const ModelSpec m = fx::llama3_8b();
  std::vector<int> all(32);
  for (int i = 0; i < 32; ++i) all[i] = i;
  const double P = count_params(m).total;
  StaticMemory s = static_memory(m, all, true, true, 1, 1, 8, false);
  CHECK(s.params + s.grads + s.optimizer == doctest::Approx(18 * P).epsilon(1e-12));
  s = static_memory(m, all, true, true, 1, 1, 8, true);
  CHECK(s.params == doctest::Approx(2 * P).epsilon(1e-12));
  CHECK(s.grads == doctest::Approx(4 * P).epsilon(1e-12));
  CHECK(s.optimizer == doctest::Approx(12 * P / 8).epsilon(1e-12));
  // tp shards matrices, not norms: per rank between P/tp and P/tp + norms
  const StaticMemory t = static_memory(m, all, true, true, 4, 1, 1, false);
  CHECK(t.params / 2 > P / 4);
  CHECK(t.params / 2 < P / 4 + 1e6);
  // stages: first holds the embedding, last the head and final norm
  const StaticMemory first = static_memory(m, {0}, true, false, 1, 1, 1, false);
  const StaticMemory mid = static_memory(m, {1}, false, false, 1, 1, 1, false);
  CHECK(first.params - mid.params == doctest::Approx(2 * 128256.0 * 4096).epsilon(1e-12));
  // experts are sharded by ep: DeepSeek-V3 MoE layer on ep=64
  const ModelSpec d = fx::deepseek_v3();
  const StaticMemory e1 = static_memory(d, {3}, false, false, 1, 1, 64, false);
  const StaticMemory e64 = static_memory(d, {3}, false, false, 1, 64, 64, false);
  CHECK(e1.params - e64.params == doctest::Approx(2 * 256 * 3.0 * 7168 * 2048 * 63 / 64).epsilon(1e-12));
}

TEST_CASE("fp8: the layer weights' fp8 copies (row-major and transposed) add 2 bytes per linear parameter") {
  const ModelSpec m = fx::llama3_8b();
  // One decoder layer: q, k, v, o and gate, up, down matrices (4096 x (4096 + 2 x 1024 + 4096)
  // and 3 x 4096 x 14336), tp 2.
  const double linear = 4096.0 * (4096 + 2 * 1024 + 4096) + 3 * 4096.0 * 14336;
  const StaticMemory b16 = static_memory(m, {1}, false, false, 2, 1, 8, true);
  const StaticMemory f8 = static_memory(m, {1}, false, false, 2, 1, 8, true, false, true);
  CHECK(f8.params - b16.params == doctest::Approx(2 * linear / 2).epsilon(1e-12));
  CHECK(f8.grads == b16.grads);
  CHECK(f8.optimizer == b16.optimizer);
  // The embedding and LM head have no fp8 copy.
  const StaticMemory e16 = static_memory(m, {}, true, true, 1, 1, 1, false);
  const StaticMemory e8 = static_memory(m, {}, true, true, 1, 1, 1, false, false, true);
  CHECK(e8.params == e16.params);
}

TEST_CASE("fp8 with Transformer Engine: each linear keeps its input quantised, 1 byte per element") {
  // Llama-2-70B's layer at tp 1 (the SwiGLU test above: QKV and fc1 inputs 2h each, attention
  // output 2h, SwiGLU output 2f of 2h + 2h + 6f). Under TE fp8 the QKV and fc1 inputs and the SwiGLU
  // output (fc2's input) are kept as fp8 copies (1 byte), the attention output twice: bf16 for the
  // attention backward and fp8 for the out-projection's weight gradient.
  const ModelSpec l = fx::llama2_70b();
  RankShape r = kor(1, true, Recompute::none);
  r.flash_attention = true;
  RankShape f = r;
  f.fp8 = true;
  const double s = 2048, h = 8192, ffn = 28672;
  CHECK(activation_bytes(l, 0, r) - activation_bytes(l, 0, f) == doctest::Approx(s * (h + h - h + ffn)).epsilon(1e-12));
  // blockwise (1x128 tiles): one fp32 scale per 128 elements on each saved fp8 input
  RankShape fb = f;
  fb.fp8_recipe = mfusim::config::Fp8Recipe::blockwise;
  CHECK(activation_bytes(l, 0, fb) - activation_bytes(l, 0, f) ==
        doctest::Approx(s * 4.0 / 128 * (h + h + h + ffn)).epsilon(1e-12));
  // Full recompute keeps the layer input only: unchanged by the recipe.
  RankShape rf = r, ff = f;
  rf.recompute = ff.recompute = Recompute::full;
  CHECK(activation_bytes(l, 0, ff) == activation_bytes(l, 0, rf));
  // torchtitan (torchao float8 saves its bf16 inputs) and DeepSeek-V3's own fp8 cache keep their accounting.
  RankShape tt = f, ttb = r;
  tt.torchtitan = ttb.torchtitan = true;
  CHECK(activation_bytes(l, 0, tt) == activation_bytes(l, 0, ttb));
  RankShape ds = f, dsb = r;
  ds.fp8_activation_cache = dsb.fp8_activation_cache = true;
  CHECK(activation_bytes(l, 0, ds) == activation_bytes(l, 0, dsb));
}

TEST_CASE("sharded_static_memory: the MTP modules' routed experts are sharded over the expert-data-parallel group") {
  // DeepSeek-V3's last stage (its last layer, the head and the MTP module) under ZeRO-2 / ZeRO-3 over 128 ranks
  // with EP 64: the MTP module's experts are sharded over 128 / 64 = 2 ranks, its dense part over 128.
  ModelSpec m = mfusim::config::load_model(config_test::kRoot + "/models/deepseek-v3.toml");
  REQUIRE(m.mtp_depth == 1);
  ModelSpec no_mtp = m;
  no_mtp.mtp_depth = 0;
  const std::vector<int> last = {m.layers - 1};
  const int tp = 1, ep = 64, shard = 128;
  const detail::ParamParts p = detail::mtp_parts(m);
  REQUIRE(p.experts > 0);
  const double dense = p.tp_sharded / tp + p.replicated, experts = p.experts / (double(tp) * ep);
  for (int stage : {2, 3}) {
    CAPTURE(stage);
    ZeroLayout z;
    z.stage = stage;
    z.shard = shard;
    const StaticMemory with = sharded_static_memory(m, last, false, true, tp, ep, z);
    const StaticMemory without = sharded_static_memory(no_mtp, last, false, true, tp, ep, z);
    CHECK(with.grads - without.grads == doctest::Approx(4.0 * (dense / shard + experts / (shard / ep))).epsilon(1e-9));
    if (stage == 3)
      CHECK(with.params - without.params == doctest::Approx(2.0 * (dense / shard + experts / (shard / ep))).epsilon(1e-9));
  }
}
