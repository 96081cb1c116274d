#pragma once
// A parsed configuration document (TOML or JSON) as a small tree whose every
// node and key remembers where it came from (file, line, column). Copies keep
// their positions, so overlays ([[whatif]], --set) still point at the text
// that set each value. Internal to config/.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mfusim::config::detail {

struct Pos {
  std::string file;        // file path, or "--set KEY=VALUE" for an override
  int line = 0, col = 0;   // 0: no position
};

struct Member;

struct Value {
  enum class Kind { null, table, array, string, integer, floating, boolean, datetime };
  Kind kind = Kind::null;
  Pos pos;                 // where the value starts
  Pos key_pos;             // where its key starts (table members only)
  std::string str;         // string; datetime as text
  std::int64_t i = 0;
  double d = 0;
  bool b = false;
  std::vector<Member> items;   // table members in order; array elements (key "")

  bool is_table() const { return kind == Kind::table; }
  bool is_number() const { return kind == Kind::integer || kind == Kind::floating; }
  double number() const { return kind == Kind::integer ? static_cast<double>(i) : d; }
  const Value* find(const std::string& key) const;
  Value* find(const std::string& key);
  Value& set(const std::string& key, Value v);   // replace or append
  void erase(const std::string& key);
};

struct Member {
  std::string first;
  Value second;
  Member(std::string k, Value v) : first(std::move(k)), second(std::move(v)) {}
};

const char* kind_name(Value::Kind);   // "an integer", "a table", ...

// Both throw ParseFailure with a position on malformed input; never crash.
struct ParseFailure {
  Pos pos;
  std::string message;
};
Value parse_toml(const std::string& text, const std::string& path);   // check_toml_nesting first
Value parse_json(const std::string& text, const std::string& path);

// The deepest nesting a configuration document may have: table headers,
// dotted keys, inline tables and arrays together (docs/scenario.md). toml++
// and the tree walks recurse once per level, so the cap keeps them off the
// end of the stack; every shipped file nests at most 4 levels.
constexpr int kMaxNesting = 64;
// A linear scan of TOML text for its nesting depth, before toml++ sees it:
// throws ParseFailure at the key, header or bracket that goes past kMaxNesting.
void check_toml_nesting(const std::string& text, const std::string& path);

// Overlay `src` onto `dst`: tables merge key by key, anything else replaces.
void merge(Value& dst, const Value& src);
// Rewrites every position in the tree (used for --set values).
void set_positions(Value& v, const Pos& p);

}  // namespace mfusim::config::detail
