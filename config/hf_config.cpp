// Hugging Face config.json (transformers' PretrainedConfig) to ModelSpec.
#include <set>
#include <type_traits>

#include "config/read_context.h"

namespace mfusim::config::detail {

namespace fs = std::filesystem;
using Kind = Value::Kind;

models::ModelSpec read_hf_config(Ctx& ctx, const Value& root, const std::string& default_name) {
  models::ModelSpec m;
  m.name = default_name;
  if (!root.is_table()) {
    ctx.error(root.pos, "a Hugging Face config.json must be a JSON object");
    return m;
  }
  const std::string p = "model.";
  std::string model_type;
  if (const Value* v = root.find("model_type"); v && v->kind == Kind::string) model_type = v->str;
  std::string archs;
  if (const Value* v = root.find("architectures"); v && v->kind == Kind::array)
    for (const auto& [k, a] : v->items)
      if (a.kind == Kind::string) archs += (archs.empty() ? "" : ",") + a.str;
  const Pos refuse_pos = root.find("model_type") ? root.find("model_type")->pos : root.pos;
  auto refuse = [&](const std::string& why) {
    ctx.error(refuse_pos, "cannot model this Hugging Face config (model_type " + quote(model_type) +
                              (archs.empty() ? "" : ", architectures " + archs) + "): " + why +
                              "; mfusim simulates decoder-only transformers with full attention");
  };
  static const std::set<std::string> kEncDec = {"t5", "mt5", "umt5", "bart", "mbart", "marian", "pegasus",
                                                "whisper", "encoder-decoder", "encoder_decoder", "longt5",
                                                "switch_transformers", "prophetnet", "led", "blenderbot"};
  static const std::set<std::string> kEncoder = {"bert", "roberta", "deberta", "deberta-v2", "electra",
                                                 "albert", "distilbert", "xlm-roberta", "vit", "clip"};
  static const std::set<std::string> kSsm = {"mamba", "mamba2", "falcon_mamba", "jamba", "rwkv", "rwkv5", "rwkv6",
                                             "zamba", "zamba2", "recurrent_gemma", "xlstm", "bamba", "falcon_h1"};
  bool enc_dec = false;
  if (const Value* v = root.find("is_encoder_decoder"); v && v->kind == Kind::boolean && v->b) enc_dec = true;
  if (kEncDec.count(model_type) || enc_dec) {
    refuse("encoder-decoder models are not supported");
    return m;
  }
  if (kEncoder.count(model_type)) {
    refuse("encoder-only models are not supported");
    return m;
  }
  if (kSsm.count(model_type) || archs.find("Mamba") != std::string::npos || archs.find("Rwkv") != std::string::npos) {
    refuse("state-space / recurrent layers (Mamba, RWKV) are not supported");
    return m;
  }
  if (const Value* sw = root.find("sliding_window"); sw && sw->kind == Kind::integer && sw->i > 0) {
    bool use = true;
    if (const Value* u = root.find("use_sliding_window"); u && u->kind == Kind::boolean) use = u->b;
    static const std::set<std::string> kInterleaved = {"gemma2", "gemma3", "gemma3_text", "cohere2"};
    if (use && !kInterleaved.count(model_type)) {
      refuse("every layer uses sliding-window attention (sliding_window = " + std::to_string(sw->i) + ")");
      return m;
    }
  }

  // Each mfusim field from the first HF key present, positions recorded under model.*.
  auto int_field = [&](const std::string& field, std::initializer_list<const char*> keys, auto& out) -> bool {
    for (const char* k : keys) {
      const Value* v = root.find(k);
      if (!v || v->kind == Kind::null) continue;
      ctx.where[p + field] = v->key_pos;
      if (v->kind != Kind::integer) {
        ctx.type_error(*v, k, "an integer");
        return false;
      }
      if (v->i < 0 || v->i > INT_MAX) {
        ctx.error(v->pos, std::string("'") + k + "' = " + std::to_string(v->i) + " is out of range");
        return false;
      }
      out = static_cast<std::remove_reference_t<decltype(out)>>(v->i);
      return true;
    }
    return false;
  };
  auto required = [&](const std::string& field, std::initializer_list<const char*> keys, auto& out) {
    if (!int_field(field, keys, out)) {
      bool present = false;
      for (const char* k : keys) present = present || (root.find(k) && root.find(k)->kind != Kind::null);
      if (!present) ctx.error(root.pos, "config.json has no '" + std::string(*keys.begin()) + "'");
    }
  };
  required("hidden", {"hidden_size", "n_embd", "d_model"}, m.hidden);
  required("layers", {"num_hidden_layers", "n_layer", "num_layers"}, m.layers);
  required("heads", {"num_attention_heads", "n_head", "num_heads"}, m.heads);
  required("vocab", {"vocab_size"}, m.vocab);
  if (!int_field("ffn_hidden", {"intermediate_size", "n_inner", "ffn_dim"}, m.ffn_hidden)) m.ffn_hidden = 4 * m.hidden;
  if (!int_field("kv_heads", {"num_key_value_heads", "multi_query_group_num"}, m.kv_heads)) m.kv_heads = m.heads;
  int_field("head_dim", {"head_dim"}, m.head_dim);

  // A present key of the wrong type is an error, never skipped for the default.
  std::string act = "silu";
  bool act_typed = true;
  for (const char* k : {"hidden_act", "activation_function"}) {
    const Value* v = root.find(k);
    if (!v || v->kind == Kind::null) continue;
    if (v->kind == Kind::string) act = v->str;
    else act_typed = ctx.type_error(*v, k, "a string (an activation name such as \"silu\")");
    break;
  }
  if (act_typed) {
    if (act == "silu" || act == "swish" || act == "swiglu") {
      m.activation = models::Activation::swiglu;
    } else if (act.rfind("gelu", 0) == 0) {
      m.activation = models::Activation::gelu;
    } else if (act == "relu2") {   // Hugging Face's Nemotron: ACT2FN["relu2"], squared ReLU
      m.activation = models::Activation::squared_relu;
    } else {
      const Value* v = root.find("hidden_act") ? root.find("hidden_act") : root.find("activation_function");
      ctx.error(v ? v->pos : root.pos, "unsupported activation " + quote(act) + " (supported: silu -> swiglu, gelu*, relu2 -> squared_relu)");
    }
  }
  static const std::set<std::string> kTiedByDefault = {"gpt2", "opt", "bloom", "gemma", "gemma2", "gemma3",
                                                       "gemma3_text", "gpt_bigcode", "phi"};
  m.tied_embeddings = kTiedByDefault.count(model_type) > 0;
  if (const Value* v = root.find("tie_word_embeddings"); v && v->kind == Kind::boolean) m.tied_embeddings = v->b;
  else if (v && v->kind != Kind::null) ctx.type_error(*v, "tie_word_embeddings", "a boolean (true or false)");

  // MoE: Mixtral (num_local_experts), DeepSeek (n_routed_experts), Qwen-MoE (num_experts).
  models::MoeSpec e;
  bool moe = int_field("moe.experts", {"num_local_experts", "n_routed_experts", "num_experts"}, e.experts) &&
             e.experts > 1;
  if (moe) {
    if (!int_field("moe.top_k", {"num_experts_per_tok", "moe_topk", "top_k"}, e.top_k)) {
      ctx.error(root.pos, "config.json has experts but no 'num_experts_per_tok'");
    }
    if (!int_field("moe.expert_ffn_hidden", {"moe_intermediate_size"}, e.expert_ffn_hidden))
      e.expert_ffn_hidden = m.ffn_hidden;
    int_field("moe.shared_experts", {"n_shared_experts"}, e.shared_experts);
    std::int64_t shared_width = 0;
    if (e.shared_experts == 0 && int_field("moe.shared_experts", {"shared_expert_intermediate_size"}, shared_width) &&
        e.expert_ffn_hidden > 0)
      e.shared_experts = static_cast<int>((shared_width + e.expert_ffn_hidden / 2) / e.expert_ffn_hidden);
    int_field("moe.dense_layers", {"first_k_dense_replace"}, e.dense_layers);
    m.moe = e;
  }
  // Multi-token prediction modules (DeepSeek-V3: num_nextn_predict_layers).
  int_field("mtp_depth", {"num_nextn_predict_layers"}, m.mtp_depth);
  // MLA: DeepSeek-V2/V3.
  if (const Value* v = root.find("kv_lora_rank"); v && v->kind != Kind::null) {
    models::MlaSpec a;
    int_field("mla.q_lora_rank", {"q_lora_rank"}, a.q_lora_rank);
    int_field("mla.kv_lora_rank", {"kv_lora_rank"}, a.kv_lora_rank);
    int_field("mla.qk_nope_head_dim", {"qk_nope_head_dim"}, a.qk_nope_head_dim);
    int_field("mla.qk_rope_head_dim", {"qk_rope_head_dim"}, a.qk_rope_head_dim);
    int_field("mla.v_head_dim", {"v_head_dim"}, a.v_head_dim);
    m.mla = a;
  }
  if (m.head_dim == 0 && m.heads > 0) m.head_dim = m.hidden / m.heads;
  return m;
}

}  // namespace mfusim::config::detail
