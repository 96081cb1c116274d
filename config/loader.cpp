// Scenario, model and hardware loading (SPEC §3): TOML or HF config.json into
// the plain structs of config/scenario.h, with every problem collected as a
// positioned Diagnostic. Two phases: reading (unknown keys, types, enums,
// files) and checking (ranges and combinations, shared with validate()).
#include "config/loader.h"

#include "hardware/calibration.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "config/value.h"
#include "schedules/schedule.h"

#ifndef MFUSIM_SOURCE_DIR
#define MFUSIM_SOURCE_DIR ""
#endif
#ifndef MFUSIM_DATA_DIR
#define MFUSIM_DATA_DIR ""
#endif

namespace mfusim::config {

namespace fs = std::filesystem;
using detail::Pos;
using detail::Value;
using Kind = detail::Value::Kind;

std::string Diagnostic::str() const {
  std::string out = file.empty() ? std::string("<input>") : file;
  if (line > 0) out += ":" + std::to_string(line) + ":" + std::to_string(column);
  return out + ": error: " + message;
}

namespace {
std::string join_diags(const std::vector<Diagnostic>& diags) {
  std::string out;
  for (const auto& d : diags) {
    if (!out.empty()) out += "\n";
    out += d.str();
  }
  return out;
}
}  // namespace

ConfigError::ConfigError(std::vector<Diagnostic> diags)
    : std::runtime_error(join_diags(diags)), diags_(std::move(diags)) {}

namespace {

// ---------------------------------------------------------------- helpers

constexpr std::int64_t kMaxGpus = 1 << 24;
constexpr std::int64_t kMaxBatch = 1 << 28;
constexpr std::int64_t kMaxSeq = 1 << 24;

std::int64_t mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return INT64_MAX;
  return r;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// " (did you mean 'x'?)" for the closest candidate within a sensible distance.
std::string suggest(const std::string& key, const std::vector<std::string>& known) {
  if (key.size() > 200) return "";
  std::string best;
  std::size_t best_d = SIZE_MAX;
  for (const auto& k : known) {
    std::size_t d = edit_distance(key, k);
    if (d < best_d) {
      best_d = d;
      best = k;
    }
  }
  if (best.empty() || best_d > std::max<std::size_t>(2, key.size() / 3)) return "";
  return " (did you mean '" + best + "'?)";
}

std::string quote(const std::string& s) {
  std::string t = s.size() > 60 ? s.substr(0, 60) + "..." : s;
  return "\"" + t + "\"";
}

std::string describe_value(const Value& v) {
  switch (v.kind) {
    case Kind::string: return std::string("a string ") + quote(v.str);
    case Kind::integer: return "an integer (" + std::to_string(v.i) + ")";
    case Kind::boolean: return std::string("a boolean (") + (v.b ? "true" : "false") + ")";
    default: return detail::kind_name(v.kind);
  }
}

std::string fmt(double x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

bool read_file(const std::string& path, std::string& out) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string stem_of(const std::string& path) { return fs::path(path).stem().string(); }

// ---------------------------------------------------------------- reading context

struct Ctx {
  std::vector<Diagnostic> diags;
  std::map<std::string, Pos> where;   // scenario dotted key -> where it was set

  void error(const Pos& p, std::string msg) { diags.push_back(Diagnostic{p.file, p.line, p.col, std::move(msg)}); }

  // Unknown keys, with the closest known key suggested.
  void check_keys(const Value& t, const std::vector<std::string>& known, const std::string& prefix) {
    for (const auto& [k, v] : t.items) {
      if (!k.empty() && k[0] == '@') continue;   // internal overlay slots
      if (std::find(known.begin(), known.end(), k) != known.end()) continue;
      error(v.key_pos, "unknown key '" + prefix + k + "'" + suggest(k, known));
    }
  }

  const Value* get(const Value& t, const std::string& key, const std::string& prefix) {
    const Value* v = t.find(key);
    if (v) where[prefix + key] = v->key_pos;
    return v;
  }

  bool type_error(const Value& v, const std::string& full, const char* expected) {
    error(v.pos, "'" + full + "' must be " + expected + ", got " + describe_value(v));
    return false;
  }

  bool read_int(const Value& t, const std::string& key, const std::string& prefix, std::int64_t& out) {
    const Value* v = get(t, key, prefix);
    if (!v) return false;
    if (v->kind != Kind::integer) return type_error(*v, prefix + key, "an integer");
    out = v->i;
    return true;
  }

  bool read_int(const Value& t, const std::string& key, const std::string& prefix, int& out) {
    std::int64_t x = 0;
    if (!read_int(t, key, prefix, x)) return false;
    if (x < INT_MIN || x > INT_MAX) {
      error(t.find(key)->pos, "'" + prefix + key + "' = " + std::to_string(x) + " is out of range");
      return false;
    }
    out = static_cast<int>(x);
    return true;
  }

  bool read_number(const Value& t, const std::string& key, const std::string& prefix, double& out) {
    const Value* v = get(t, key, prefix);
    if (!v) return false;
    if (!v->is_number()) return type_error(*v, prefix + key, "a number");
    if (!std::isfinite(v->number())) {
      error(v->pos, "'" + prefix + key + "' must be a finite number");
      return false;
    }
    out = v->number();
    return true;
  }

  bool read_bool(const Value& t, const std::string& key, const std::string& prefix, bool& out) {
    const Value* v = get(t, key, prefix);
    if (!v) return false;
    if (v->kind != Kind::boolean) return type_error(*v, prefix + key, "a boolean (true or false)");
    out = v->b;
    return true;
  }

  bool read_string(const Value& t, const std::string& key, const std::string& prefix, std::string& out) {
    const Value* v = get(t, key, prefix);
    if (!v) return false;
    if (v->kind != Kind::string) return type_error(*v, prefix + key, "a string");
    out = v->str;
    return true;
  }

  // A string out of a fixed set; returns the index or -1.
  int read_enum(const Value& t, const std::string& key, const std::string& prefix,
                const std::vector<std::string>& choices) {
    std::string s;
    if (!read_string(t, key, prefix, s)) return -1;
    for (std::size_t i = 0; i < choices.size(); ++i)
      if (choices[i] == s) return static_cast<int>(i);
    std::string list;
    for (const auto& c : choices) list += (list.empty() ? "" : " | ") + c;
    error(t.find(key)->pos, "'" + prefix + key + "' = " + quote(s) + " is not one of " + list + suggest(s, choices));
    return -1;
  }

  const Value* read_table(const Value& t, const std::string& key, const std::string& prefix) {
    const Value* v = get(t, key, prefix);
    if (!v) return nullptr;
    if (!v->is_table()) {
      type_error(*v, prefix + key, "a table");
      return nullptr;
    }
    return v;
  }

  void missing(const Value& t, const std::string& full) { error(t.pos, "missing required key '" + full + "'"); }
};

// ---------------------------------------------------------------- models

const std::vector<std::string> kModelKeys = {"name", "layers", "hidden", "ffn_hidden", "heads", "kv_heads",
                                             "head_dim", "vocab", "activation", "tied_embeddings", "moe", "mla"};
const std::vector<std::string> kMoeKeys = {"experts", "top_k", "expert_ffn_hidden", "shared_experts", "dense_layers"};
const std::vector<std::string> kMlaKeys = {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                                           "v_head_dim"};

bool moe_table_has(const Value& model, const char* key) {
  const Value* moe = model.find("moe");
  return moe && moe->is_table() && moe->find(key);
}

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
  int act = ctx.read_enum(t, "activation", p, {"swiglu", "gelu"});
  if (act == 1) m.activation = models::Activation::gelu;
  ctx.read_bool(t, "tied_embeddings", p, m.tied_embeddings);
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

// Hugging Face config.json (transformers' PretrainedConfig) to ModelSpec.
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

  std::string act = "silu";
  if (const Value* v = root.find("hidden_act"); v && v->kind == Kind::string) act = v->str;
  else if (const Value* w = root.find("activation_function"); w && w->kind == Kind::string) act = w->str;
  if (act == "silu" || act == "swish" || act == "swiglu") {
    m.activation = models::Activation::swiglu;
  } else if (act.rfind("gelu", 0) == 0) {
    m.activation = models::Activation::gelu;
  } else {
    const Value* v = root.find("hidden_act") ? root.find("hidden_act") : root.find("activation_function");
    ctx.error(v ? v->pos : root.pos, "unsupported activation " + quote(act) + " (supported: silu -> swiglu, gelu*)");
  }
  static const std::set<std::string> kTiedByDefault = {"gpt2", "opt", "bloom", "gemma", "gemma2", "gemma3",
                                                       "gemma3_text", "gpt_bigcode", "phi"};
  m.tied_embeddings = kTiedByDefault.count(model_type) > 0;
  if (const Value* v = root.find("tie_word_embeddings"); v && v->kind == Kind::boolean) m.tied_embeddings = v->b;

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

// ---------------------------------------------------------------- hardware

const std::vector<std::string> kHardwareKeys = {
    "name",           "peak_tflops_bf16",   "peak_tflops_fp8",   "hbm_gib",
    "hbm_bandwidth_gbs", "gpus_per_node",   "nvlink_bandwidth_gbs", "nvlink_latency_us",
    "nic_bandwidth_gbs", "nic_latency_us",  "launch_overhead_us", "host_overhead_us",
    "host_compiled_overhead_us", "host_backward_overhead_us", "host_checkpoint_overhead_us",
    "host_recompute_overhead_us"};

hardware::HardwareSpec read_hardware_table(Ctx& ctx, const Value& t, const std::string& default_name) {
  const std::string p = "hardware.";
  hardware::HardwareSpec h;
  h.name = default_name;
  ctx.check_keys(t, kHardwareKeys, p);
  ctx.read_string(t, "name", p, h.name);
  auto num = [&](const char* key, double scale, double& out, bool required) {
    double x = 0;
    if (ctx.read_number(t, key, p, x)) out = x * scale;
    else if (required && !t.find(key)) ctx.missing(t, p + key);
  };
  num("peak_tflops_bf16", 1e12, h.peak_flops_bf16, true);
  num("peak_tflops_fp8", 1e12, h.peak_flops_fp8, false);
  num("hbm_gib", 1024.0 * 1024.0 * 1024.0, h.hbm_bytes, true);
  num("hbm_bandwidth_gbs", 1e9, h.hbm_bandwidth, true);
  num("nvlink_bandwidth_gbs", 1e9, h.nvlink_bandwidth, true);
  num("nvlink_latency_us", 1e-6, h.nvlink_latency, false);
  num("nic_bandwidth_gbs", 1e9, h.nic_bandwidth, true);
  num("nic_latency_us", 1e-6, h.nic_latency, false);
  num("launch_overhead_us", 1e-6, h.launch_overhead, false);
  num("host_overhead_us", 1e-6, h.host_overhead, false);
  num("host_compiled_overhead_us", 1e-6, h.host_compiled_overhead, false);
  num("host_backward_overhead_us", 1e-6, h.host_backward_overhead, false);
  num("host_checkpoint_overhead_us", 1e-6, h.host_checkpoint_overhead, false);
  num("host_recompute_overhead_us", 1e-6, h.host_recompute_overhead, false);
  ctx.read_int(t, "gpus_per_node", p, h.gpus_per_node);
  return h;
}

// ---------------------------------------------------------------- data files

std::vector<fs::path> data_roots(const std::string& scenario_path, const LoadOptions& opts) {
  std::vector<fs::path> roots;
  std::error_code ec;
  fs::path dir = fs::path(scenario_path).parent_path();
  if (dir.empty()) dir = ".";
  fs::path abs = fs::absolute(dir, ec);
  if (ec) abs = dir;
  abs = abs.lexically_normal();
  for (fs::path d = abs;; d = d.parent_path()) {
    roots.push_back(d);
    if (d == d.parent_path() || roots.size() > 64) break;
  }
  for (const auto& d : opts.search_dirs) roots.emplace_back(d);
  if (std::string(MFUSIM_SOURCE_DIR).size()) roots.emplace_back(MFUSIM_SOURCE_DIR);
  if (std::string(MFUSIM_DATA_DIR).size()) roots.emplace_back(MFUSIM_DATA_DIR);
  return roots;
}

std::vector<std::string> list_names(const char* sub, const LoadOptions& opts, const std::string& from) {
  std::set<std::string> names;
  for (const auto& root : data_roots(from, opts)) {
    std::error_code ec;
    fs::path dir = root / sub;
    if (!fs::is_directory(dir, ec)) continue;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const auto ext = it->path().extension().string();
      std::error_code ec2;
      if ((ext == ".toml" || ext == ".json") && it->is_regular_file(ec2)) names.insert(it->path().stem().string());
    }
  }
  return {names.begin(), names.end()};
}

// A named model/hardware: a path when it looks like one, else `sub/NAME.toml|json` in the data roots.
std::string find_data_file(const char* sub, const std::string& name, const std::string& scenario_path,
                           const LoadOptions& opts) {
  std::error_code ec;
  const bool looks_like_path = name.find('/') != std::string::npos || ends_with(name, ".toml") ||
                               ends_with(name, ".json");
  const auto roots = data_roots(scenario_path, opts);
  if (looks_like_path) {
    fs::path p(name);
    if (p.is_absolute()) return fs::is_regular_file(p, ec) ? p.string() : "";
    fs::path rel = roots.front() / p;
    if (fs::is_regular_file(rel, ec)) return rel.lexically_normal().string();
    return "";
  }
  for (const auto& root : roots)
    for (const char* ext : {".toml", ".json"}) {
      fs::path f = root / sub / (name + ext);
      if (fs::is_regular_file(f, ec)) return f.lexically_normal().string();
    }
  return "";
}

// Loads a data file into a tree; parse errors become diagnostics.
bool load_tree(Ctx& ctx, const std::string& path, Value& out, const Pos& ref) {
  std::string text;
  if (!read_file(path, text)) {
    ctx.error(ref, "cannot read file '" + path + "'");
    return false;
  }
  try {
    out = ends_with(path, ".json") ? detail::parse_json(text, path) : detail::parse_toml(text, path);
    if (out.pos.file.empty()) out.pos.file = path;
    return true;
  } catch (const detail::ParseFailure& f) {
    ctx.error(f.pos, f.message);
    return false;
  }
}

models::ModelSpec model_from_tree(Ctx& ctx, const std::string& path, const Value& tree) {
  if (ends_with(path, ".json")) return read_hf_config(ctx, tree, stem_of(path));
  return read_model_table(ctx, tree, stem_of(path));
}

// ---------------------------------------------------------------- scenario

const std::vector<std::string> kRootKeys = {"name",     "model",    "hardware", "calibration", "seed",   "cluster",
                                            "training", "parallel", "schedule", "features",    "cost",   "whatif"};
const std::vector<std::string> kClusterKeys = {"gpus"};
const std::vector<std::string> kTrainingKeys = {"seq_len", "global_batch", "micro_batch", "precision",
                                                "master_weights", "tokens_to_train"};
const std::vector<std::string> kParallelKeys = {"tp",  "pp", "cp", "ep", "vpp", "dp", "sequence_parallel",
                                                "distributed_optimizer", "first_stage_layers", "last_stage_layers",
                                                "stage_layers"};
const std::vector<std::string> kScheduleKeys = {"name", "costs"};
const std::vector<std::string> kCostsKeys = {"f", "b", "w", "comm", "fb"};
const std::vector<std::string> kFeatureKeys = {"flash_attention", "fused_kernels", "overlap_grad_reduce",
                                               "overlap_param_gather", "tp_comm_overlap", "recompute",
                                               "cuda_graphs", "python_gc", "dataloader_workers", "nccl_algo",
                                               "dataloader_ms_per_sample", "gc_pause_ms", "gc_interval_s",
                                               "overlap_p2p_comm"};
const std::vector<std::string> kCostKeys = {"price_per_gpu_hour"};

struct Resolved {
  Scenario scenario;
  Ctx ctx;
};

// Reading phase for one fully overlaid scenario tree.
void read_scenario(Ctx& ctx, Scenario& s, const Value& root, const std::string& path, const LoadOptions& opts) {
  s.source = path;
  s.name = stem_of(path);
  ctx.check_keys(root, kRootKeys, "");
  ctx.read_string(root, "name", "", s.name);
  {
    std::int64_t seed = 0;
    if (ctx.read_int(root, "seed", "", seed)) {
      if (seed < 0) ctx.error(root.find("seed")->pos, "'seed' must be >= 0 (seed=" + std::to_string(seed) + ")");
      else s.seed = static_cast<std::uint64_t>(seed);
    }
  }

  // model / hardware: a name (data file) or an inline table; "@model"/"@hardware" hold --set overlays of a named one.
  auto resolve_ref = [&](const char* key, const char* sub, auto&& from_tree, auto&& list) -> bool {
    const Value* v = ctx.get(root, key, "");
    if (!v) {
      ctx.error(root.pos, std::string("missing required key '") + key + "' (a name from " + sub +
                              "/ or an inline [" + key + "] table)");
      return false;
    }
    if (v->is_table()) {
      Value t = *v;
      from_tree("", t, std::string("(inline)"));
      return true;
    }
    if (v->kind != Kind::string) {
      ctx.type_error(*v, key, "a name (string) or a table");
      return false;
    }
    const std::string file = v->str.empty() ? "" : find_data_file(sub, v->str, path, opts);
    if (file.empty()) {
      ctx.error(v->pos, std::string("unknown ") + key + " " + quote(v->str) + suggest(v->str, list()) +
                            ": no " + sub + "/" + v->str + ".toml found next to the scenario, in its parent "
                            "directories or in the data directory");
      return false;
    }
    Value tree;
    if (!load_tree(ctx, file, tree, v->pos)) return false;
    if (const Value* overlay = root.find(std::string("@") + key)) detail::merge(tree, *overlay);
    from_tree(file, tree, v->str);
    return true;
  };
  resolve_ref(
      "model", "models",
      [&](const std::string& file, const Value& t, const std::string& ref) {
        s.model = file.empty() ? read_model_table(ctx, t, "(inline)") : model_from_tree(ctx, file, t);
        s.model_ref = ref;
      },
      [&] { return list_names("models", opts, path); });
  resolve_ref(
      "hardware", "hardware",
      [&](const std::string& file, const Value& t, const std::string& ref) {
        s.hardware = read_hardware_table(ctx, t, file.empty() ? "(inline)" : stem_of(file));
        s.hardware_ref = ref;
      },
      [&] { return list_names("hardware", opts, path); });

  std::string calib;
  if (ctx.read_string(root, "calibration", "", calib)) {
    const Value* v = root.find("calibration");
    std::error_code ec;
    fs::path p(calib);
    std::string found;
    if (p.is_absolute()) {
      if (fs::is_regular_file(p, ec)) found = p.string();
    } else if (!calib.empty()) {
      for (const auto& r : data_roots(path, opts))
        if (fs::is_regular_file(r / p, ec)) {
          found = (r / p).lexically_normal().string();
          break;
        }
    }
    if (found.empty()) ctx.error(v->pos, "calibration file " + quote(calib) + " not found");
    s.calibration_path = found;
    if (!found.empty()) {
      try {
        s.calibration = hardware::read_calibration(found);
      } catch (const std::exception& e) {
        ctx.error(v->pos, std::string("cannot use calibration file: ") + e.what());
      }
    }
  }

  if (const Value* c = ctx.read_table(root, "cluster", "")) {
    ctx.check_keys(*c, kClusterKeys, "cluster.");
    if (!ctx.read_int(*c, "gpus", "cluster.", s.gpus) && !c->find("gpus")) ctx.missing(*c, "cluster.gpus");
  } else if (!root.find("cluster")) {
    ctx.error(root.pos, "missing required key 'cluster.gpus'");
  }

  if (const Value* t = ctx.read_table(root, "training", "")) {
    const std::string p = "training.";
    ctx.check_keys(*t, kTrainingKeys, p);
    ctx.read_int(*t, "seq_len", p, s.training.seq_len);
    if (!ctx.read_int(*t, "global_batch", p, s.training.global_batch) && !t->find("global_batch"))
      ctx.missing(*t, "training.global_batch");
    ctx.read_int(*t, "micro_batch", p, s.training.micro_batch);
    int prec = ctx.read_enum(*t, "precision", p, {"bf16", "fp8"});
    if (prec == 1) s.training.precision = Precision::fp8;
    int mw = ctx.read_enum(*t, "master_weights", p, {"bf16-params", "fp32-autocast"});
    if (mw == 1) s.training.master_weights = MasterWeights::fp32_autocast;
    ctx.read_number(*t, "tokens_to_train", p, s.training.tokens_to_train);
  } else if (!root.find("training")) {
    ctx.error(root.pos, "missing required key 'training.global_batch'");
  }

  if (const Value* t = ctx.read_table(root, "parallel", "")) {
    const std::string p = "parallel.";
    auto& par = s.parallel;
    ctx.check_keys(*t, kParallelKeys, p);
    ctx.read_int(*t, "tp", p, par.tp);
    ctx.read_int(*t, "pp", p, par.pp);
    ctx.read_int(*t, "cp", p, par.cp);
    ctx.read_int(*t, "ep", p, par.ep);
    ctx.read_int(*t, "vpp", p, par.vpp);
    ctx.read_int(*t, "dp", p, par.dp);
    ctx.read_bool(*t, "sequence_parallel", p, par.sequence_parallel);
    ctx.read_bool(*t, "distributed_optimizer", p, par.distributed_optimizer);
    ctx.read_int(*t, "first_stage_layers", p, par.first_stage_layers);
    ctx.read_int(*t, "last_stage_layers", p, par.last_stage_layers);
    if (const Value* a = ctx.get(*t, "stage_layers", p)) {
      if (a->kind != Kind::array) {
        ctx.type_error(*a, "parallel.stage_layers", "an array of integers");
      } else {
        for (const auto& [k, e] : a->items) {
          if (e.kind != Kind::integer || e.i < INT_MIN || e.i > INT_MAX) {
            ctx.type_error(e, "parallel.stage_layers[]", "an integer");
            break;
          }
          par.stage_layers.push_back(static_cast<int>(e.i));
        }
      }
    }
  }

  if (const Value* t = ctx.read_table(root, "schedule", "")) {
    const std::string p = "schedule.";
    ctx.check_keys(*t, kScheduleKeys, p);
    int k = ctx.read_enum(*t, "name", p, schedules::schedule_names());
    if (k >= 0) {
      if (auto kind = schedule_from_string(schedules::schedule_names()[static_cast<std::size_t>(k)]))
        s.schedule.name = *kind;
    }
    if (const Value* c = ctx.read_table(*t, "costs", p)) {
      const std::string q = "schedule.costs.";
      ctx.check_keys(*c, kCostsKeys, q);
      ScheduleCosts sc;
      double x = 0;
      if (ctx.read_number(*c, "f", q, x)) sc.f = x * 1e-3;
      else if (!c->find("f")) ctx.missing(*c, "schedule.costs.f");
      if (ctx.read_number(*c, "b", q, x)) sc.b = x * 1e-3;
      else if (!c->find("b")) ctx.missing(*c, "schedule.costs.b");
      if (ctx.read_number(*c, "w", q, x)) sc.w = x * 1e-3;
      if (ctx.read_number(*c, "comm", q, x)) sc.comm = x * 1e-3;
      if (ctx.read_number(*c, "fb", q, x)) sc.fb = x * 1e-3;
      s.schedule.costs = sc;
    }
  }  // Interleaving needs chunks: without an explicit parallel.vpp, interleaved-1f1b
  // uses 2 model chunks per rank (documented in SPEC-extensions, docs/schedules.md).
  if (s.schedule.name == ScheduleKind::interleaved_1f1b) {
    const Value* par = root.find("parallel");
    if (!par || !par->find("vpp")) s.parallel.vpp = 2;
  }


  if (const Value* t = ctx.read_table(root, "features", "")) {
    const std::string p = "features.";
    auto& f = s.features;
    ctx.check_keys(*t, kFeatureKeys, p);
    ctx.read_bool(*t, "flash_attention", p, f.flash_attention);
    ctx.read_bool(*t, "fused_kernels", p, f.fused_kernels);
    ctx.read_bool(*t, "overlap_grad_reduce", p, f.overlap_grad_reduce);
    ctx.read_bool(*t, "overlap_param_gather", p, f.overlap_param_gather);
    ctx.read_bool(*t, "tp_comm_overlap", p, f.tp_comm_overlap);
    ctx.read_bool(*t, "overlap_p2p_comm", p, f.overlap_p2p_comm);
    int r = ctx.read_enum(*t, "recompute", p, {"none", "selective", "full"});
    if (r >= 0) f.recompute = static_cast<Recompute>(r);
    ctx.read_bool(*t, "cuda_graphs", p, f.cuda_graphs);
    ctx.read_bool(*t, "python_gc", p, f.python_gc);
    ctx.read_int(*t, "dataloader_workers", p, f.dataloader_workers);
    int n = ctx.read_enum(*t, "nccl_algo", p, {"auto", "ring", "tree"});
    if (n >= 0) f.nccl_algo = static_cast<NcclAlgo>(n);
    ctx.read_number(*t, "dataloader_ms_per_sample", p, f.dataloader_ms_per_sample);
    ctx.read_number(*t, "gc_pause_ms", p, f.gc_pause_ms);
    ctx.read_number(*t, "gc_interval_s", p, f.gc_interval_s);
  }

  if (const Value* t = ctx.read_table(root, "cost", "")) {
    ctx.check_keys(*t, kCostKeys, "cost.");
    ctx.read_number(*t, "price_per_gpu_hour", "cost.", s.cost.price_per_gpu_hour);
  }

  // dp: derived unless given (the check phase compares a given one).
  const std::int64_t mp = mul(mul(s.parallel.tp, s.parallel.pp), s.parallel.cp);
  if (s.parallel.dp == 0 && mp > 0 && s.gpus > 0 && s.gpus % mp == 0) s.parallel.dp = static_cast<int>(s.gpus / mp);
}

// ---------------------------------------------------------------- checking phase

using Sink = std::function<void(const std::string& key, const std::string& message)>;

void check_model(const models::ModelSpec& m, const Sink& err) {
  const std::string n = m.name.empty() ? "the model" : m.name;
  auto range = [&](const std::string& key, std::int64_t v, std::int64_t lo, std::int64_t hi) {
    if (v < lo || v > hi)
      err(key, "'" + key + "' = " + std::to_string(v) + " is out of range (" + std::to_string(lo) + " .. " +
                   std::to_string(hi) + ")");
    return v >= lo && v <= hi;
  };
  bool ok = range("model.layers", m.layers, 1, 100000);
  ok &= range("model.hidden", m.hidden, 1, 1 << 22);
  ok &= range("model.heads", m.heads, 1, 1 << 16);
  ok &= range("model.kv_heads", m.kv_heads, 1, 1 << 16);
  ok &= range("model.vocab", m.vocab, 1, 1 << 26);
  ok &= range("model.head_dim", m.head_dim, 1, 1 << 16);
  const bool all_moe = m.moe && m.moe->dense_layers == 0;
  ok &= range("model.ffn_hidden", m.ffn_hidden, all_moe ? 0 : 1, 1 << 24);
  if (ok && m.heads % m.kv_heads != 0)
    err("model.kv_heads", "kv_heads=" + std::to_string(m.kv_heads) + " does not divide heads=" +
                              std::to_string(m.heads) + " (grouped-query attention needs whole groups)");
  if (m.moe) {
    const auto& e = *m.moe;
    bool eok = range("model.moe.experts", e.experts, 1, 1 << 16);
    eok &= range("model.moe.top_k", e.top_k, 1, 1 << 16);
    range("model.moe.expert_ffn_hidden", e.expert_ffn_hidden, 1, 1 << 24);
    range("model.moe.shared_experts", e.shared_experts, 0, 1 << 16);
    range("model.moe.dense_layers", e.dense_layers, 0, std::max(0, m.layers));
    if (eok && e.top_k > e.experts)
      err("model.moe.top_k", "top_k=" + std::to_string(e.top_k) + " exceeds experts=" + std::to_string(e.experts));
  }
  if (m.mla) {
    const auto& a = *m.mla;
    range("model.mla.q_lora_rank", a.q_lora_rank, 0, 1 << 20);
    range("model.mla.kv_lora_rank", a.kv_lora_rank, 1, 1 << 20);
    range("model.mla.qk_nope_head_dim", a.qk_nope_head_dim, 0, 1 << 16);
    range("model.mla.qk_rope_head_dim", a.qk_rope_head_dim, 0, 1 << 16);
    range("model.mla.v_head_dim", a.v_head_dim, 1, 1 << 16);
  }
}

void check_hardware(const hardware::HardwareSpec& h, const Sink& err) {
  auto positive = [&](const std::string& key, double v, double scale) {
    if (!(v > 0)) err(key, "'" + key + "' must be > 0 (got " + fmt(v / scale) + ")");
  };
  auto nonneg = [&](const std::string& key, double v, double scale) {
    if (!(v >= 0)) err(key, "'" + key + "' must be >= 0 (got " + fmt(v / scale) + ")");
  };
  positive("hardware.peak_tflops_bf16", h.peak_flops_bf16, 1e12);
  nonneg("hardware.peak_tflops_fp8", h.peak_flops_fp8, 1e12);
  positive("hardware.hbm_gib", h.hbm_bytes, 1024.0 * 1024.0 * 1024.0);
  positive("hardware.hbm_bandwidth_gbs", h.hbm_bandwidth, 1e9);
  positive("hardware.nvlink_bandwidth_gbs", h.nvlink_bandwidth, 1e9);
  positive("hardware.nic_bandwidth_gbs", h.nic_bandwidth, 1e9);
  nonneg("hardware.nvlink_latency_us", h.nvlink_latency, 1e-6);
  nonneg("hardware.nic_latency_us", h.nic_latency, 1e-6);
  nonneg("hardware.launch_overhead_us", h.launch_overhead, 1e-6);
  nonneg("hardware.host_overhead_us", h.host_overhead, 1e-6);
  nonneg("hardware.host_compiled_overhead_us", h.host_compiled_overhead, 1e-6);
  nonneg("hardware.host_backward_overhead_us", h.host_backward_overhead, 1e-6);
  nonneg("hardware.host_checkpoint_overhead_us", h.host_checkpoint_overhead, 1e-6);
  nonneg("hardware.host_recompute_overhead_us", h.host_recompute_overhead, 1e-6);
  if (h.gpus_per_node < 1 || h.gpus_per_node > 1 << 20)
    err("hardware.gpus_per_node", "'hardware.gpus_per_node' must be >= 1 (got " + std::to_string(h.gpus_per_node) + ")");
}

// Ranges and combinations (SPEC §3), on a scenario from a file or built in code.
void check_scenario(const Scenario& s, const Sink& err) {
  const auto& m = s.model;
  const auto& par = s.parallel;
  const auto& tr = s.training;
  bool model_ok = true;
  check_model(m, [&](const std::string& k, const std::string& msg) {
    model_ok = false;
    err(k, msg);
  });
  check_hardware(s.hardware, err);

  auto range = [&](const std::string& key, std::int64_t v, std::int64_t lo, std::int64_t hi) {
    if (v < lo || v > hi) {
      err(key, "'" + key + "' = " + std::to_string(v) + " is out of range (" + std::to_string(lo) + " .. " +
                   std::to_string(hi) + ")");
      return false;
    }
    return true;
  };
  bool ok = range("cluster.gpus", s.gpus, 1, kMaxGpus);
  ok &= range("training.seq_len", tr.seq_len, 1, kMaxSeq);
  ok &= range("training.global_batch", tr.global_batch, 1, kMaxBatch);
  ok &= range("training.micro_batch", tr.micro_batch, 1, kMaxBatch);
  ok &= range("parallel.tp", par.tp, 1, kMaxGpus);
  ok &= range("parallel.pp", par.pp, 1, kMaxGpus);
  ok &= range("parallel.cp", par.cp, 1, kMaxGpus);
  ok &= range("parallel.ep", par.ep, 1, kMaxGpus);
  ok &= range("parallel.vpp", par.vpp, 1, 1024);
  ok &= range("parallel.dp", par.dp, 0, kMaxGpus);
  ok &= range("parallel.first_stage_layers", par.first_stage_layers, 0, 100000);
  ok &= range("parallel.last_stage_layers", par.last_stage_layers, 0, 100000);
  range("features.dataloader_workers", s.features.dataloader_workers, 0, 4096);
  if (!(s.features.dataloader_ms_per_sample >= 0 || s.features.dataloader_ms_per_sample == -1))
    err("features.dataloader_ms_per_sample", "'features.dataloader_ms_per_sample' must be >= 0 ms (got " +
                                                 fmt(s.features.dataloader_ms_per_sample) + ")");
  if (!(s.features.gc_pause_ms >= 0 && s.features.gc_pause_ms <= 1e6))
    err("features.gc_pause_ms", "'features.gc_pause_ms' must be in [0, 1e6] ms (got " + fmt(s.features.gc_pause_ms) + ")");
  if (!(s.features.gc_interval_s > 0 && s.features.gc_interval_s <= 1e9))
    err("features.gc_interval_s", "'features.gc_interval_s' must be in (0, 1e9] s (got " + fmt(s.features.gc_interval_s) + ")");
  if (!(tr.tokens_to_train >= 0))
    err("training.tokens_to_train", "'training.tokens_to_train' must be >= 0 (got " + fmt(tr.tokens_to_train) + ")");
  if (!(s.cost.price_per_gpu_hour >= 0))
    err("cost.price_per_gpu_hour",
        "'cost.price_per_gpu_hour' must be >= 0 (got " + fmt(s.cost.price_per_gpu_hour) + ")");
  if (s.schedule.costs) {
    const auto& c = *s.schedule.costs;
    if (!(c.f > 0)) err("schedule.costs.f", "'schedule.costs.f' must be > 0 ms (got " + fmt(c.f * 1e3) + ")");
    if (!(c.b > 0)) err("schedule.costs.b", "'schedule.costs.b' must be > 0 ms (got " + fmt(c.b * 1e3) + ")");
    if (c.w && !(*c.w >= 0)) err("schedule.costs.w", "'schedule.costs.w' must be >= 0 ms (got " + fmt(*c.w * 1e3) + ")");
    if (!(c.comm >= 0))
      err("schedule.costs.comm", "'schedule.costs.comm' must be >= 0 ms (got " + fmt(c.comm * 1e3) + ")");
    if (c.fb && !(*c.fb > 0)) err("schedule.costs.fb", "'schedule.costs.fb' must be > 0 ms (got " + fmt(*c.fb * 1e3) + ")");
  }
  if (tr.precision == Precision::fp8 && !(s.hardware.peak_flops_fp8 > 0))
    err("training.precision", "precision \"fp8\" needs FP8 tensor cores, but hardware '" + s.hardware.name +
                                  "' has no peak_tflops_fp8");
  if (!ok) return;

  // Cluster shape: gpus = tp * pp * cp * dp.
  const std::int64_t mp = mul(mul(par.tp, par.pp), par.cp);
  int dp = par.dp;
  if (s.gpus % mp != 0) {
    err("cluster.gpus", "gpus=" + std::to_string(s.gpus) + " is not a multiple of tp*pp*cp = " + std::to_string(par.tp) +
                            "*" + std::to_string(par.pp) + "*" + std::to_string(par.cp) + " = " + std::to_string(mp));
    dp = 0;
  } else {
    const int derived = static_cast<int>(s.gpus / mp);
    if (dp != 0 && dp != derived)
      err("parallel.dp", "dp=" + std::to_string(dp) + " does not match gpus / (tp*pp*cp) = " + std::to_string(s.gpus) +
                             " / " + std::to_string(mp) + " = " + std::to_string(derived));
    dp = derived;
  }

  if (model_ok) {
    // Megatron-LM: heads and query groups are split over tensor-parallel ranks.
    if (m.heads % par.tp != 0)
      err("parallel.tp", "tensor parallel size (tp=" + std::to_string(par.tp) + ") does not divide the " +
                             std::to_string(m.heads) + " attention heads of " + m.name);
    else if (m.kv_heads % par.tp != 0)
      err("parallel.tp", "tensor parallel size (tp=" + std::to_string(par.tp) + ") does not divide the " +
                             std::to_string(m.kv_heads) + " key/value heads (query groups) of " + m.name);
    if (par.ep > 1) {
      if (!m.is_moe())
        err("parallel.ep", "expert parallelism (ep=" + std::to_string(par.ep) + ") needs an MoE model; " + m.name +
                               " is dense");
      else if (m.moe->experts % par.ep != 0)
        err("parallel.ep", "expert parallel size (ep=" + std::to_string(par.ep) + ") does not divide the " +
                               std::to_string(m.moe->experts) + " experts of " + m.name);
      else if (dp > 0 && mul(mul(dp, par.cp), par.tp) % par.ep != 0)
        err("parallel.ep", "expert parallel size (ep=" + std::to_string(par.ep) + ") does not divide tp*cp*dp = " +
                               std::to_string(mul(mul(dp, par.cp), par.tp)));
    }
    // Layer split over pipeline stages (chunks virtual stages per rank).
    const std::string sched = to_string(s.schedule.name);
    const int chunks = schedules::chunks_for(sched, par.vpp);
    const std::int64_t vstages = mul(par.pp, chunks);
    if (!par.stage_layers.empty()) {
      std::int64_t sum = 0;
      bool neg = false;
      for (int x : par.stage_layers) {
        sum += x;
        neg = neg || x < 0;
      }
      if (par.first_stage_layers || par.last_stage_layers)
        err("parallel.stage_layers", "give either stage_layers or first/last_stage_layers, not both");
      if (static_cast<std::int64_t>(par.stage_layers.size()) != vstages)
        err("parallel.stage_layers", "stage_layers has " + std::to_string(par.stage_layers.size()) +
                                         " entries, expected one per pipeline stage (pp*chunks = " +
                                         std::to_string(vstages) + ")");
      else if (neg)
        err("parallel.stage_layers", "stage_layers entries must be >= 0");
      else if (sum != m.layers)
        err("parallel.stage_layers", "stage_layers sum to " + std::to_string(sum) + ", but " + m.name + " has " +
                                         std::to_string(m.layers) + " layers");
    } else if (par.first_stage_layers || par.last_stage_layers) {
      const std::int64_t fixed = par.first_stage_layers + par.last_stage_layers;
      const std::int64_t middle_stages = vstages - (par.first_stage_layers > 0) - (par.last_stage_layers > 0);
      const std::int64_t rest = m.layers - fixed;
      const std::string key = par.first_stage_layers ? "parallel.first_stage_layers" : "parallel.last_stage_layers";
      if (par.pp < 2)
        err(key, "first/last_stage_layers need a pipeline (pp >= 2, got pp=" + std::to_string(par.pp) + ")");
      else if (rest < 0 || (middle_stages == 0 && rest != 0))
        err(key, "first_stage_layers + last_stage_layers = " + std::to_string(fixed) + " does not fit the " +
                     std::to_string(m.layers) + " layers of " + m.name);
      else if (middle_stages > 0 && (rest % middle_stages != 0 || rest == 0))
        err(key, "the remaining " + std::to_string(rest) + " layers do not divide evenly over the other " +
                     std::to_string(middle_stages) + " pipeline stages");
    } else if (m.layers % vstages != 0) {
      const std::string what = chunks > 1 ? "pp*chunks = " + std::to_string(par.pp) + "*" + std::to_string(chunks) +
                                                " = " + std::to_string(vstages)
                                          : "pipeline stages (pp=" + std::to_string(par.pp) + ")";
      err("parallel.pp", what + " do not divide the " + std::to_string(m.layers) + " layers of " + m.name +
                             " (give parallel.first_stage_layers/last_stage_layers or stage_layers for an uneven split)");
    }
  }

  // Sequence split.
  if (tr.seq_len % par.cp != 0)
    err("parallel.cp", "context parallel size (cp=" + std::to_string(par.cp) + ") does not divide seq_len=" +
                           std::to_string(tr.seq_len));
  if (par.sequence_parallel && par.tp > 1 && tr.seq_len % mul(par.tp, par.cp) != 0)
    err("training.seq_len", "seq_len=" + std::to_string(tr.seq_len) + " is not divisible by tp*cp = " +
                                std::to_string(mul(par.tp, par.cp)) + " (sequence_parallel splits it over tp)");

  // Batch: global_batch = micro_batch * dp * microbatches.
  if (dp > 0) {
    const std::int64_t per_step = mul(tr.micro_batch, dp);
    if (tr.global_batch % per_step != 0) {
      err("training.global_batch", "global_batch=" + std::to_string(tr.global_batch) +
                                       " is not a multiple of micro_batch*dp = " + std::to_string(tr.micro_batch) +
                                       "*" + std::to_string(dp) + " = " + std::to_string(per_step));
    } else {
      const std::string sched = to_string(s.schedule.name);
      const int microbatches = static_cast<int>(tr.global_batch / per_step);
      const schedules::PipelineShape shape{par.pp, microbatches, schedules::chunks_for(sched, par.vpp)};
      for (const auto& e : schedules::shape_errors(sched, shape)) err("schedule.name", "schedule " + sched + ": " + e);
    }
  }
}

// Diagnostics grouped by file (in order of first appearance), in source order inside each file.
std::vector<Diagnostic> sorted(std::vector<Diagnostic> diags) {
  std::map<std::string, std::size_t> first;
  for (const auto& d : diags) first.emplace(d.file, first.size());
  std::stable_sort(diags.begin(), diags.end(), [&](const Diagnostic& a, const Diagnostic& b) {
    const auto fa = first[a.file], fb = first[b.file];
    if (fa != fb) return fa < fb;
    if (a.line != b.line) return a.line < b.line;
    return a.column < b.column;
  });
  return diags;
}

// Position of a dotted key: the key itself, else its closest recorded parent, else the file.
Pos locate(const Ctx& ctx, const std::string& key, const std::string& file) {
  std::string k = key;
  for (;;) {
    if (auto it = ctx.where.find(k); it != ctx.where.end()) return it->second;
    auto dot = k.rfind('.');
    if (dot == std::string::npos) break;
    k.resize(dot);
  }
  return Pos{file, 0, 0};
}

Scenario resolve_tree(const Value& root, const std::string& path, const LoadOptions& opts,
                      std::vector<Diagnostic>& diags) {
  Ctx ctx;
  Scenario s;
  read_scenario(ctx, s, root, path, opts);
  if (ctx.diags.empty())
    check_scenario(s, [&](const std::string& key, const std::string& msg) { ctx.error(locate(ctx, key, path), msg); });
  diags = std::move(ctx.diags);
  return s;
}

// ---------------------------------------------------------------- overlays

// Overlay a table onto the scenario root; for a named model/hardware, dotted
// keys below it go to the "@model"/"@hardware" slot applied to the loaded file.
void overlay_root(Value& root, const Value& overlay) {
  for (const auto& [k, v] : overlay.items) {
    Value* cur = root.find(k);
    if ((k == "model" || k == "hardware") && v.is_table() && cur && cur->kind == Kind::string) {
      Value* slot = root.find("@" + k);
      if (!slot) {
        Value t;
        t.kind = Kind::table;
        t.pos = v.pos;
        slot = &root.set("@" + k, std::move(t));
      }
      detail::merge(*slot, v);
      continue;
    }
    if (cur && cur->is_table() && v.is_table()) detail::merge(*cur, v);
    else {
      root.set(k, v);
      if ((k == "model" || k == "hardware")) root.erase("@" + k);
    }
  }
}

// "--set a.b.c=VALUE" into a one-key overlay tree {a: {b: {c: VALUE}}}, positions naming the override.
bool parse_override(const std::string& spec, Value& out, std::vector<Diagnostic>& diags) {
  const Pos pos{"--set " + spec, 0, 0};
  auto fail = [&](const std::string& msg) {
    diags.push_back(Diagnostic{pos.file, 0, 0, msg});
    return false;
  };
  const auto eq = spec.find('=');
  if (eq == std::string::npos) return fail("expected KEY=VALUE (for example parallel.pp=8)");
  std::string key = spec.substr(0, eq);
  const std::string text = spec.substr(eq + 1);
  std::vector<std::string> segs;
  std::size_t start = 0;
  for (;;) {
    auto dot = key.find('.', start);
    segs.push_back(key.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  for (auto& s : segs) {
    s.erase(0, s.find_first_not_of(" \t"));
    s.erase(s.find_last_not_of(" \t") + 1);
    if (s.empty()) return fail("empty key segment in '" + key + "'");
  }
  Value v;
  bool parsed = false;
  try {
    Value doc = detail::parse_toml("v = " + text, pos.file);
    if (doc.items.size() == 1 && doc.find("v")) {
      v = *doc.find("v");
      parsed = true;
    }
  } catch (const detail::ParseFailure&) {
  }
  if (!parsed) {
    v = Value{};
    v.kind = Kind::string;
    v.str = text;
  }
  detail::set_positions(v, pos);
  for (auto it = segs.rbegin(); it != segs.rend(); ++it) {
    Value t;
    t.kind = Kind::table;
    t.pos = pos;
    t.key_pos = pos;
    v.key_pos = pos;
    t.items.emplace_back(*it, std::move(v));
    v = std::move(t);
  }
  out = std::move(v);
  return true;
}

// Refuses an override that would put a value where a table is needed on the way (e.g. model.layers on an inline value).
bool override_fits(const Value& root, const Value& overlay, const std::string& spec, std::vector<Diagnostic>& diags) {
  const Value* cur = &root;
  const Value* ov = &overlay;
  std::string path;
  while (ov->is_table() && ov->items.size() == 1 && ov->items[0].second.is_table()) {
    const auto& [k, next] = ov->items[0];
    path += (path.empty() ? "" : ".") + k;
    const Value* c = cur ? cur->find(k) : nullptr;
    if (c && !c->is_table() && !(cur == &root && (k == "model" || k == "hardware") && c->kind == Kind::string)) {
      diags.push_back(Diagnostic{"--set " + spec, 0, 0,
                                 "'" + path + "' is " + std::string(detail::kind_name(c->kind)) + ", not a table"});
      return false;
    }
    cur = (c && c->is_table()) ? c : nullptr;
    ov = &next;
  }
  return true;
}

LoadedScenario load_from_text(const std::string& text, const std::string& path, const LoadOptions& opts) {
  Value root;
  try {
    root = detail::parse_toml(text, path);
  } catch (const detail::ParseFailure& f) {
    throw ConfigError({Diagnostic{f.pos.file, f.pos.line, f.pos.col, f.message}});
  }

  std::vector<Diagnostic> diags;
  for (const auto& spec : opts.overrides) {
    Value ov;
    if (parse_override(spec, ov, diags) && override_fits(root, ov, spec, diags)) overlay_root(root, ov);
  }
  if (!diags.empty()) throw ConfigError(diags);

  Value whatifs;
  if (const Value* w = root.find("whatif")) {
    whatifs = *w;
    root.erase("whatif");
  }

  LoadedScenario out;
  out.base = resolve_tree(root, path, opts, diags);
  std::set<std::string> seen;
  for (const auto& d : diags) seen.insert(d.str());

  if (whatifs.kind != Kind::null) {
    if (whatifs.kind != Kind::array) {
      diags.push_back(Diagnostic{whatifs.pos.file, whatifs.pos.line, whatifs.pos.col,
                                 "'whatif' must be an array of tables ([[whatif]]), got " + describe_value(whatifs)});
    } else {
      Value rung = root;
      int index = 0;
      for (const auto& [k, e] : whatifs.items) {
        ++index;
        if (!e.is_table()) {
          diags.push_back(Diagnostic{e.pos.file, e.pos.line, e.pos.col,
                                     "each [[whatif]] entry must be a table, got " + describe_value(e)});
          continue;
        }
        WhatIf w;
        w.name = "whatif " + std::to_string(index);
        Value overlay = e;
        if (const Value* n = e.find("name")) {
          if (n->kind == Kind::string) w.name = n->str;
          else
            diags.push_back(Diagnostic{n->pos.file, n->pos.line, n->pos.col,
                                       "'whatif.name' must be a string, got " + describe_value(*n)});
          overlay.erase("name");
        }
        if (const Value* nested = e.find("whatif")) {
          diags.push_back(Diagnostic{nested->key_pos.file, nested->key_pos.line, nested->key_pos.col,
                                     "a [[whatif]] entry cannot contain another 'whatif'"});
          overlay.erase("whatif");
        }
        overlay_root(rung, overlay);
        std::vector<Diagnostic> rung_diags;
        w.scenario = resolve_tree(rung, path, opts, rung_diags);
        for (auto& d : rung_diags) {
          if (seen.count(d.str())) continue;
          seen.insert(d.str());
          d.message = "in whatif " + quote(w.name) + ": " + d.message;
          diags.push_back(std::move(d));
        }
        out.whatifs.push_back(std::move(w));
      }
    }
  }
  if (!diags.empty()) throw ConfigError(sorted(std::move(diags)));
  return out;
}

}  // namespace

// ---------------------------------------------------------------- public API

LoadedScenario load_scenario_string(const std::string& text, const std::string& path, const LoadOptions& opts) {
  return load_from_text(text, path, opts);
}

LoadedScenario load_scenario(const std::string& path, const LoadOptions& opts) {
  std::string text;
  if (!read_file(path, text)) throw ConfigError({Diagnostic{path, 0, 0, "cannot read scenario file"}});
  return load_from_text(text, path, opts);
}

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

hardware::HardwareSpec load_hardware(const std::string& path) {
  Ctx ctx;
  Value tree;
  hardware::HardwareSpec h;
  if (load_tree(ctx, path, tree, Pos{path, 0, 0})) {
    h = read_hardware_table(ctx, tree, stem_of(path));
    if (ctx.diags.empty())
      check_hardware(h, [&](const std::string& key, const std::string& msg) { ctx.error(locate(ctx, key, path), msg); });
  }
  if (!ctx.diags.empty()) throw ConfigError(std::move(ctx.diags));
  return h;
}

std::vector<Diagnostic> validate(const Scenario& s) {
  std::vector<Diagnostic> diags;
  check_scenario(s, [&](const std::string&, const std::string& msg) {
    diags.push_back(Diagnostic{s.source, 0, 0, msg});
  });
  return diags;
}

Scenario with_overrides(const std::string& scenario_path, const std::vector<std::string>& overrides,
                        const LoadOptions& opts) {
  LoadOptions o = opts;
  o.overrides.insert(o.overrides.end(), overrides.begin(), overrides.end());
  return load_scenario(scenario_path, o).base;
}

std::vector<std::string> list_models(const LoadOptions& opts) { return list_names("models", opts, "./x"); }
std::vector<std::string> list_hardware(const LoadOptions& opts) { return list_names("hardware", opts, "./x"); }

std::string describe(const Scenario& s) {
  std::ostringstream os;
  const auto& m = s.model;
  const auto& h = s.hardware;
  const auto& par = s.parallel;
  const auto& tr = s.training;
  const auto& f = s.features;
  auto yn = [](bool b) { return b ? "true" : "false"; };
  os << "scenario: " << s.name << (s.source.empty() ? "" : "  (" + s.source + ")") << "\n";
  os << "model: " << m.name << (s.model_ref.empty() ? "" : "  [" + s.model_ref + "]") << "\n"
     << "  layers " << m.layers << ", hidden " << m.hidden << ", ffn_hidden " << m.ffn_hidden << ", heads "
     << m.heads << ", kv_heads " << m.kv_heads << ", head_dim " << m.head_dim << ", vocab " << m.vocab << "\n"
     << "  activation " << (m.activation == models::Activation::swiglu ? "swiglu" : "gelu") << ", tied_embeddings "
     << yn(m.tied_embeddings) << "\n";
  if (m.moe)
    os << "  moe: experts " << m.moe->experts << ", top_k " << m.moe->top_k << ", expert_ffn_hidden "
       << m.moe->expert_ffn_hidden << ", shared_experts " << m.moe->shared_experts << ", dense_layers "
       << m.moe->dense_layers << "\n";
  if (m.mla)
    os << "  mla: q_lora_rank " << m.mla->q_lora_rank << ", kv_lora_rank " << m.mla->kv_lora_rank
       << ", qk_nope_head_dim " << m.mla->qk_nope_head_dim << ", qk_rope_head_dim " << m.mla->qk_rope_head_dim
       << ", v_head_dim " << m.mla->v_head_dim << "\n";
  os << "hardware: " << h.name << (s.hardware_ref.empty() ? "" : "  [" + s.hardware_ref + "]") << "\n"
     << "  peak " << h.peak_flops_bf16 / 1e12 << " TFLOP/s bf16, " << h.peak_flops_fp8 / 1e12 << " TFLOP/s fp8; HBM "
     << h.hbm_bytes / (1024.0 * 1024.0 * 1024.0) << " GiB at " << h.hbm_bandwidth / 1e9 << " GB/s\n"
     << "  " << h.gpus_per_node << " GPUs/node; NVLink " << h.nvlink_bandwidth / 1e9 << " GB/s, "
     << h.nvlink_latency * 1e6 << " us; NIC " << h.nic_bandwidth / 1e9 << " GB/s, " << h.nic_latency * 1e6
     << " us; launch " << h.launch_overhead * 1e6 << " us, host " << h.host_overhead * 1e6
     << " us per op (" << h.host_compiled_overhead * 1e6 << " us per compiled call, "
     << h.host_backward_overhead * 1e6 << " us per backward op";
  if (h.host_checkpoint_overhead > 0 || h.host_recompute_overhead > 0)
    os << "; checkpoint " << h.host_checkpoint_overhead * 1e6 << " us per region forward, "
       << h.host_recompute_overhead * 1e6 << " us per recomputation";
  os << ")\n";
  if (!s.calibration_path.empty()) os << "calibration: " << s.calibration_path << "\n";
  os << "cluster: " << s.gpus << " GPUs";
  if (h.gpus_per_node > 0) os << " (" << (s.gpus + h.gpus_per_node - 1) / h.gpus_per_node << " nodes)";
  os << "\n";
  os << "training: seq_len " << tr.seq_len << ", global_batch " << tr.global_batch << ", micro_batch "
     << tr.micro_batch << ", precision " << to_string(tr.precision) << ", master_weights "
     << to_string(tr.master_weights);
  if (tr.tokens_to_train > 0) os << ", tokens_to_train " << tr.tokens_to_train;
  os << "\n";
  os << "parallel: tp " << par.tp << ", pp " << par.pp << ", dp " << par.dp << " (gpus / (tp*pp*cp)), cp " << par.cp
     << ", ep " << par.ep << ", vpp " << par.vpp << "\n"
     << "  sequence_parallel " << yn(par.sequence_parallel) << ", distributed_optimizer "
     << yn(par.distributed_optimizer);
  os << "\n";
  if (par.first_stage_layers || par.last_stage_layers)
    os << "  first_stage_layers " << par.first_stage_layers << ", last_stage_layers " << par.last_stage_layers << "\n";
  if (!par.stage_layers.empty()) {
    os << "  stage_layers [";
    for (std::size_t i = 0; i < par.stage_layers.size(); ++i) os << (i ? ", " : "") << par.stage_layers[i];
    os << "]\n";
  }
  if (par.dp > 0 && tr.micro_batch > 0 && tr.global_batch % (tr.micro_batch * par.dp) == 0)
    os << "  micro-batches per step (per pipeline): " << s.microbatches() << "\n";
  os << "schedule: " << to_string(s.schedule.name) << "\n";
  if (s.schedule.costs) {
    const auto& c = *s.schedule.costs;
    os << "  costs (ms): f " << c.f * 1e3 << ", b " << c.b * 1e3;
    if (c.w) os << ", w " << *c.w * 1e3;
    os << ", comm " << c.comm * 1e3;
    if (c.fb) os << ", fb " << *c.fb * 1e3;
    os << "\n";
  }
  os << "features: flash_attention " << yn(f.flash_attention) << ", fused_kernels " << yn(f.fused_kernels)
     << ", overlap_grad_reduce " << yn(f.overlap_grad_reduce) << ", overlap_param_gather "
     << yn(f.overlap_param_gather) << "\n"
     << "  tp_comm_overlap " << yn(f.tp_comm_overlap) << ", overlap_p2p_comm " << yn(f.overlap_p2p_comm) << ", recompute " << to_string(f.recompute) << ", cuda_graphs "
     << yn(f.cuda_graphs) << ", python_gc " << yn(f.python_gc) << ", dataloader_workers " << f.dataloader_workers
     << ", nccl_algo " << to_string(f.nccl_algo) << "\n";
  if (s.cost.price_per_gpu_hour > 0) os << "cost: " << s.cost.price_per_gpu_hour << " USD per GPU-hour\n";
  os << "seed: " << s.seed << "\n";
  return os.str();
}

}  // namespace mfusim::config
