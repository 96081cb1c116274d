// `mfusim merge PART...`: the parts of a sharded sweep or plan (--shard K/N)
// into what the unsharded command prints with --json. Sweep rows are
// concatenated in shard order (the shards are contiguous blocks of the point
// list); plan rows are ranked again over all parts (the top of each choice is
// within the union of the parts' tops) and the counts are summed.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "config/value.h"
#include "tools/commands.h"
#include "tools/plan_rows.h"

namespace mfusim::tools {

namespace {

using config::detail::Value;

[[noreturn]] void fail(const std::string& file, const std::string& msg) { throw UserError(file + ": error: " + msg); }

const Value& need(const Value& v, const std::string& key, Value::Kind kind, const std::string& file) {
  const Value* x = v.find(key);
  const bool ok = x && (x->kind == kind || (kind == Value::Kind::floating && x->kind == Value::Kind::integer));
  if (!ok) fail(file, "not a part of `mfusim sweep|plan --shard K/N --json`: '" + key + "' missing or of the wrong type");
  return *x;
}
long long integer(const Value& v, const std::string& key, const std::string& file) {
  return need(v, key, Value::Kind::integer, file).i;
}
const std::string& text(const Value& v, const std::string& key, const std::string& file) {
  return need(v, key, Value::Kind::string, file).str;
}
double exact(const Value& v, const std::string& key, const std::string& file) {
  const auto& s = text(v, key, file);
  char* end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size()) fail(file, "'" + key + "' is not a number");
  return d;
}

struct Part {
  std::string file, kind;
  long long shard = 0, of = 0;
  Value doc;
};

}  // namespace

int cmd_merge(const std::vector<std::string>& files, std::ostream& out) {
  if (files.empty()) throw UserError("mfusim merge: error: expected the part files of a sharded sweep or plan");
  std::vector<Part> parts;
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) fail(file, "cannot read the part file");
    std::ostringstream ss;
    ss << in.rdbuf();
    Part p;
    p.file = file;
    try {
      p.doc = config::detail::parse_json(ss.str(), file);
    } catch (const config::detail::ParseFailure& e) {
      throw UserError(e.pos.file + ":" + std::to_string(e.pos.line) + ":" + std::to_string(e.pos.col) +
                      ": error: " + e.message);
    }
    if (!p.doc.is_table()) fail(file, "not a part of `mfusim sweep|plan --shard K/N --json`");
    p.kind = text(p.doc, "mfusim_part", file);
    p.shard = integer(p.doc, "shard", file);
    p.of = integer(p.doc, "of", file);
    if (p.kind != "sweep" && p.kind != "plan") fail(file, "unknown part kind '" + p.kind + "'");
    parts.push_back(std::move(p));
  }
  std::sort(parts.begin(), parts.end(), [](const Part& a, const Part& b) { return a.shard < b.shard; });
  const auto& first = parts.front();
  for (const auto& p : parts) {
    if (p.kind != first.kind) fail(p.file, "a " + p.kind + " part among " + first.kind + " parts (" + first.file + ")");
    if (p.of != first.of) fail(p.file, "shard of " + std::to_string(p.of) + " among shards of " + std::to_string(first.of));
  }
  // Every shard 1..N exactly once.
  for (std::size_t i = 0; i < parts.size(); ++i)
    if (parts[i].shard != static_cast<long long>(i) + 1) {
      if (i > 0 && parts[i].shard == parts[i - 1].shard)
        fail(parts[i].file, "shard " + std::to_string(parts[i].shard) + " given twice (also " + parts[i - 1].file + ")");
      fail(first.file, "shard " + std::to_string(i + 1) + " of " + std::to_string(first.of) + " is missing");
    }
  if (static_cast<long long>(parts.size()) != first.of)
    fail(first.file, "shard " + std::to_string(parts.size() + 1) + " of " + std::to_string(first.of) + " is missing");

  if (first.kind == "sweep") {
    std::vector<std::string> items;
    for (const auto& p : parts)
      for (const auto& r : need(p.doc, "rows", Value::Kind::array, p.file).items) {
        if (r.second.kind != Value::Kind::string) fail(p.file, "a sweep row is not a string");
        items.push_back(r.second.str);
      }
    out << json_array(items) << "\n";
    return 0;
  }

  // plan
  const std::string rank_by_name = text(first.doc, "rank_by", first.file);
  const auto rank_by = study::parse_rank_by(rank_by_name);
  const long long top = integer(first.doc, "top", first.file);
  std::vector<PlanChoice> choices;
  for (const auto& p : parts) {
    if (text(p.doc, "rank_by", p.file) != rank_by_name || integer(p.doc, "top", p.file) != top)
      fail(p.file, "its --rank-by or --top differs from " + first.file + "'s");
    const auto& cs = need(p.doc, "choices", Value::Kind::array, p.file).items;
    if (&p == &parts.front()) choices.resize(cs.size());
    if (cs.size() != choices.size()) fail(p.file, "its choices differ from " + first.file + "'s");
    for (std::size_t i = 0; i < cs.size(); ++i) {
      const Value& c = cs[i].second;
      auto& m = choices[i];
      const std::string hw = text(c, "hardware", p.file);
      const int gpus = static_cast<int>(integer(c, "gpus", p.file));
      if (&p == &parts.front()) {
        m.hardware = hw;
        m.gpus = gpus;
        m.searched = text(c, "searched", p.file);
      } else if (hw != m.hardware || gpus != m.gpus) {
        fail(p.file, "its choices differ from " + first.file + "'s");
      }
      m.considered += static_cast<std::size_t>(integer(c, "considered", p.file));
      m.invalid += static_cast<std::size_t>(integer(c, "invalid", p.file));
      m.pruned += static_cast<std::size_t>(integer(c, "pruned", p.file));
      m.skipped += static_cast<std::size_t>(integer(c, "skipped", p.file));
      m.simulated += static_cast<std::size_t>(integer(c, "simulated", p.file));
      m.failed += static_cast<std::size_t>(integer(c, "failed", p.file));
      m.fitting += static_cast<std::size_t>(integer(c, "fitting", p.file));
      for (const auto& [why, n] : need(c, "failures", Value::Kind::table, p.file).items)
        m.failures[why] += static_cast<std::size_t>(n.i);
      for (const auto& rv : need(c, "rows", Value::Kind::array, p.file).items) {
        const Value& r = rv.second;
        PlanRow row;
        row.layout = text(r, "layout", p.file);
        row.schedule = text(r, "schedule", p.file);
        row.recompute = text(r, "recompute", p.file);
        row.recompute_num_layers = static_cast<int>(integer(r, "recompute_num_layers", p.file));
        row.step_time_s = exact(r, "step_time_s", p.file);
        row.obj.time_s = exact(r, "time_s", p.file);
        row.obj.gpus = exact(r, "gpus", p.file);
        row.obj.cost = exact(r, "cost", p.file);
        row.margin_gib = exact(r, "margin_gib", p.file);
        row.report = text(r, "report", p.file);
        m.rows.push_back(std::move(row));
      }
    }
  }
  // Parts in shard order are the enumeration order: a stable sort ranks ties as one plan does.
  for (auto& m : choices) {
    std::stable_sort(m.rows.begin(), m.rows.end(),
                     [](const PlanRow& a, const PlanRow& b) { return a.step_time_s < b.step_time_s; });
    if (top > 0 && m.rows.size() > static_cast<std::size_t>(top)) m.rows.resize(static_cast<std::size_t>(top));
  }
  out << plan_json(choices, rank_by) << "\n";
  return 0;
}

}  // namespace mfusim::tools
