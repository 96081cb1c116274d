// Per-rank kernels of one layer: shapes under tp/sp/cp, and agreement with the
// FLOP accounting (sum of GEMM + attention kernel FLOPs x tp = layer_flops).
#include <doctest/doctest.h>

#include <string>

#include "models/flops.h"
#include "models/layer_comm.h"
#include "models/layer_kernels.h"
#include "tests/models/fixtures.h"

using namespace mfusim::models;
using mfusim::hardware::Kernel;
using mfusim::hardware::KernelKind;
namespace fx = mfusim::models::fixtures;
namespace config = mfusim::config;

namespace {
double compute_flops(const std::vector<Kernel>& ks) {   // GEMMs and attention (what layer_flops counts)
  double s = 0;
  for (const Kernel& k : ks)
    if (k.kind != KernelKind::memory) s += k.flops * k.count;
  return s;
}
double total_bytes(const std::vector<Kernel>& ks) {
  double s = 0;
  for (const Kernel& k : ks) s += k.bytes * k.count;
  return s;
}
int launches(const std::vector<Kernel>& ks) {
  int n = 0;
  for (const Kernel& k : ks) n += k.count;
  return n;
}
const Kernel& find(const std::vector<Kernel>& ks, const std::string& name) {
  for (const Kernel& k : ks)
    if (name == k.name) return k;
  FAIL("no kernel " << name);
  return ks.front();
}
RankShape shape(int tp, std::int64_t b, std::int64_t s, bool flash = true, bool fused = true) {
  RankShape r;
  r.tp = tp;
  r.micro_batch = b;
  r.seq_len = s;
  r.flash_attention = flash;
  r.fused_kernels = fused;
  return r;
}
}  // namespace

TEST_CASE("sum of kernel FLOPs x tp equals layer_flops (dense GPT / Llama, flash and materialised)") {
  for (const ModelSpec& m : {fx::gpt_175b(), fx::llama2_70b(), fx::llama3_8b()}) {
    for (int tp : {1, 2, 8}) {
      for (bool flash : {true, false}) {
        for (bool fused : {true, false}) {
          INFO(m.name << " tp=" << tp << " flash=" << flash << " fused=" << fused);
          const LayerKernels lk = layer_kernels(m, 0, shape(tp, 2, 4096, flash, fused));
          const LayerFlops lf = layer_flops(m, 0, 2, 4096);
          CHECK(compute_flops(lk.f) * tp == doctest::Approx(lf.f.total()).epsilon(1e-9));
          CHECK(compute_flops(lk.b) * tp == doctest::Approx(lf.b.total()).epsilon(1e-9));
          CHECK(compute_flops(lk.w) * tp == doctest::Approx(lf.w.total()).epsilon(1e-9));
          for (const auto* pass : {&lk.f, &lk.b, &lk.w})
            for (const Kernel& k : *pass) {
              CHECK(k.bytes > 0);
              CHECK(k.flops >= 0);
              if (k.kind != KernelKind::memory) CHECK(k.flops > 0);
            }
        }
      }
    }
  }
}

TEST_CASE("context parallel: kernel FLOPs x tp x cp = layer_flops") {
  const ModelSpec m = fx::llama3_70b();
  RankShape r = shape(4, 1, 16384);
  r.cp = 4;
  const LayerKernels lk = layer_kernels(m, 0, r);
  const LayerFlops lf = layer_flops(m, 0, 1, 16384);
  CHECK(compute_flops(lk.f) * 16 == doctest::Approx(lf.f.total()).epsilon(1e-9));
  CHECK(compute_flops(lk.b) * 16 == doctest::Approx(lf.b.total()).epsilon(1e-9));
  CHECK(compute_flops(lk.w) * 16 == doctest::Approx(lf.w.total()).epsilon(1e-9));
}

TEST_CASE("MoE kernels: router, grouped experts (count = experts per rank), sums x tp = layer_flops") {
  const ModelSpec m = fx::mixtral_8x7b();
  RankShape r = shape(2, 1, 4096);
  r.ep = 4;
  const LayerKernels lk = layer_kernels(m, 0, r);
  const LayerFlops lf = layer_flops(m, 0, 1, 4096);
  CHECK(compute_flops(lk.f) * 2 == doctest::Approx(lf.f.total()).epsilon(1e-9));
  CHECK(compute_flops(lk.b) * 2 == doctest::Approx(lf.b.total()).epsilon(1e-9));
  const Kernel& fc1 = find(lk.f, "expert_fc1");
  CHECK(fc1.count == 2);                       // 8 experts / ep 4
  CHECK(fc1.m == 4096 * 4 * 2 / 8);            // tp-group tokens x ep x top_k / experts
  CHECK(fc1.n == 2 * 14336 / 2);
  CHECK(find(lk.f, "router").m == 4096 / 2);   // sequence-parallel tokens
  CHECK(find(lk.f, "router").n == 8);
  const ModelSpec d = fx::deepseek_v3();
  RankShape rd = shape(1, 1, 4096);
  rd.ep = 64;
  const LayerKernels dk = layer_kernels(d, 3, rd);
  CHECK(find(dk.f, "expert_fc1").count == 4);
  CHECK(find(dk.f, "shared_fc1").n == 2 * 2048);
  CHECK(compute_flops(dk.f) == doctest::Approx(layer_flops(d, 3, 1, 4096).f.total()).epsilon(1e-9));
}

TEST_CASE("GEMM shapes: column/row parallel F, dgrad (m=tokens,n=in,k=out), wgrad (m=in,n=out,k=tokens)") {
  const ModelSpec m = fx::llama2_70b();
  RankShape r = shape(8, 2, 4096);
  r.cp = 2;
  const LayerKernels lk = layer_kernels(m, 0, r);
  const std::int64_t T = 2 * 4096 / 2;
  const Kernel& qkv = find(lk.f, "qkv");
  CHECK(qkv.m == T);
  CHECK(qkv.n == (64 + 2 * 8) / 8 * 128);
  CHECK(qkv.k == 8192);
  const Kernel& d = find(lk.b, "qkv_dgrad");
  CHECK((d.m == T && d.n == 8192 && d.k == 1280));
  const Kernel& w = find(lk.w, "qkv_wgrad");
  CHECK((w.m == 8192 && w.n == 1280 && w.k == T));
  const Kernel& up = find(lk.f, "mlp_up");
  CHECK((up.n == 2 * 28672 / 8 && up.k == 8192));
  const Kernel& down = find(lk.f, "mlp_down");
  CHECK((down.n == 8192 && down.k == 28672 / 8));
  const Kernel& fa = find(lk.f, "flash_attn_fwd");
  CHECK(fa.kind == KernelKind::attention_fwd);
  CHECK((fa.batch == 2 && fa.heads == 8 && fa.kv_heads == 1 && fa.seq_q == 2048 && fa.seq_kv == 4096 &&
         fa.head_dim == 128 && fa.flash && fa.causal));
  // B runs in reverse: the last F op's backward comes first.
  CHECK(std::string(lk.b.front().name) == "residual_add_bwd");
  CHECK(std::string(lk.b.back().name) == "rmsnorm_bwd");
}

TEST_CASE("flash vs materialised attention bytes; fused vs unfused memory kernels") {
  const ModelSpec m = fx::gpt_175b();
  const LayerKernels flash = layer_kernels(m, 0, shape(8, 1, 2048, true, true));
  const LayerKernels mat = layer_kernels(m, 0, shape(8, 1, 2048, false, true));
  const LayerKernels unf = layer_kernels(m, 0, shape(8, 1, 2048, false, false));
  // Materialised scores: E = b*heads*s^2 elements per rank; fused forward touches
  // 13 bytes/element (QK^T write 2, softmax r/w 4, dropout r/w + mask 5, attn*V read 2).
  const double E = 1.0 * 12 * 2048 * 2048;
  double score_bytes = 0;
  for (const Kernel& k : mat.f)
    if (k.kind == KernelKind::memory && (std::string(k.name) == "scale_mask_softmax" ||
                                         std::string(k.name) == "attn_dropout"))
      score_bytes += k.bytes;
  CHECK(score_bytes == 9 * E);
  CHECK(find(mat.f, "attn_qk").bytes > 2 * E);
  CHECK(find(mat.f, "attn_qk").flash == false);
  CHECK(total_bytes(mat.f) > total_bytes(flash.f) + 12 * E);
  CHECK(total_bytes(unf.f) > total_bytes(mat.f));
  CHECK(launches(unf.f) > launches(mat.f));
  // Llama: unfused RMSNorm is 5 kernels, SwiGLU 2, RoPE 5 per tensor (q and k).
  const ModelSpec l = fx::llama3_8b();
  const LayerKernels lf = layer_kernels(l, 0, shape(1, 1, 4096, true, true));
  const LayerKernels lu = layer_kernels(l, 0, shape(1, 1, 4096, true, false));
  CHECK(launches(lu.f) - launches(lf.f) == 2 * (5 - 1) + (2 - 1) + 2 * (5 - 1));
}

TEST_CASE("recompute sets: selective = attention core, full = all of F") {
  const ModelSpec m = fx::gpt_175b();
  RankShape r = shape(8, 1, 2048, false, true);
  r.recompute = Recompute::selective;
  LayerKernels lk = layer_kernels(m, 0, r);
  // Korthikanti eq. 8: the recompute adds QK^T and attn*V: 4 b s^2 h per layer (full model), /tp per rank.
  CHECK(compute_flops(lk.r) * 8 == doctest::Approx(4.0 * 2048 * 2048 * 12288).epsilon(1e-12));
  CHECK(compute_flops(lk.r) * 8 ==
        doctest::Approx(2048 * recompute_flops_per_token(m, 2048, Recompute::selective) / 96).epsilon(1e-12));
  for (const Kernel& k : lk.r) CHECK((k.kind != KernelKind::gemm));   // core only: no projection GEMMs
  r.recompute = Recompute::full;
  lk = layer_kernels(m, 0, r);
  CHECK(lk.r.size() == lk.f.size());
  r.recompute = Recompute::none;
  CHECK(layer_kernels(m, 0, r).r.empty());
}

TEST_CASE("embedding and head kernels") {
  const ModelSpec m = fx::llama3_8b();
  const LayerKernels h = head_kernels(m, shape(4, 1, 8192));
  const Kernel& lm = find(h.f, "lm_head");
  CHECK((lm.m == 8192 && lm.n == 128256 / 4 && lm.k == 4096));
  CHECK(compute_flops(h.f) * 4 == logits_flops_forward(m, 8192));
  CHECK(compute_flops(h.b) * 4 == logits_flops_forward(m, 8192));
  CHECK(compute_flops(h.w) * 4 == logits_flops_forward(m, 8192));
  const LayerKernels e = embedding_kernels(m, shape(4, 1, 8192));
  CHECK(!e.f.empty());
  CHECK(!e.w.empty());
}

TEST_CASE("layer_comm: TP, EP, CP, PP bytes") {
  const ModelSpec m = fx::llama2_70b();
  RankShape r = shape(8, 2, 4096);
  LayerComm c = layer_comm(m, 0, r);
  CHECK(c.tp_collectives == 4);   // SP: 2 all-gathers + 2 reduce-scatters per pass
  CHECK(c.tp_bytes == 2.0 * 4096 * 8192 * 2);
  CHECK(c.tp_gather_bytes == c.tp_bytes);   // bf16
  CHECK(c.pp_bytes == 2.0 * 4096 * 8192 * 2 / 8);
  {  // Transformer Engine's per-tensor fp8 recipes gather the quantised tensor: 1 byte per element; MXFP8 bf16
    RankShape f = r;
    f.fp8 = true;
    CHECK(layer_comm(m, 0, f).tp_gather_bytes == 2.0 * 4096 * 8192);
    CHECK(layer_comm(m, 0, f).tp_bytes == 2.0 * 4096 * 8192 * 2);   // the reduce-scatters stay bf16
    f.fp8_recipe = mfusim::config::Fp8Recipe::mxfp8;
    CHECK(layer_comm(m, 0, f).tp_gather_bytes == 2.0 * 4096 * 8192 * 2);
  }
  CHECK(c.ep_all_to_all_bytes == 0);
  r.sequence_parallel = false;
  r.cp = 2;
  c = layer_comm(m, 0, r);
  CHECK(c.tp_collectives == 2);
  CHECK(c.tp_bytes == 2.0 * 2048 * 8192 * 2);
  CHECK(c.cp_bytes == 2.0 * 2048 * 1 * 256 * 2);   // K and V of 8/8 kv heads
  CHECK(layer_comm(m, 0, shape(1, 1, 4096)).tp_collectives == 0);
  RankShape re = shape(1, 1, 4096);
  re.ep = 8;
  CHECK(layer_comm(fx::mixtral_8x7b(), 0, re).ep_all_to_all_bytes == 4096.0 * 2 * 4096 * 2);
}

TEST_CASE("fp8 recipe: a cast-transpose per fp8 linear (x forward, dy backward), attention and LM head bf16") {
  const ModelSpec m = fx::llama3_8b();
  RankShape r = shape(1, 1, 8192);
  const LayerKernels b16 = layer_kernels(m, 0, r);
  r.fp8 = true;
  const LayerKernels f8 = layer_kernels(m, 0, r);
  // Four fp8 linears (qkv, attn_out, mlp_up, mlp_down). Delayed scaling on Hopper: the inputs of attn_out and
  // mlp_down get a cast-transpose; those of qkv and mlp_up come from a LayerNormLinear's norm, which writes fp8
  // itself (TE's fully fused norm), so only their transposed copy is a kernel. Every dy gets a cast-transpose.
  int fx_n = 0, fdy_n = 0, tx_n = 0;
  double fx_bytes = 0, fdy_bytes = 0, tx_bytes = 0;
  for (const Kernel& k : f8.f) {
    if (std::string(k.name) == "fp8_cast_x") ++fx_n, fx_bytes += k.bytes;
    if (std::string(k.name) == "fp8_transpose_x") ++tx_n, tx_bytes += k.bytes;
  }
  for (const Kernel& k : f8.b)
    if (std::string(k.name) == "fp8_cast_dy") ++fdy_n, fdy_bytes += k.bytes;
  CHECK(fx_n == 2);
  CHECK(tx_n == 2);
  CHECK(fdy_n == 4);
  const double T = 8192, h = 4096, qkv = (32 + 2 * 8) * 128.0, up = 2 * 14336.0, ffn = 14336;
  // Read bf16 once (2 B), write fp8 twice (1 + 1 B): 4 B per element of the quantised input.
  CHECK(fx_bytes == doctest::Approx(4 * T * (h + ffn)).scale(0));     // inputs of attn_out, mlp_down
  CHECK(tx_bytes == doctest::Approx(2 * T * (h + h)).scale(0));       // the norms' fp8 outputs transposed
  CHECK(fdy_bytes == doctest::Approx(4 * T * (qkv + h + up + h)).scale(0));  // output gradients
  // The norms before qkv and mlp_up write 1 byte per element instead of 2.
  double norm16 = 0, norm8 = 0;
  for (const Kernel& k : b16.f)
    if (std::string(k.name) == "rmsnorm") norm16 += k.bytes;
  for (const Kernel& k : f8.f)
    if (std::string(k.name) == "rmsnorm") norm8 += k.bytes;
  CHECK(norm16 - norm8 == doctest::Approx(2 * T * h).scale(0));
  // The quantise kernels run right before the GEMM that consumes them.
  for (std::size_t i = 0; i + 1 < f8.f.size(); ++i)
    if (std::string(f8.f[i].name) == "fp8_cast_x" || std::string(f8.f[i].name) == "fp8_transpose_x")
      CHECK(f8.f[i + 1].kind == KernelKind::gemm);
  for (std::size_t i = 0; i + 1 < f8.b.size(); ++i)
    if (std::string(f8.b[i].name) == "fp8_cast_dy") CHECK(std::string(f8.b[i + 1].name).find("_dgrad") != std::string::npos);
  // Same FLOPs; fp8 GEMM operands are 1 byte.
  CHECK(compute_flops(f8.f) == doctest::Approx(compute_flops(b16.f)));
  CHECK(find(f8.f, "mlp_up").bytes == doctest::Approx(T * h + h * up + 2 * T * up));
  // Attention stays bf16 unless fp8_attention; the linears are fp8.
  CHECK(find(f8.f, "flash_attn_fwd").keep_bf16);
  CHECK(find(f8.b, "flash_attn_bwd").keep_bf16);
  CHECK_FALSE(find(f8.f, "qkv").keep_bf16);
  r.fp8_attention = true;
  CHECK_FALSE(find(layer_kernels(m, 0, r).f, "flash_attn_fwd").keep_bf16);
  const LayerKernels head = head_kernels(m, r);
  CHECK(find(head.f, "lm_head").keep_bf16);
  CHECK(find(head.w, "lm_head_wgrad").keep_bf16);
  for (const Kernel& k : head.f) CHECK(std::string(k.name) != "fp8_cast_x");
  // bf16 scenario: unchanged list, nothing marked.
  for (const Kernel& k : b16.f) CHECK(std::string(k.name).rfind("fp8_", 0) != 0);
}

TEST_CASE("fp8 recipes: current scaling's amax pass, Blackwell's any-layout casts, MXFP8, sequence-parallel gathers") {
  const ModelSpec m = fx::llama3_8b();
  const double T = 8192, h = 4096, qkv = (32 + 2 * 8) * 128.0, up = 2 * 14336.0, ffn = 14336;
  auto bytes = [](const std::vector<Kernel>& ks, const char* name) {
    double b = 0;
    for (const Kernel& k : ks)
      if (std::string(k.name) == name) b += k.bytes;
    return b;
  };
  auto layer = [&](config::Fp8Recipe recipe, bool blackwell, int tp) {
    RankShape r = shape(tp, 1, 8192);
    r.fp8 = true;
    r.fp8_recipe = recipe;
    r.fp8_any_layout = blackwell;
    return layer_kernels(m, 0, r);
  };
  SUBCASE("current scaling on Hopper: an amax read of each input the norm does not take, then the cast-transpose") {
    const LayerKernels cs = layer(config::Fp8Recipe::current, false, 1);
    CHECK(bytes(cs.f, "fp8_amax_x") == doctest::Approx(2 * T * (h + ffn)).scale(0));   // attn_out, mlp_down
    CHECK(bytes(cs.f, "fp8_cast_x") == doctest::Approx(4 * T * (h + h + h + ffn)).scale(0));
    CHECK(bytes(cs.b, "fp8_amax_dy") == doctest::Approx(2 * T * (qkv + h + up + h)).scale(0));
    CHECK(bytes(cs.f, "fp8_transpose_x") == 0);
  }
  SUBCASE("Blackwell: the per-tensor casts write no transposed copy") {
    const LayerKernels dl = layer(config::Fp8Recipe::tensorwise, true, 1);
    CHECK(bytes(dl.f, "fp8_cast_x") == doctest::Approx(3 * T * (h + ffn)).scale(0));
    CHECK(bytes(dl.f, "fp8_transpose_x") == 0);
    CHECK(bytes(dl.b, "fp8_cast_dy") == doctest::Approx(3 * T * (qkv + h + up + h)).scale(0));
    const LayerKernels cs = layer(config::Fp8Recipe::current, true, 1);
    CHECK(bytes(cs.f, "fp8_cast_x") == doctest::Approx(3 * T * (h + h + h + ffn)).scale(0));
  }
  SUBCASE("MXFP8: both copies in one pass from every input, its GEMMs marked") {
    const LayerKernels mx = layer(config::Fp8Recipe::mxfp8, true, 1);
    CHECK(bytes(mx.f, "fp8_cast_x") == doctest::Approx((4 + 2.0 / 32) * T * (h + h + h + ffn)).scale(0));
    CHECK(bytes(mx.f, "fp8_amax_x") == 0);
    CHECK(find(mx.f, "qkv").mxfp8);
    CHECK(find(mx.b, "mlp_down_dgrad").mxfp8);
    CHECK_FALSE(find(layer(config::Fp8Recipe::tensorwise, true, 1).f, "qkv").mxfp8);
    // under sequence parallelism the gathered tensors are quantised on their local rows, both copies gathered
    const LayerKernels sp = layer(config::Fp8Recipe::mxfp8, true, 4);
    CHECK(bytes(sp.f, "fp8_cast_x") ==
          doctest::Approx((4 + 2.0 / 32) * (T / 4 * (h + h) + T * (h / 4 + ffn / 4))).scale(0));
    CHECK(bytes(sp.f, "fp8_transpose_x") == 0);
  }
  SUBCASE("sequence parallelism: gathered inputs quantised on the local rows, transposed after the gather") {
    const int tp = 4;
    const LayerKernels cs = layer(config::Fp8Recipe::current, false, tp);
    // qkv and mlp_up inputs: cast on T / tp rows (the norm took the amax), transposed on T rows after the gather;
    // attn_out and mlp_down inputs (not gathered): amax and cast-transpose on their T rows.
    CHECK(bytes(cs.f, "fp8_cast_x") == doctest::Approx(3 * (T / tp) * (h + h) + 4 * T * (h / tp + ffn / tp)).scale(0));
    CHECK(bytes(cs.f, "fp8_transpose_x") == doctest::Approx(2 * T * (h + h)).scale(0));
    // row-parallel output gradients (attn_out, mlp_down): gathered; column-parallel (qkv, mlp_up): local.
    CHECK(bytes(cs.b, "fp8_amax_dy") == doctest::Approx(2 * (T / tp) * (h + h) + 2 * T * (qkv / tp + up / tp)).scale(0));
    CHECK(bytes(cs.b, "fp8_transpose_dy") == doctest::Approx(2 * T * (h + h)).scale(0));
  }
}
