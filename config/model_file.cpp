// Model files: models/*.toml (or an inline [model] table) to ModelSpec; load_model.
#include <algorithm>

#include "config/read_context.h"

namespace mfusim::config::detail {

namespace fs = std::filesystem;
using Kind = Value::Kind;

namespace {

const std::vector<std::string> kModelKeys = {"name", "layers", "hidden", "ffn_hidden", "heads", "kv_heads",
                                             "head_dim", "vocab", "activation", "tied_embeddings", "moe", "mla",
                                             "mtp_depth", "bias", "dropout", "rope", "norm"};
const std::vector<std::string> kMoeKeys = {"experts", "top_k", "expert_ffn_hidden", "shared_experts", "dense_layers"};
const std::vector<std::string> kMlaKeys = {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                                           "v_head_dim"};

bool moe_table_has(const Value& model, const char* key) {
  const Value* moe = model.find("moe");
  return moe && moe->is_table() && moe->find(key);
}

}  // namespace

models::ModelSpec read_model_table(Ctx& ctx, const Value& t, const std::string& default_name) {
  const std::string p = "model.";
  models::ModelSpec m;
  m.name = default_name;
  ctx.check_keys(t, kModelKeys, p);
  ctx.read_string(t, "name", p, m.name);
  if (!ctx.read_int(t, "layers", p, m.layers) && !t.find("layers")) ctx.missing(t, "model.layers");
  if (!ctx.read_int(t, "hidden", p, m.hidden) && !t.find("hidden")) ctx.missing(t, "model.hidden");
  if (!ctx.read_int(t, "heads", p, m.heads) && !t.find("heads")) ctx.missing(t, "model.heads");
  if (!ctx.read_int(t, "vocab", p, m.vocab) && !t.find("vocab")) ctx.missing(t, "model.vocab");
  ctx.read_int(t, "ffn_hidden", p, m.ffn_hidden);
  if (!ctx.read_int(t, "kv_heads", p, m.kv_heads)) m.kv_heads = m.heads;
  ctx.read_int(t, "head_dim", p, m.head_dim);
  int act = ctx.read_enum(t, "activation", p, {"swiglu", "gelu", "squared_relu"});
  if (act == 1) m.activation = models::Activation::gelu;
  if (act == 2) m.activation = models::Activation::squared_relu;
  ctx.read_bool(t, "tied_embeddings", p, m.tied_embeddings);
  for (auto [key, field] : {std::pair<const char*, std::optional<bool>*>{"bias", &m.bias}, {"dropout", &m.dropout}, {"rope", &m.rope}}) {
    bool v = false;
    if (ctx.read_bool(t, key, p, v)) *field = v;
  }
  if (const int norm = ctx.read_enum(t, "norm", p, {"layernorm", "rmsnorm"}); norm >= 0) m.layernorm = norm == 0;
  ctx.read_int(t, "mtp_depth", p, m.mtp_depth);
  if (const Value* moe = ctx.read_table(t, "moe", p)) {
    const std::string q = "model.moe.";
    ctx.check_keys(*moe, kMoeKeys, q);
    models::MoeSpec e;
    if (!ctx.read_int(*moe, "experts", q, e.experts) && !moe->find("experts")) ctx.missing(*moe, "model.moe.experts");
    if (!ctx.read_int(*moe, "top_k", q, e.top_k) && !moe->find("top_k")) ctx.missing(*moe, "model.moe.top_k");
    if (!ctx.read_int(*moe, "expert_ffn_hidden", q, e.expert_ffn_hidden)) {
      e.expert_ffn_hidden = m.ffn_hidden;
      if (!moe->find("expert_ffn_hidden") && !t.find("ffn_hidden")) ctx.missing(*moe, "model.moe.expert_ffn_hidden");
    }
    ctx.read_int(*moe, "shared_experts", q, e.shared_experts);
    ctx.read_int(*moe, "dense_layers", q, e.dense_layers);
    m.moe = e;
  }
  if (!t.find("ffn_hidden") && !(m.moe && m.moe->dense_layers == 0 && moe_table_has(t, "expert_ffn_hidden")))
    ctx.missing(t, "model.ffn_hidden");
  if (m.moe && m.ffn_hidden == 0) m.ffn_hidden = m.moe->expert_ffn_hidden;
  if (const Value* mla = ctx.read_table(t, "mla", p)) {
    const std::string q = "model.mla.";
    ctx.check_keys(*mla, kMlaKeys, q);
    models::MlaSpec a;
    ctx.read_int(*mla, "q_lora_rank", q, a.q_lora_rank);
    if (!ctx.read_int(*mla, "kv_lora_rank", q, a.kv_lora_rank) && !mla->find("kv_lora_rank"))
      ctx.missing(*mla, "model.mla.kv_lora_rank");
    if (!ctx.read_int(*mla, "qk_nope_head_dim", q, a.qk_nope_head_dim) && !mla->find("qk_nope_head_dim"))
      ctx.missing(*mla, "model.mla.qk_nope_head_dim");
    if (!ctx.read_int(*mla, "qk_rope_head_dim", q, a.qk_rope_head_dim) && !mla->find("qk_rope_head_dim"))
      ctx.missing(*mla, "model.mla.qk_rope_head_dim");
    if (!ctx.read_int(*mla, "v_head_dim", q, a.v_head_dim) && !mla->find("v_head_dim"))
      ctx.missing(*mla, "model.mla.v_head_dim");
    m.mla = a;
  }
  if (m.head_dim == 0 && m.heads > 0) m.head_dim = m.hidden / m.heads;
  return m;
}

models::ModelSpec model_from_tree(Ctx& ctx, const std::string& path, const Value& tree) {
  if (ends_with(path, ".json")) return read_hf_config(ctx, tree, stem_of(path));
  return read_model_table(ctx, tree, stem_of(path));
}

}  // namespace mfusim::config::detail

namespace mfusim::config {

using namespace detail;

models::ModelSpec load_model(const std::string& path) {
  Ctx ctx;
  Value tree;
  models::ModelSpec m;
  if (load_tree(ctx, path, tree, Pos{path, 0, 0})) {
    m = model_from_tree(ctx, path, tree);
    if (ctx.diags.empty())
      check_model(m, [&](const std::string& key, const std::string& msg) { ctx.error(locate(ctx, key, path), msg); });
  }
  if (!ctx.diags.empty()) throw ConfigError(std::move(ctx.diags));
  return m;
}

}  // namespace mfusim::config
