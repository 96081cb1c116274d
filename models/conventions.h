#pragma once
// The model conventions and per-head widths every accounting file shares (parameters,
// FLOPs, kernels, memory); not for callers outside models/. Formulas and their sources:
// docs/accounting.md. Conventions used throughout:
//  * GELU models follow GPT/Megatron: LayerNorm (weight + bias), linear biases,
//    dropout after attention and MLP (and on attention probabilities).
//  * SwiGLU models follow Llama/Mixtral/DeepSeek: RMSNorm (weight only), no
//    biases, no dropout, RoPE.
//  * A model file may state each of these apart (bias, dropout, rope, norm), as
//    Nemotron-4 does (squared ReLU with LayerNorm and RoPE, no biases or dropout).
//  * FLOPs count a multiply-add as 2; attention counts the full s x s product
//    (Megatron convention, not causal-halved). Kernels carry the same counts;
//    the cost model decides what causal masking or FlashAttention's backward
//    recompute cost in time.
#include <algorithm>

#include "models/model_spec.h"

namespace mfusim::models::detail {

inline bool gpt_style(const ModelSpec& m) { return m.activation == Activation::gelu; }
// Each convention as the model file states it (ModelSpec bias, dropout, rope, layernorm), else its family's.
inline bool has_bias(const ModelSpec& m) { return m.bias.value_or(gpt_style(m)); }
inline bool has_dropout(const ModelSpec& m) { return m.dropout.value_or(gpt_style(m)); }
inline bool has_rope(const ModelSpec& m) { return m.rope.value_or(!gpt_style(m)); }
inline bool has_layernorm(const ModelSpec& m) { return m.layernorm.value_or(gpt_style(m)); }
// Parameters of one norm over the hidden width: LayerNorm's weight and bias, RMSNorm's weight.
inline double norm_params(const ModelSpec& m) { return (has_layernorm(m) ? 2.0 : 1.0) * static_cast<double>(m.hidden); }
inline double gated(const ModelSpec& m) { return m.activation == Activation::swiglu ? 3.0 : 2.0; }

inline double head_dim(const ModelSpec& m) {
  return static_cast<double>(m.head_dim > 0 ? m.head_dim : m.hidden / m.heads);
}
// Per-head widths of the attention core: query/key and value.
inline double qk_head_dim(const ModelSpec& m) {
  return m.mla ? static_cast<double>(m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim) : head_dim(m);
}
inline double v_head_dim(const ModelSpec& m) { return m.mla ? static_cast<double>(m.mla->v_head_dim) : head_dim(m); }
// Heads K and V have in the attention core (MLA: every query head has its own).
inline double core_kv_heads(const ModelSpec& m) { return m.mla ? m.heads : m.kv_heads; }
// K/V heads per rank under tensor parallelism: kv / tp, at least one.
inline double kv_heads_per_rank(double kv, int tp) { return std::max(1.0, kv / tp); }

}  // namespace mfusim::models::detail
