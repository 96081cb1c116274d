// Internal to hardware/: the TOML helpers the calibration reader (calibration_io.cpp) and the
// probe fit (calibration.cpp) share: errors with file:line:col, the file parse with the nesting
// pre-scan, the physical bounds' text, and typed reads with positions (Reader).
#pragma once

#include <toml++/toml.h>

#include <cmath>
#include <initializer_list>
#include <set>
#include <string>

#include "hardware/calibration.h"

namespace mfusim::hardware::detail {

[[noreturn]] void fail(const std::string& file, const toml::source_region& where, const std::string& what);
[[noreturn]] void fail(const std::string& file, const std::string& what);
toml::table parse_file(const std::string& path);
bool within(double v, const CalibrationBound& b);
// What a value outside its bound must be: ">= 0", "> 0", or the whole range.
std::string bound_text(const CalibrationBound& b, double v);
std::string fmt(const char* f, double v);

// Typed access with positions in errors.
struct Reader {
  std::string file;
  const toml::table* t;
  toml::source_region where;

  const toml::node* node(const char* key) const { return t->get(key); }
  double num(const char* key, bool required = true, double def = 0) const {
    const toml::node* n = node(key);
    if (!n) {
      if (required) fail(file, where, std::string("missing key '") + key + "'");
      return def;
    }
    if (auto v = n->value<double>()) {
      if (!std::isfinite(*v)) fail(file, n->source(), std::string("'") + key + "' must be finite");
      return *v;
    }
    fail(file, n->source(), std::string("'") + key + "' must be a number");
  }
  double nonneg(const char* key, bool required = true, double def = 0) const {
    double v = num(key, required, def);
    if (v < 0) fail(file, node(key)->source(), std::string("'") + key + "' must be >= 0");
    return v;
  }
  // A number within a physical bound (calibration.h), in the file's units.
  double bounded(const char* key, const CalibrationBound& b, bool required = true) const {
    const double v = num(key, required, b.lo);
    if (node(key) && !within(v, b)) fail(file, node(key)->source(), "'" + std::string(key) + "' " + bound_text(b, v));
    return v;
  }
  std::string str(const char* key, const std::string& def = "") const {
    const toml::node* n = node(key);
    if (!n) return def;
    if (auto v = n->value<std::string>()) return *v;
    fail(file, n->source(), std::string("'") + key + "' must be a string");
  }
  Reader sub(const char* key) const {
    const toml::node* n = node(key);
    if (!n->is_table()) fail(file, n->source(), std::string("'") + key + "' must be a table");
    return Reader{file, n->as_table(), n->source()};
  }
  void only(std::initializer_list<const char*> keys) const { only(std::set<std::string>(keys.begin(), keys.end())); }
  void only(const std::set<std::string>& ok) const {
    for (auto&& [k, v] : *t)
      if (!ok.count(std::string(k.str()))) fail(file, v.source(), "unknown key '" + std::string(k.str()) + "'");
  }
};

}  // namespace mfusim::hardware::detail
