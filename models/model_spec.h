#pragma once
// The shape of a decoder-only transformer, as read from models/*.toml or a
// Hugging Face config.json. Plain data: no parsing here (config/ loads it).
#include <cstdint>
#include <optional>
#include <string>

namespace mfusim::models {

// The MLP activation. squared_relu (Nemotron-3/4, relu(x)^2): two MLP matrices like GELU, no fused kernel in
// Megatron-Core (bias_activation_fusion fuses GELU and SwiGLU only); NeMo 1 torch.compile's it (one kernel each
// way), plain PyTorch runs it eagerly (run 56, models::detail::activation_kernels).
enum class Activation { swiglu, gelu, squared_relu };
inline const char* to_string(Activation a) {
  return a == Activation::swiglu ? "swiglu" : a == Activation::gelu ? "gelu" : "squared_relu";
}

// Mixture of experts (Mixtral, DeepSeek-V3). `dense_layers` leading layers use
// the dense MLP of width ModelSpec::ffn_hidden; the rest route each token to
// `top_k` of `experts` experts of width `expert_ffn_hidden`, plus
// `shared_experts` always-active experts of the same width.
struct MoeSpec {
  int experts = 0;
  int top_k = 0;
  std::int64_t expert_ffn_hidden = 0;
  int shared_experts = 0;
  int dense_layers = 0;
};

// Multi-head latent attention (DeepSeek-V2/V3). When present, attention
// parameters and FLOPs follow MLA instead of GQA.
struct MlaSpec {
  std::int64_t q_lora_rank = 0;       // 0: no query compression
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
};

// Invariants (checked by the loader): layers, hidden, heads, kv_heads, vocab > 0;
// kv_heads divides heads; head_dim > 0 (defaults to hidden / heads).
struct ModelSpec {
  std::string name;
  int layers = 0;
  std::int64_t hidden = 0;
  std::int64_t ffn_hidden = 0;     // dense MLP width (per gate for SwiGLU)
  int heads = 0;
  int kv_heads = 0;
  std::int64_t head_dim = 0;       // hidden / heads unless given
  std::int64_t vocab = 0;
  Activation activation = Activation::swiglu;
  bool tied_embeddings = false;
  // The block's conventions where a model departs from its activation's family (models/conventions.h:
  // GELU models are GPT-style with linear biases, dropout, LayerNorm and learned positions; SwiGLU models
  // Llama-style with none of those and RoPE; squared ReLU as SwiGLU's). Unset: the family's. Nemotron-4
  // (squared ReLU) states LayerNorm and RoPE, no biases and no dropout.
  std::optional<bool> bias;      // model file `bias`: biases on the linear layers
  std::optional<bool> dropout;   // `dropout`: hidden and attention dropout in training
  std::optional<bool> rope;      // `rope`: rotary position embeddings (else learned positions or none)
  std::optional<bool> layernorm; // `norm = "layernorm"` (weight and bias) or "rmsnorm" (weight only)
  std::optional<MoeSpec> moe;
  std::optional<MlaSpec> mla;
  // Multi-token prediction depth (DeepSeek-V3 §2.2): each MTP module is one more transformer
  // block (of the last layer's kind) and a projection of [RMSNorm(h); RMSNorm(emb)] (2 hidden)
  // to hidden, on the last pipeline stage, sharing the embedding and the output head (which it
  // runs once more, with its own loss). 0 = none.
  int mtp_depth = 0;

  bool is_moe() const { return moe.has_value() && moe->experts > 0; }
  // Whether layer `i` (0-based) is an MoE layer.
  bool is_moe_layer(int i) const { return is_moe() && i >= moe->dense_layers; }
};

}  // namespace mfusim::models
