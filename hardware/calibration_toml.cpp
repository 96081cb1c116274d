// The shared TOML helpers of the calibration files (calibration_toml.h).
#include "hardware/calibration_toml.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "config/loader.h"

namespace mfusim::hardware::detail {

[[noreturn]] void fail(const std::string& file, const toml::source_region& where, const std::string& what) {
  std::ostringstream o;
  o << file << ":" << where.begin.line << ":" << where.begin.column << ": error: " << what;
  throw std::runtime_error(o.str());
}
[[noreturn]] void fail(const std::string& file, const std::string& what) {
  throw std::runtime_error(file + ":1:1: error: " + what);
}

toml::table parse_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail(path, "cannot read file");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  // toml++ recurses once per dotted-key segment and table level: refuse deep nesting
  // first (a linear scan; a ConfigError "file:line:col: error: ...", exit 2), as every
  // config/ loader does, so a hostile probe or calibration file cannot overflow the stack.
  config::check_toml_nesting(text, path);
  try {
    return toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    fail(path, e.source(), std::string(e.description()));
  }
}

bool within(double v, const CalibrationBound& b) {
  return std::isfinite(v) && (b.lo_open ? v > b.lo : v >= b.lo) && v <= b.hi;
}
// What a value outside its bound must be: ">= 0", "> 0", or the whole range.
std::string bound_text(const CalibrationBound& b, double v) {
  char buf[160];
  if (!std::isfinite(v)) return "must be finite";
  if (b.lo == 0 && v < 0) return "must be >= 0";
  if (b.lo == 0 && b.lo_open && v == 0) return "must be > 0";
  std::snprintf(buf, sizeof buf, "must be in %s%g, %g] (a physical bound, docs/scenario.md, Limits), got %g",
                b.lo_open ? "(" : "[", b.lo, b.hi, v);
  return buf;
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

}  // namespace mfusim::hardware::detail
