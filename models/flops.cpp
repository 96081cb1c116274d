// FLOP accounting: per layer and pass, logits, model FLOPs per token (MFU) and the extra
// FLOPs of recompute (HFU). Formulas and their sources: docs/accounting.md.
#include "models/flops.h"

#include <algorithm>

#include "models/conventions.h"
#include "models/params.h"

namespace mfusim::models {

using namespace detail;

namespace {

// Forward FLOPs per token of one layer.
struct TokenFlops {
  double matmul = 0;      // every GEMM, router included
  double router = 0;      // the router GEMM alone
  double attention = 0;   // QK^T and attn*V over the full sequence
};

TokenFlops layer_token_flops(const ModelSpec& m, int layer, double seq) {
  const double h = static_cast<double>(m.hidden);
  const double a = m.heads;
  TokenFlops t;
  if (m.mla) {
    const auto& l = *m.mla;
    const double qk = qk_head_dim(m);
    const double q = l.q_lora_rank > 0 ? h * l.q_lora_rank + static_cast<double>(l.q_lora_rank) * a * qk : h * a * qk;
    const double kv = h * (l.kv_lora_rank + l.qk_rope_head_dim) +
                      static_cast<double>(l.kv_lora_rank) * a * (l.qk_nope_head_dim + l.v_head_dim);
    t.matmul += 2 * (q + kv + a * l.v_head_dim * h);
  } else {
    const double d = head_dim(m), g = m.kv_heads;
    t.matmul += 2 * (h * a * d + 2 * h * g * d + a * d * h);
  }
  t.attention = 2 * seq * a * (qk_head_dim(m) + v_head_dim(m));
  if (m.is_moe_layer(layer)) {
    const auto& e = *m.moe;
    const double expert = 2 * 3.0 * h * static_cast<double>(e.expert_ffn_hidden);
    t.router = 2 * h * e.experts;
    t.matmul += t.router + (e.top_k + e.shared_experts) * expert;
  } else {
    t.matmul += 2 * gated(m) * h * static_cast<double>(m.ffn_hidden);
  }
  return t;
}

}  // namespace

LayerFlops layer_flops(const ModelSpec& m, int layer, std::int64_t micro_batch, std::int64_t seq_len) {
  const double tokens = static_cast<double>(micro_batch) * static_cast<double>(seq_len);
  const TokenFlops t = layer_token_flops(m, layer, static_cast<double>(seq_len));
  LayerFlops l;
  l.f = {tokens * t.matmul, tokens * t.attention};
  l.b = {tokens * t.matmul, 2 * tokens * t.attention};   // dgrad GEMMs; dQ,dK,dV,dP
  l.w = {tokens * t.matmul, 0};                          // wgrad GEMMs
  return l;
}

double logits_flops_forward(const ModelSpec& m, std::int64_t tokens) {
  return 2.0 * static_cast<double>(tokens) * static_cast<double>(m.hidden) * static_cast<double>(m.vocab);
}

double model_flops_per_token(const ModelSpec& m, std::int64_t seq_len, bool with_attention) {
  // MTP modules (mtp_depth, DeepSeek-V3 §2.2; Megatron-Core counts them too): each its block, its
  // projection 2h -> h and the shared output head once more.
  const double d = std::max(0, m.mtp_depth), h = static_cast<double>(m.hidden);
  if (!with_attention) {
    const ParamCount c = count_params(m);
    return 6.0 * (c.activated + (d > 0 ? c.mtp_active + d * static_cast<double>(m.vocab) * h : 0.0));
  }
  double per_token = 3.0 * logits_flops_forward(m, 1);
  for (int i = 0; i < m.layers; ++i) {
    const TokenFlops t = layer_token_flops(m, i, static_cast<double>(seq_len));
    per_token += 3.0 * (t.matmul - t.router + t.attention);   // Megatron-Core leaves the router out
  }
  if (d > 0) {
    const TokenFlops t = layer_token_flops(m, m.layers - 1, static_cast<double>(seq_len));
    per_token += d * 3.0 * (t.matmul - t.router + t.attention + 2.0 * 2.0 * h * h + logits_flops_forward(m, 1));
  }
  return per_token;
}

double recompute_flops_per_token(const ModelSpec& m, std::int64_t seq_len, Recompute r, const RankShape* shape) {
  double extra = 0;
  if (r == Recompute::none) return 0;
  for (int i = 0; i < m.layers; ++i) {
    if (shape && !checkpointed(*shape, i)) continue;
    const TokenFlops t = layer_token_flops(m, i, static_cast<double>(seq_len));
    if (r == Recompute::selective_op) {
      // torchtitan's per-op SAC: wk, wo and w3 (GELU: fc2) again; MLA / MoE: half the GEMMs.
      if (m.mla || m.is_moe_layer(i)) {
        extra += t.matmul / 2;
      } else {
        const double h = static_cast<double>(m.hidden), d = head_dim(m), f = static_cast<double>(m.ffn_hidden);
        extra += 2 * (h * m.kv_heads * d + m.heads * d * h + h * f);
      }
      continue;
    }
    extra += r == Recompute::selective ? t.attention : t.matmul + t.attention;
  }
  return extra;
}

}  // namespace mfusim::models
