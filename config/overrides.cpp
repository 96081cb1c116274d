// --set KEY=VALUE overrides and overlays ([[whatif]] rungs, --set) on a scenario tree.
#include <algorithm>

#include "config/read_context.h"

namespace mfusim::config::detail {

namespace fs = std::filesystem;
using Kind = Value::Kind;

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
    // features.attention and features.flash_attention say one thing: an overlay that
    // sets one of them (a [[whatif]] rung, a --set) replaces the other's earlier value.
    if (k == "features" && cur && cur->is_table() && v.is_table()) {
      const bool a = v.find("attention") != nullptr, fa = v.find("flash_attention") != nullptr;
      if (a && !fa) cur->erase("flash_attention");
      if (fa && !a) cur->erase("attention");
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
  // Every node of the override carries this label: a long spec is cut, so that its
  // copies stay linear in the spec's size (an 80 KB inline table is thousands of nodes).
  constexpr std::size_t kLabel = 200;
  const Pos pos{"--set " + (spec.size() > kLabel ? spec.substr(0, kLabel) + "..." : spec), 0, 0};
  auto fail = [&](const std::string& msg) {
    diags.push_back(Diagnostic{pos.file, 0, 0, msg});
    return false;
  };
  const auto eq = spec.find('=');
  if (eq == std::string::npos) return fail("expected KEY=VALUE (for example parallel.pp=8)");
  std::string key = spec.substr(0, eq);
  const std::string text = spec.substr(eq + 1);
  // The tree below is one table per segment: at most kMaxNesting of them (checked before splitting).
  if (std::count(key.begin(), key.end(), '.') >= detail::kMaxNesting)
    return fail("the key has " + std::to_string(std::count(key.begin(), key.end(), '.') + 1) +
                " dotted segments; keys nest at most " + std::to_string(detail::kMaxNesting) + " levels deep");
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

}  // namespace mfusim::config::detail

namespace mfusim::config {

using namespace detail;

Scenario with_overrides(const std::string& scenario_path, const std::vector<std::string>& overrides,
                        const LoadOptions& opts) {
  LoadOptions o = opts;
  o.overrides.insert(o.overrides.end(), overrides.begin(), overrides.end());
  return load_scenario(scenario_path, o).base;
}

}  // namespace mfusim::config
