#pragma once
// A strict JSON reader (RFC 8259) for the CLI tests: it rejects what Perfetto,
// jq or python's json module would reject (trailing commas, NaN/Infinity,
// leading zeros, bare control characters in strings, unpaired surrogates,
// trailing garbage), and returns a tree to check fields against SPEC §4/§5.
#include <cctype>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace mfusim::testing {

struct Json {
  using Object = std::map<std::string, Json>;
  using Array = std::vector<Json>;
  std::variant<std::nullptr_t, bool, double, std::string, Array, Object> v;

  bool is_object() const { return std::holds_alternative<Object>(v); }
  bool is_array() const { return std::holds_alternative<Array>(v); }
  bool is_number() const { return std::holds_alternative<double>(v); }
  bool is_string() const { return std::holds_alternative<std::string>(v); }
  bool is_bool() const { return std::holds_alternative<bool>(v); }
  bool has(const std::string& k) const { return is_object() && std::get<Object>(v).count(k) > 0; }
  const Json& operator[](const std::string& k) const { return std::get<Object>(v).at(k); }
  const Object& object() const { return std::get<Object>(v); }
  const Array& array() const { return std::get<Array>(v); }
  const std::string& str() const { return std::get<std::string>(v); }
  double num() const { return std::get<double>(v); }
  bool boolean() const { return std::get<bool>(v); }
};

struct JsonError : std::runtime_error { using std::runtime_error::runtime_error; };

class JsonReader {
 public:
  explicit JsonReader(const std::string& text) : s_(text) {}

  Json document() {
    Json j = value(0);
    ws();
    if (i_ != s_.size()) fail("trailing characters after the document");
    return j;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw JsonError("JSON error at byte " + std::to_string(i_) + ": " + what);
  }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  char peek() {
    ws();
    if (i_ >= s_.size()) fail("unexpected end of input");
    return s_[i_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  bool literal(const char* word) {
    const std::string w(word);
    if (s_.compare(i_, w.size(), w) != 0) return false;
    i_ += w.size();
    return true;
  }
  Json value(int depth) {
    if (depth > 256) fail("nesting too deep");
    const char c = peek();
    Json j;
    if (c == '{') {
      ++i_;
      Json::Object o;
      if (peek() == '}') {
        ++i_;
      } else {
        for (;;) {
          if (peek() != '"') fail("expected a string key");
          std::string k = string();
          if (o.count(k)) fail("duplicate key \"" + k + "\"");
          expect(':');
          o.emplace(std::move(k), value(depth + 1));
          if (peek() == ',') { ++i_; continue; }
          expect('}');
          break;
        }
      }
      j.v = std::move(o);
    } else if (c == '[') {
      ++i_;
      Json::Array a;
      if (peek() == ']') {
        ++i_;
      } else {
        for (;;) {
          a.push_back(value(depth + 1));
          if (peek() == ',') { ++i_; continue; }
          expect(']');
          break;
        }
      }
      j.v = std::move(a);
    } else if (c == '"') {
      j.v = string();
    } else if (literal("true")) {
      j.v = true;
    } else if (literal("false")) {
      j.v = false;
    } else if (literal("null")) {
      j.v = nullptr;
    } else {
      j.v = number();
    }
    return j;
  }
  double number() {
    const std::size_t start = i_;
    auto digits = [&] {
      const std::size_t d = i_;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
      return i_ - d;
    };
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    if (i_ < s_.size() && s_[i_] == '0') {
      ++i_;
      if (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) fail("leading zero in a number");
    } else if (digits() == 0) {
      fail("expected a value");
    }
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (digits() == 0) fail("expected digits after '.'");
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (digits() == 0) fail("expected exponent digits");
    }
    return std::strtod(s_.substr(start, i_ - start).c_str(), nullptr);
  }
  unsigned hex4() {
    if (i_ + 4 > s_.size()) fail("short \\u escape");
    unsigned u = 0;
    for (int k = 0; k < 4; ++k) {
      const char h = s_[i_++];
      u <<= 4;
      if (h >= '0' && h <= '9') u |= static_cast<unsigned>(h - '0');
      else if (h >= 'a' && h <= 'f') u |= static_cast<unsigned>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') u |= static_cast<unsigned>(h - 'A' + 10);
      else fail("bad hex digit in \\u escape");
    }
    return u;
  }
  void utf8(std::string& out, unsigned cp) {
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
  std::string string() {
    expect('"');
    std::string out;
    for (;;) {
      if (i_ >= s_.size()) fail("unterminated string");
      const unsigned char c = static_cast<unsigned char>(s_[i_++]);
      if (c == '"') return out;
      if (c < 0x20) fail("control character in a string");
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (i_ >= s_.size()) fail("unterminated escape");
      const char e = s_[i_++];
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
          if (cp >= 0xD800 && cp < 0xDC00) {
            if (!literal("\\u")) fail("unpaired surrogate");
            const unsigned lo = hex4();
            if (lo < 0xDC00 || lo >= 0xE000) fail("unpaired surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            fail("unpaired surrogate");
          }
          utf8(out, cp);
          break;
        }
        default: fail(std::string("bad escape \\") + e);
      }
    }
  }

  const std::string& s_;
  std::size_t i_ = 0;
};

inline Json parse_json(const std::string& text) { return JsonReader(text).document(); }

}  // namespace mfusim::testing
