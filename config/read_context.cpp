// Shared by every loader: diagnostics, text helpers, diagnostic order and key positions.
#include "config/read_context.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace mfusim::config {

std::string Diagnostic::str() const {
  std::string out = file.empty() ? std::string("<input>") : file;
  if (line > 0) {   // appended piecewise: GCC 12's -Wrestrict misfires on ":" + std::to_string(...) here
    out += ':';
    out += std::to_string(line);
    out += ':';
    out += std::to_string(column);
  }
  out += ": error: ";
  out += message;
  return out;
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

void check_toml_nesting(const std::string& text, const std::string& path) {
  try {
    detail::check_toml_nesting(text, path);
  } catch (const detail::ParseFailure& f) {
    throw ConfigError({Diagnostic{f.pos.file, f.pos.line, f.pos.col, f.message}});
  }
}

}  // namespace mfusim::config

namespace mfusim::config::detail {

namespace fs = std::filesystem;
using Kind = Value::Kind;

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

}  // namespace mfusim::config::detail
