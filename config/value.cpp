// TOML (through toml++) and JSON (a small recursive-descent parser: no new
// dependency) into the positioned tree of config/value.h.
#include "config/value.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <toml++/toml.h>

namespace mfusim::config::detail {

const Value* Value::find(const std::string& key) const {
  for (const auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

Value* Value::find(const std::string& key) {
  for (auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

Value& Value::set(const std::string& key, Value v) {
  if (Value* old = find(key)) {
    *old = std::move(v);
    return *old;
  }
  items.emplace_back(key, std::move(v));
  return items.back().second;
}

void Value::erase(const std::string& key) {
  for (auto it = items.begin(); it != items.end(); ++it)
    if (it->first == key) {
      items.erase(it);
      return;
    }
}

const char* kind_name(Value::Kind k) {
  switch (k) {
    case Value::Kind::null: return "null";
    case Value::Kind::table: return "a table";
    case Value::Kind::array: return "an array";
    case Value::Kind::string: return "a string";
    case Value::Kind::integer: return "an integer";
    case Value::Kind::floating: return "a float";
    case Value::Kind::boolean: return "a boolean";
    case Value::Kind::datetime: return "a date/time";
  }
  return "?";
}

void merge(Value& dst, const Value& src) {
  if (dst.is_table() && src.is_table()) {
    // Members found through an index, not find(): linear in the two tables' sizes.
    std::unordered_map<std::string, std::size_t> at;
    at.reserve(dst.items.size() + src.items.size());
    for (std::size_t j = 0; j < dst.items.size(); ++j) at.emplace(dst.items[j].first, j);
    for (const auto& [k, v] : src.items) {
      const auto it = at.find(k);
      if (it == at.end()) {
        at.emplace(k, dst.items.size());
        dst.items.emplace_back(k, v);
        continue;
      }
      Value& d = dst.items[it->second].second;
      if (d.is_table() && v.is_table()) {
        merge(d, v);
        d.key_pos = v.key_pos;
      } else {
        d = v;
      }
    }
    return;
  }
  dst = src;
}

void set_positions(Value& v, const Pos& p) {
  v.pos = p;
  v.key_pos = p;
  for (auto& [k, c] : v.items) set_positions(c, p);
}


// ---------------------------------------------------------------- TOML nesting

namespace {

// One pass over the text, never recursing: strings and comments skipped,
// each key's depth = its container's depth + its dotted segments.
class NestingScan {
 public:
  NestingScan(const std::string& text, const std::string& path) : s_(text), path_(path) {}

  void run() {
    bool want_key = true;   // a key (or header) comes next
    int value_depth = 0;    // depth of the value after the last key
    while (i_ < s_.size()) {
      const char c = peek();
      if (c == ' ' || c == '\t' || c == '\r') {
        adv();
        continue;
      }
      if (c == '\n') {
        adv();
        if (stack_.empty()) want_key = true;
        continue;
      }
      if (c == '#') {
        while (i_ < s_.size() && peek() != '\n') adv();
        continue;
      }
      // TOML has only ASCII outside strings and comments; toml++'s key parser asserts
      // (debug) or reaches an unreachable branch (release) on some other bytes there.
      if (const auto u = static_cast<unsigned char>(c); u >= 0x80 || u < 0x20 || u == 0x7f) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned>(u));
        throw ParseFailure{Pos{path_, line_, col_}, std::string(u >= 0x80 ? "a non-ASCII" : "a control") +
                                                        " character (byte " + hex +
                                                        ") outside a string or comment"};
      }
      if (want_key) {
        const Pos at{path_, line_, col_};
        if (stack_.empty() && c == '[') {   // [a.b] or [[a.b]]: the tables below start at its depth
          adv();
          const bool array = peek() == '[';
          if (array) adv();
          header_depth_ = key_segments() + (array ? 1 : 0);
          limit(header_depth_, at);
          want_key = false;
          continue;
        }
        if (c == '}' && !stack_.empty() && stack_.back().table) {   // {} or a trailing comma
          stack_.pop_back();
          adv();
          want_key = false;
          continue;
        }
        const int n = key_segments();
        value_depth = (stack_.empty() ? header_depth_ : stack_.back().depth) + n;
        limit(value_depth, at);
        want_key = false;
        continue;
      }
      if (c == '"' || c == '\'') {
        skip_string();
        continue;
      }
      if (c == '[' || c == '{') {
        const Pos at{path_, line_, col_};
        const int d = (!stack_.empty() && !stack_.back().table) ? stack_.back().depth + 1 : value_depth;
        limit(d, at);
        stack_.push_back(Open{c == '{', d});
        adv();
        if (c == '{') want_key = true;
        continue;
      }
      if ((c == ']' || c == '}') && !stack_.empty() && stack_.back().table == (c == '}')) stack_.pop_back();
      else if (c == ',' && !stack_.empty() && stack_.back().table) want_key = true;
      adv();
    }
  }

 private:
  struct Open {
    bool table;   // inline table; else array
    int depth;
  };
  const std::string& s_;
  const std::string& path_;
  std::size_t i_ = 0;
  int line_ = 1, col_ = 1;
  int header_depth_ = 0;
  std::vector<Open> stack_;

  char peek(std::size_t k = 0) const { return i_ + k < s_.size() ? s_[i_ + k] : '\0'; }
  void adv() {
    if (s_[i_] == '\n') {
      ++line_;
      col_ = 1;
    } else if ((static_cast<unsigned char>(s_[i_]) & 0xC0) != 0x80) {
      ++col_;   // columns count characters, not UTF-8 continuation bytes
    }
    ++i_;
  }
  void limit(int depth, const Pos& at) const {
    if (depth > kMaxNesting)
      throw ParseFailure{at, "tables nest more than " + std::to_string(kMaxNesting) +
                                 " levels deep here (table headers, dotted keys, inline tables and arrays together)"};
  }
  static bool bare(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  }
  void blanks() {
    while (peek() == ' ' || peek() == '\t') adv();
  }
  // The segments of a (dotted) key; stops at the first character after one that cannot continue it.
  int key_segments() {
    int n = 0;
    for (;;) {
      blanks();
      const char c = peek();
      if (c == '"' || c == '\'') skip_string();
      else if (bare(c)) while (bare(peek())) adv();
      else   // toml++ asserts on some of these (`[=a]`): refused here, with the position
        throw ParseFailure{Pos{path_, line_, col_}, "expected a key (bare or quoted) here"};
      ++n;
      blanks();
      if (peek() != '.') return n;
      adv();
    }
  }
  // A basic or literal string, one-line or multi-line; an unterminated one ends at the line (toml++ reports it).
  void skip_string() {
    const char q = peek();
    const bool escapes = q == '"';
    if (peek(1) == q && peek(2) == q) {
      adv(), adv(), adv();
      while (i_ < s_.size()) {
        if (escapes && peek() == '\\') {
          adv();
          if (i_ < s_.size()) adv();
        } else if (peek() == q && peek(1) == q && peek(2) == q) {
          while (peek() == q) adv();   // up to two quotes may end the content
          return;
        } else {
          adv();
        }
      }
      return;
    }
    adv();
    while (i_ < s_.size() && peek() != '\n') {
      if (escapes && peek() == '\\') {
        adv();
        if (i_ < s_.size() && peek() != '\n') adv();
      } else if (peek() == q) {
        adv();
        return;
      } else {
        adv();
      }
    }
  }
};

}  // namespace

void check_toml_nesting(const std::string& text, const std::string& path) { NestingScan(text, path).run(); }

// ---------------------------------------------------------------- TOML

namespace {

Pos pos_of(const toml::source_region& r, const std::string& path) {
  return Pos{path, static_cast<int>(r.begin.line), static_cast<int>(r.begin.column)};
}

Value from_toml(const toml::node& n, const std::string& path) {
  Value v;
  v.pos = pos_of(n.source(), path);
  if (const auto* t = n.as_table()) {
    v.kind = Value::Kind::table;
    for (const auto& [k, child] : *t) {
      Value c = from_toml(child, path);
      c.key_pos = pos_of(k.source(), path);
      if (c.key_pos.line == 0) c.key_pos = c.pos;
      v.items.emplace_back(std::string(k.str()), std::move(c));
    }
  } else if (const auto* a = n.as_array()) {
    v.kind = Value::Kind::array;
    for (const auto& child : *a) {
      Value c = from_toml(child, path);
      c.key_pos = c.pos;
      v.items.emplace_back(std::string(), std::move(c));
    }
  } else if (const auto* s = n.as_string()) {
    v.kind = Value::Kind::string;
    v.str = s->get();
  } else if (const auto* i = n.as_integer()) {
    v.kind = Value::Kind::integer;
    v.i = i->get();
  } else if (const auto* f = n.as_floating_point()) {
    v.kind = Value::Kind::floating;
    v.d = f->get();
  } else if (const auto* b = n.as_boolean()) {
    v.kind = Value::Kind::boolean;
    v.b = b->get();
  } else {
    v.kind = Value::Kind::datetime;
    std::ostringstream os;
    if (const auto* dt = n.as_date_time()) os << *dt;
    else if (const auto* d = n.as_date()) os << *d;
    else if (const auto* tm = n.as_time()) os << *tm;
    v.str = os.str();
  }
  return v;
}

}  // namespace

Value parse_toml(const std::string& text, const std::string& path) {
  check_toml_nesting(text, path);
  try {
    toml::table t = toml::parse(text, path);
    Value v = from_toml(t, path);
    v.pos = Pos{path, 0, 0};
    return v;
  } catch (const toml::parse_error& e) {
    throw ParseFailure{pos_of(e.source(), path), std::string(e.description())};
  }
}

// ---------------------------------------------------------------- JSON

namespace {

class JsonParser {
 public:
  JsonParser(const std::string& text, const std::string& path) : s_(text), path_(path) {}

  Value document() {
    skip_ws();
    Value v = value(0);
    skip_ws();
    if (i_ != s_.size()) fail("unexpected text after the JSON value");
    return v;
  }

 private:
  static constexpr int kMaxDepth = 200;
  const std::string& s_;
  const std::string& path_;
  std::size_t i_ = 0;
  int line_ = 1, col_ = 1;

  Pos here() const { return Pos{path_, line_, col_}; }
  [[noreturn]] void fail(const std::string& msg) const { throw ParseFailure{here(), msg}; }
  bool eof() const { return i_ >= s_.size(); }
  char peek() const { return eof() ? '\0' : s_[i_]; }
  char get() {
    if (eof()) fail("unexpected end of input");
    char c = s_[i_++];
    if (c == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    return c;
  }
  void skip_ws() {
    while (!eof() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) get();
  }
  void expect_word(const char* w) {
    for (const char* p = w; *p; ++p)
      if (get() != *p) fail(std::string("invalid literal (expected '") + w + "')");
  }

  Value value(int depth) {
    if (depth > kMaxDepth) fail("JSON nested too deeply");
    Value v;
    v.pos = here();
    char c = peek();
    if (c == '{') {
      get();
      v.kind = Value::Kind::table;
      std::unordered_set<std::string> keys;
      skip_ws();
      if (peek() == '}') {
        get();
        return v;
      }
      for (;;) {
        skip_ws();
        Pos kp = here();
        if (peek() != '"') fail("expected a string key");
        std::string key = string_body();
        skip_ws();
        if (get() != ':') fail("expected ':' after object key");
        skip_ws();
        if (!keys.insert(key).second)   // a hash set: linear in the object's size
          throw ParseFailure{kp, "duplicate key \"" + (key.size() > 60 ? key.substr(0, 60) + "..." : key) +
                                     "\" in this object"};
        Value child = value(depth + 1);
        child.key_pos = kp;
        v.items.emplace_back(std::move(key), std::move(child));
        skip_ws();
        char d = get();
        if (d == '}') break;
        if (d != ',') fail("expected ',' or '}' in object");
      }
    } else if (c == '[') {
      get();
      v.kind = Value::Kind::array;
      skip_ws();
      if (peek() == ']') {
        get();
        return v;
      }
      for (;;) {
        skip_ws();
        Value child = value(depth + 1);
        child.key_pos = child.pos;
        v.items.emplace_back(std::string(), std::move(child));
        skip_ws();
        char d = get();
        if (d == ']') break;
        if (d != ',') fail("expected ',' or ']' in array");
      }
    } else if (c == '"') {
      v.kind = Value::Kind::string;
      v.str = string_body();
    } else if (c == 't') {
      expect_word("true");
      v.kind = Value::Kind::boolean;
      v.b = true;
    } else if (c == 'f') {
      expect_word("false");
      v.kind = Value::Kind::boolean;
    } else if (c == 'n') {
      expect_word("null");
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      number(v);
    } else if (eof()) {
      fail("unexpected end of input");
    } else {
      fail(std::string("unexpected character '") + c + "'");
    }
    return v;
  }

  void number(Value& v) {
    std::size_t start = i_;
    bool is_float = false;
    if (peek() == '-') get();
    if (!(peek() >= '0' && peek() <= '9')) fail("invalid number");
    while (peek() >= '0' && peek() <= '9') get();
    if (peek() == '.') {
      is_float = true;
      get();
      if (!(peek() >= '0' && peek() <= '9')) fail("invalid number");
      while (peek() >= '0' && peek() <= '9') get();
    }
    if (peek() == 'e' || peek() == 'E') {
      is_float = true;
      get();
      if (peek() == '+' || peek() == '-') get();
      if (!(peek() >= '0' && peek() <= '9')) fail("invalid number");
      while (peek() >= '0' && peek() <= '9') get();
    }
    std::string text = s_.substr(start, i_ - start);
    if (!is_float) {
      errno = 0;
      char* end = nullptr;
      long long x = std::strtoll(text.c_str(), &end, 10);
      if (errno == 0) {
        v.kind = Value::Kind::integer;
        v.i = x;
        return;
      }
    }
    v.kind = Value::Kind::floating;
    v.d = std::strtod(text.c_str(), nullptr);
    if (!std::isfinite(v.d)) fail("number out of range");
  }

  static void utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  unsigned hex4() {
    unsigned cp = 0;
    for (int k = 0; k < 4; ++k) {
      char h = get();
      cp <<= 4;
      if (h >= '0' && h <= '9') cp |= static_cast<unsigned>(h - '0');
      else if (h >= 'a' && h <= 'f') cp |= static_cast<unsigned>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') cp |= static_cast<unsigned>(h - 'A' + 10);
      else fail("invalid \\u escape");
    }
    return cp;
  }

  std::string string_body() {
    get();  // opening quote
    std::string out;
    for (;;) {
      char c = get();
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
      if (c != '\\') {
        out += c;
        continue;
      }
      char e = get();
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00 && peek() == '\\') {
            get();
            if (get() != 'u') fail("invalid surrogate pair");
            unsigned lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) fail("invalid surrogate pair");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          utf8(out, cp);
          break;
        }
        default: fail(std::string("invalid escape '\\") + e + "'");
      }
    }
  }
};

}  // namespace

Value parse_json(const std::string& text, const std::string& path) {
  JsonParser p(text, path);
  return p.document();
}

}  // namespace mfusim::config::detail
