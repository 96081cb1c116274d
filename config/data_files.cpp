// Data files: where a named model/hardware file is found, listing them, reading one into a tree.
#include <cctype>
#include <set>

#include "config/read_context.h"

#ifndef MFUSIM_SOURCE_DIR
#define MFUSIM_SOURCE_DIR ""
#endif
#ifndef MFUSIM_DATA_DIR
#define MFUSIM_DATA_DIR ""
#endif

namespace mfusim::config::detail {

namespace fs = std::filesystem;
using Kind = Value::Kind;

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

std::string shipped_name(const std::string& path) {
  std::error_code ec;
  const fs::path file = fs::weakly_canonical(fs::path(path), ec);
  if (ec || path.empty()) return "";
  for (const char* root : {MFUSIM_SOURCE_DIR, MFUSIM_DATA_DIR}) {
    if (std::string(root).empty()) continue;
    const fs::path r = fs::weakly_canonical(fs::path(root), ec);
    if (ec) continue;
    const fs::path rel = file.lexically_relative(r);
    if (!rel.empty() && *rel.begin() != ".." && rel.is_relative()) return rel.generic_string();
  }
  return "";
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

std::string suggest_name(const std::string& name, const std::vector<std::string>& known) {
  if (!name.empty() && name.size() <= 200) {
    auto lower = [](std::string s) {
      for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return s;
    };
    const std::string n = lower(name);
    std::string best;
    int best_rank = 3;   // 0: starts with the name, 1: contains it
    for (const auto& k : known) {
      const std::string lk = lower(k);
      const int rank = lk.rfind(n, 0) == 0 ? 0 : lk.find(n) != std::string::npos ? 1 : 3;
      if (rank < best_rank || (rank == best_rank && rank < 3 && (k.size() < best.size() || (k.size() == best.size() && k < best)))) {
        best_rank = rank;
        best = k;
      }
    }
    if (best_rank < 3 && best != name) return " (did you mean '" + best + "'?)";
  }
  return suggest(name, known);
}

}  // namespace mfusim::config::detail

namespace mfusim::config {

using namespace detail;

std::vector<std::string> list_models(const LoadOptions& opts) { return list_names("models", opts, "./x"); }
std::vector<std::string> list_hardware(const LoadOptions& opts) { return list_names("hardware", opts, "./x"); }
std::string model_file(const std::string& name, const LoadOptions& opts) {
  return find_data_file("models", name, "./x", opts);
}
std::string hardware_file(const std::string& name, const LoadOptions& opts) {
  return find_data_file("hardware", name, "./x", opts);
}

}  // namespace mfusim::config
