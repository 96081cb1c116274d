// Scenario shapes (shapes.h): a minimal TOML reader, a model's dimensions from a scenario file
// or a --model list, and the per-rank GEMMs of one layer + LM head.
#include "shapes.h"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace mfusim::probe {

std::map<std::string, std::string> read_flat_toml(const std::string& path, const std::string& prefix) {
  std::ifstream f(path);
  if (!f) die("cannot read " + path);
  std::map<std::string, std::string> kv;
  std::string line, table;
  auto trim = [](std::string s) {
    std::size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
    return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
  };
  while (std::getline(f, line)) {
    bool in_str = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '"') in_str = !in_str;
      if (line[i] == '#' && !in_str) { line.resize(i); break; }
    }
    line = trim(line);
    if (line.empty()) continue;
    if (line[0] == '[') {
      table = trim(line.substr(line.find_first_not_of('['), line.find(']') - line.find_first_not_of('[')));
      continue;
    }
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string k = trim(line.substr(0, eq)), v = trim(line.substr(eq + 1));
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    kv[prefix + (table.empty() ? "" : table + ".") + k] = v;
  }
  return kv;
}

ModelDims dims_from_scenario(const std::string& path) {
  auto kv = read_flat_toml(path);
  std::string dir = path.substr(0, path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  auto it = kv.find("model");
  if (it != kv.end()) {
    std::vector<std::string> cands = {dir + "models/" + it->second + ".toml", dir + "../models/" + it->second + ".toml",
                                      "models/" + it->second + ".toml"};
    bool found = false;
    for (auto& cp : cands) {
      if (std::ifstream(cp)) {
        for (auto& [k, v] : read_flat_toml(cp, "model.")) kv[k] = v;
        found = true;
        break;
      }
    }
    if (!found) die(path + ": model file for \"" + it->second + "\" not found under models/");
  }
  auto get = [&](const std::string& k, long long def) -> long long {
    auto i = kv.find(k);
    if (i == kv.end()) {
      if (def < 0) die(path + ": missing key " + k);
      return def;
    }
    return std::stoll(i->second);
  };
  ModelDims d;
  d.name = kv.count("name") ? kv["name"] : path;
  d.hidden = get("model.hidden", -1);
  d.ffn = get("model.ffn_hidden", -1);
  d.heads = get("model.heads", -1);
  d.kv_heads = get("model.kv_heads", d.heads);
  d.vocab = get("model.vocab", -1);
  d.layers = get("model.layers", 0);
  d.seq = get("training.seq_len", -1);
  d.mbs = get("training.micro_batch", 1);
  d.tp = get("parallel.tp", 1);
  d.sp = kv.count("parallel.sequence_parallel") && kv["parallel.sequence_parallel"] == "true";
  d.swiglu = !kv.count("model.activation") || kv["model.activation"] == "swiglu";
  return d;
}

ModelDims dims_from_list(const std::string& spec) {
  ModelDims d;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto eq = item.find('=');
    if (eq == std::string::npos) die("--model: expected key=value, got " + item);
    std::string k = item.substr(0, eq), v = item.substr(eq + 1);
    if (k == "name") { d.name = v; continue; }
    if (k == "activation") { d.swiglu = v == "swiglu"; continue; }
    long long x = std::stoll(v);
    if (k == "hidden") d.hidden = x;
    else if (k == "ffn" || k == "ffn_hidden") d.ffn = x;
    else if (k == "heads") d.heads = x;
    else if (k == "kv_heads") d.kv_heads = x;
    else if (k == "vocab") d.vocab = x;
    else if (k == "layers") d.layers = x;
    else if (k == "seq" || k == "seq_len") d.seq = x;
    else if (k == "mbs" || k == "micro_batch") d.mbs = x;
    else if (k == "tp") d.tp = x;
    else die("--model: unknown key " + k);
  }
  if (!d.kv_heads) d.kv_heads = d.heads;
  if (!d.hidden || !d.ffn || !d.heads || !d.vocab || !d.seq) die("--model needs hidden, ffn, heads, vocab, seq");
  return d;
}

std::vector<Shape> scenario_shapes(const ModelDims& d) {
  long long T = d.mbs * d.seq, hd = d.hidden / d.heads, tp = d.tp;
  struct G { const char* name; long long n, k; };
  std::vector<G> gs = {{"qkv", (d.heads + 2 * d.kv_heads) * hd / tp, d.hidden},
                       {"attn_out", d.hidden, d.heads * hd / tp},
                       {"mlp_up", (d.swiglu ? 2 : 1) * d.ffn / tp, d.hidden},
                       {"mlp_down", d.hidden, d.ffn / tp},
                       {"lm_head", d.vocab / tp, d.hidden}};
  std::vector<Shape> out;
  for (auto& g : gs) {
    std::string base = d.name + ":" + g.name;
    out.push_back({base + ":F", T, g.n, g.k});
    out.push_back({base + ":B", T, g.k, g.n});
    out.push_back({base + ":W", g.n, g.k, T});
  }
  return out;
}

std::vector<Shape> parse_shapes(const std::string& spec) {
  std::vector<Shape> out;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ';')) {
    if (item.empty()) continue;
    std::string label = "shape";
    auto colon = item.rfind(':');
    if (colon != std::string::npos) { label = item.substr(0, colon); item = item.substr(colon + 1); }
    long long m, n, k;
    if (std::sscanf(item.c_str(), "%lld,%lld,%lld", &m, &n, &k) != 3) die("--shapes: bad entry " + item);
    out.push_back({label, m, n, k});
  }
  return out;
}

}  // namespace mfusim::probe
