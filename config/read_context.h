#pragma once
// Internal to config/: the reading context shared by every loader (typed
// reads that record each key's position, unknown-key suggestions), the text
// helpers, and the functions one loader file calls in another.
#include <climits>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "config/loader.h"
#include "config/value.h"

namespace mfusim::config::detail {

constexpr std::int64_t kMaxGpus = 1 << 24;
constexpr std::int64_t kMaxBatch = 1 << 28;
constexpr std::int64_t kMaxSeq = 1 << 24;

std::int64_t mul(std::int64_t a, std::int64_t b);   // saturates at INT64_MAX
std::size_t edit_distance(const std::string& a, const std::string& b);
// " (did you mean 'x'?)" for the closest candidate within a sensible distance.
std::string suggest(const std::string& key, const std::vector<std::string>& known);
std::string quote(const std::string& s);
std::string describe_value(const Value& v);
std::string fmt(double x);
bool read_file(const std::string& path, std::string& out);
bool ends_with(const std::string& s, const std::string& suffix);
std::string stem_of(const std::string& path);

// ---------------------------------------------------------------- reading context

using Kind = Value::Kind;

struct Ctx {
  std::vector<Diagnostic> diags;
  std::map<std::string, Pos> where;   // scenario dotted key -> where it was set

  void error(const Pos& p, std::string msg) { diags.push_back(Diagnostic{p.file, p.line, p.col, std::move(msg)}); }

  // Unknown keys, with the closest known key suggested.
  // `internal`: keys the loader itself put there (the scenario root's "@model"/"@hardware" overlay
  // slots), which user input cannot spell (reject_reserved_keys refuses them on the way in).
  void check_keys(const Value& t, const std::vector<std::string>& known, const std::string& prefix,
                  const std::vector<std::string>& internal = {}) {
    for (const auto& [k, v] : t.items) {
      if (std::find(internal.begin(), internal.end(), k) != internal.end()) continue;
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

// Diagnostics grouped by file (in order of first appearance), in source order inside each file.
std::vector<Diagnostic> sorted(std::vector<Diagnostic> diags);
// Position of a dotted key: the key itself, else its closest recorded parent, else the file.
Pos locate(const Ctx& ctx, const std::string& key, const std::string& file);

// model_file.cpp, hf_config.cpp
models::ModelSpec read_model_table(Ctx& ctx, const Value& t, const std::string& default_name);
// Hugging Face config.json (transformers' PretrainedConfig) to ModelSpec.
models::ModelSpec read_hf_config(Ctx& ctx, const Value& root, const std::string& default_name);
models::ModelSpec model_from_tree(Ctx& ctx, const std::string& path, const Value& tree);

// hardware_file.cpp
hardware::HardwareSpec read_hardware_table(Ctx& ctx, const Value& t, const std::string& default_name);

// data_files.cpp
std::vector<std::filesystem::path> data_roots(const std::string& scenario_path, const LoadOptions& opts);
// A file's path relative to the shipped data (the source tree or the installed data directory), e.g.
// "hardware/calibration/h200.toml"; "" when the file is not one of them (a user's copy elsewhere).
std::string shipped_name(const std::string& path);
std::vector<std::string> list_names(const char* sub, const LoadOptions& opts, const std::string& from);
// A named model/hardware: a path when it looks like one, else `sub/NAME.toml|json` in the data roots.
// " (did you mean 'h100-sxm'?)" for a model or hardware name: a name that the
// given one starts or is contained in first (the shortest), then the closest by
// edit distance (suggest).
std::string suggest_name(const std::string& name, const std::vector<std::string>& known);
std::string find_data_file(const char* sub, const std::string& name, const std::string& scenario_path,
                           const LoadOptions& opts);
// Loads a data file into a tree; parse errors become diagnostics.
bool load_tree(Ctx& ctx, const std::string& path, Value& out, const Pos& ref);

// checks.cpp: ranges and combinations (SPEC §3), on values from a file or built in code.
using Sink = std::function<void(const std::string& key, const std::string& message)>;
void check_model(const models::ModelSpec& m, const Sink& err);
void check_hardware(const hardware::HardwareSpec& h, const Sink& err);
void check_scenario(const Scenario& s, const Sink& err);

// overrides.cpp
// Overlay a table onto the scenario root; for a named model/hardware, dotted
// keys below it go to the "@model"/"@hardware" slot applied to the loaded file.
void overlay_root(Value& root, const Value& overlay);
// "--set a.b.c=VALUE" into a one-key overlay tree {a: {b: {c: VALUE}}}, positions naming the override.
bool parse_override(const std::string& spec, Value& out, std::vector<Diagnostic>& diags);
// Refuses an override that would put a value where a table is needed on the way (e.g. model.layers on an inline value).
bool override_fits(const Value& root, const Value& overlay, const std::string& spec, std::vector<Diagnostic>& diags);

}  // namespace mfusim::config::detail
