#pragma once
// JSON writers: the SPEC §4 report, and the small writer they share.
#include <string>
#include <vector>

#include "step/result.h"

namespace mfusim::report {

// A minimal streaming JSON writer: deterministic number formatting, never NaN
// (a non-finite number is a bug and throws std::logic_error).
class JsonWriter {
 public:
  explicit JsonWriter(int indent = 2) : indent_(indent) {}
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(const std::string&);
  JsonWriter& value(const std::string&);
  JsonWriter& value(const char* s) { return value(std::string(s)); }
  JsonWriter& value(double);
  JsonWriter& value(long long);
  JsonWriter& value(int v) { return value(static_cast<long long>(v)); }
  JsonWriter& value(bool);
  JsonWriter& raw(const std::string& json);   // an already-serialised value
  const std::string& str() const { return out_; }
 private:
  void before_value();
  void newline();
  std::string out_;
  std::vector<bool> first_;   // per open container: no element yet
  int indent_;
  bool after_key_ = false;
};

std::string quote(const std::string&);
// The resolved scenario (SPEC §4 "resolved").
void write_resolved(JsonWriter&, const config::Scenario&);
// The SPEC §4 object for one step. `extra` holds key/value members appended
// at the top (e.g. sweep's "point").
void write_step(JsonWriter&, const step::StepResult&, const std::vector<step::WhatIfResult>& whatifs = {},
                const std::string& point_json = "");
std::string to_json(const step::StepResult&, const std::vector<step::WhatIfResult>& whatifs = {});

}  // namespace mfusim::report
