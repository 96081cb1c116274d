// Parameter counts: one layer's parameters by how they are distributed over ranks
// (layer_parts, also read by the memory accounting) and the model's totals.
// Formulas and their sources: docs/accounting.md.
#include "models/params.h"

#include <algorithm>

#include "models/conventions.h"

namespace mfusim::models {

using namespace detail;

namespace detail {

ParamParts layer_parts(const ModelSpec& m, int layer) {
  const double h = static_cast<double>(m.hidden);
  const double a = m.heads;
  ParamParts p;
  // attention
  if (m.mla) {
    const auto& l = *m.mla;
    const double qk = qk_head_dim(m);
    if (l.q_lora_rank > 0) {
      p.replicated += h * l.q_lora_rank + l.q_lora_rank;             // q down + q norm
      p.tp_sharded += static_cast<double>(l.q_lora_rank) * a * qk;   // q up
    } else {
      p.tp_sharded += h * a * qk;
    }
    p.replicated += h * (l.kv_lora_rank + l.qk_rope_head_dim) + l.kv_lora_rank;   // kv down (+rope key) + kv norm
    p.tp_sharded += static_cast<double>(l.kv_lora_rank) * a * (l.qk_nope_head_dim + l.v_head_dim);
    p.tp_sharded += a * l.v_head_dim * h;                                          // o
  } else {
    const double d = head_dim(m), g = m.kv_heads;
    p.tp_sharded += h * a * d + 2 * h * g * d + a * d * h;
    if (has_bias(m)) {
      p.tp_sharded += a * d + 2 * g * d;   // qkv bias (column-parallel)
      p.replicated += h;                   // o bias (row-parallel)
    }
  }
  // norms: two per layer
  p.replicated += 2 * norm_params(m);
  // MLP
  if (m.is_moe_layer(layer)) {
    const auto& e = *m.moe;
    const double expert = 3.0 * h * static_cast<double>(e.expert_ffn_hidden);   // experts are gated
    p.router = static_cast<double>(e.experts) * h;
    p.replicated += p.router;
    p.tp_sharded += e.shared_experts * expert;
    p.experts = e.experts * expert;
    p.experts_active = e.top_k * expert;
  } else {
    const double f = static_cast<double>(m.ffn_hidden);
    p.tp_sharded += gated(m) * h * f;
    if (has_bias(m)) {
      p.tp_sharded += (gated(m) - 1.0) * f;   // fc1 bias (both halves of a gated fc1)
      p.replicated += h;   // fc2 bias
    }
  }
  return p;
}

}  // namespace detail

double layer_params(const ModelSpec& m, int layer) { return layer_parts(m, layer).total(); }
double layer_params_active(const ModelSpec& m, int layer) { return layer_parts(m, layer).active(); }

ParamParts detail::mtp_parts(const ModelSpec& m) {
  ParamParts p;
  if (m.mtp_depth <= 0 || m.layers <= 0) return p;
  const double h = static_cast<double>(m.hidden);
  const ParamParts block = layer_parts(m, m.layers - 1);
  const double d = m.mtp_depth;
  p.tp_sharded = d * (block.tp_sharded + 2 * h * h);
  p.replicated = d * (block.replicated + 2 * h);
  p.experts = d * block.experts;
  p.experts_active = d * block.experts_active;
  p.router = d * block.router;
  return p;
}

ParamCount count_params(const ModelSpec& m) {
  ParamCount c;
  const double h = static_cast<double>(m.hidden);
  c.embedding = static_cast<double>(m.vocab) * h;
  c.lm_head = m.tied_embeddings ? 0 : c.embedding;
  c.final_norm = norm_params(m);
  if (!m.is_moe() || m.moe->dense_layers > 0) c.per_layer_dense = layer_params(m, 0);
  if (m.is_moe()) {
    c.per_layer_moe = layer_params(m, m.moe->dense_layers);
    c.per_layer_moe_active = layer_params_active(m, m.moe->dense_layers);
  }
  const int dense = m.is_moe() ? std::min(m.moe->dense_layers, m.layers) : m.layers;
  const int moe = m.layers - dense;
  const double shared = c.embedding + c.lm_head + c.final_norm;
  c.total = shared + dense * c.per_layer_dense + moe * c.per_layer_moe;
  c.activated = shared + dense * c.per_layer_dense + moe * c.per_layer_moe_active;
  const ParamParts mtp = detail::mtp_parts(m);
  c.mtp = mtp.total();
  c.mtp_active = mtp.active();
  return c;
}

}  // namespace mfusim::models
