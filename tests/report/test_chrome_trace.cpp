// Chrome trace (SPEC §5): valid JSON, loadable in Perfetto -- one process per
// pipeline rank, one thread per stream, every op named like "F mb3 chunk1".
#include <doctest/doctest.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "config/loader.h"
#include "report/chrome_trace.h"
#include "report/timeline_ascii.h"
#include "schedules/lab.h"
#include "step/lower.h"

namespace {

// A tiny JSON reader: enough to parse the trace back and check its shape.
struct Json {
  std::variant<std::nullptr_t, bool, double, std::string, std::vector<Json>, std::map<std::string, Json>> v;
  const Json& operator[](const std::string& k) const { return std::get<std::map<std::string, Json>>(v).at(k); }
  bool has(const std::string& k) const {
    const auto* m = std::get_if<std::map<std::string, Json>>(&v);
    return m && m->count(k);
  }
  const std::vector<Json>& array() const { return std::get<std::vector<Json>>(v); }
  const std::string& str() const { return std::get<std::string>(v); }
  double num() const { return std::get<double>(v); }
};

struct Parser {
  const std::string& s;
  std::size_t i = 0;
  void ws() { while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i; }
  void expect(char c) {
    ws();
    if (i >= s.size() || s[i] != c) throw std::runtime_error("expected '" + std::string(1, c) + "' at " + std::to_string(i));
    ++i;
  }
  std::string string() {
    expect('"');
    std::string out;
    while (i < s.size() && s[i] != '"') {
      if (static_cast<unsigned char>(s[i]) < 0x20) throw std::runtime_error("control character in string");
      if (s[i] == '\\') {
        ++i;
        if (i >= s.size()) break;
        const char e = s[i];
        if (e == 'u') { i += 4; out += '?'; }
        else if (std::string("\"\\/bfnrt").find(e) == std::string::npos) throw std::runtime_error("bad escape");
        else out += e;
        ++i;
        continue;
      }
      out += s[i++];
    }
    expect('"');
    return out;
  }
  Json value() {
    ws();
    if (i >= s.size()) throw std::runtime_error("unexpected end");
    const char c = s[i];
    if (c == '{') {
      ++i;
      std::map<std::string, Json> m;
      ws();
      if (s[i] == '}') { ++i; return Json{m}; }
      for (;;) {
        auto k = string();
        expect(':');
        if (m.count(k)) throw std::runtime_error("duplicate key " + k);
        m.emplace(k, value());
        ws();
        if (s[i] == ',') { ++i; continue; }
        expect('}');
        return Json{m};
      }
    }
    if (c == '[') {
      ++i;
      std::vector<Json> a;
      ws();
      if (s[i] == ']') { ++i; return Json{a}; }
      for (;;) {
        a.push_back(value());
        ws();
        if (s[i] == ',') { ++i; continue; }
        expect(']');
        return Json{a};
      }
    }
    if (c == '"') return Json{string()};
    if (s.compare(i, 4, "true") == 0) { i += 4; return Json{true}; }
    if (s.compare(i, 5, "false") == 0) { i += 5; return Json{false}; }
    if (s.compare(i, 4, "null") == 0) { i += 4; return Json{nullptr}; }
    std::size_t used = 0;
    const double d = std::stod(s.substr(i, 32), &used);
    if (used == 0) throw std::runtime_error("bad number");
    i += used;
    return Json{d};
  }
  Json document() {
    Json j = value();
    ws();
    if (i != s.size()) throw std::runtime_error("trailing characters");
    return j;
  }
};

}  // namespace

TEST_CASE("chrome trace: valid JSON, one pid per rank, one tid per stream, ops named by label") {
  using namespace mfusim;
  config::ScheduleCosts c;
  c.f = 1e-3;
  c.b = 2e-3;
  c.comm = 0.1e-3;
  const int p = 4, m = 8;
  const auto r = schedules::run_lab(schedules::interleaved_1f1b({p, m, 2}), c);
  const std::string text = report::chrome_trace(r.graph, r.timeline);
  Json doc;
  REQUIRE_NOTHROW(doc = Parser{text}.document());
  const auto& events = doc["traceEvents"].array();
  std::set<int> pids, named_pids;
  std::map<int, int> tid_pid;
  std::set<int> named_tids;
  std::size_t complete = 0;
  bool saw_label = false;
  for (const auto& e : events) {
    const auto& ph = e["ph"].str();
    const int pid = static_cast<int>(e["pid"].num()), tid = static_cast<int>(e["tid"].num());
    if (ph == "M" && e["name"].str() == "process_name") named_pids.insert(pid);
    if (ph == "M" && e["name"].str() == "thread_name") named_tids.insert(tid);
    if (ph != "X") continue;
    ++complete;
    pids.insert(pid);
    auto [it, fresh] = tid_pid.emplace(tid, pid);
    CHECK(it->second == pid);   // a stream belongs to one rank
    CHECK(e["dur"].num() >= 0);
    CHECK(e.has("cat"));
    saw_label = saw_label || e["name"].str() == "F mb3 chunk1";
  }
  CHECK(complete == r.graph.size());
  CHECK(pids.size() == p);
  CHECK(named_pids.size() == p);
  CHECK(tid_pid.size() == r.graph.streams().size());
  CHECK(named_tids.size() == r.graph.streams().size());
  CHECK(saw_label);
}

TEST_CASE("chrome trace: names are JSON-escaped") {
  using namespace mfusim;
  sim::TaskGraph g;
  auto s = g.add_stream(0, "strange \"stream\"\\", true);
  sim::TaskSpec t;
  t.stream = s;
  t.duration_ns = 1500;
  g.add(t, "quote \" tab \t newline \n");
  const auto text = report::chrome_trace(g, sim::run(g));
  Json doc;
  REQUIRE_NOTHROW(doc = Parser{text}.document());
  CHECK(doc["traceEvents"].array().back()["dur"].num() == doctest::Approx(1.5));
}

namespace {

struct Played {
  mfusim::step::Lowered low;
  mfusim::sim::Timeline timeline;
};

Played play(const std::string& file, const std::vector<std::string>& sets = {}, bool per_layer = true) {
  using namespace mfusim;
  config::LoadOptions lo;
  lo.overrides = sets;
  const auto s = config::load_scenario(std::string(MFUSIM_SOURCE_DIR) + "/scenarios/" + file, lo).base;
  step::LowerOptions o;
  o.per_layer = per_layer;
  Played p{step::lower(s, o), {}};
  p.timeline = sim::run(p.low.graph);
  return p;
}

}  // namespace

TEST_CASE("chrome trace: no zero-duration events; args carry micro-batch, chunk, FLOPs and launch time") {
  using namespace mfusim;
  // Interleaved 1F1B (two chunks per rank), whose lowering has tasks of zero duration.
  const auto p = play("128xh100_llama31_70b.toml");
  std::size_t zero = 0, nonzero = 0, with_flops = 0;
  for (const auto& iv : p.timeline.intervals) (iv.end.ns == iv.start.ns ? zero : nonzero) += 1;
  for (const auto& ti : p.low.info) with_flops += ti.flops > 0;
  REQUIRE(zero > 0);
  REQUIRE(with_flops > 0);
  const auto text = report::chrome_trace(p.low.graph, p.timeline, &p.low.info);
  Json doc;
  REQUIRE_NOTHROW(doc = Parser{text}.document());
  std::size_t complete = 0, flops_args = 0, launch_args = 0, empty = 0, no_args = 0, no_mb = 0, no_chunk = 0,
              launch_over = 0;
  double flops_sum = 0, flops_want = 0;
  for (const auto& ti : p.low.info) flops_want += ti.flops;
  bool chunk1 = false;
  for (const auto& e : doc["traceEvents"].array()) {
    if (e["ph"].str() != "X") continue;
    ++complete;
    empty += e["dur"].num() <= 0;
    const auto& cat = e["cat"].str();
    if (e.has("args")) {
      const auto& a = e["args"];
      if (a.has("flops")) {
        ++flops_args;
        flops_sum += a["flops"].num();
      }
      if (a.has("launch_us")) {
        ++launch_args;
        launch_over += a["launch_us"].num() > e["dur"].num();
      }
    }
    // Ops, their per-layer pieces and their collectives carry args (a GC pause or the optimizer may have none).
    if (cat != "forward" && cat != "backward" && cat != "recompute" && cat != "tp_comm") continue;
    // (the step's one TP-group collective outside the layers, sequence parallelism's gradient all-reduce, has
    // no micro-batch)
    if (e["name"].str() == "sp grads all-reduce") continue;
    if (!e.has("args")) { ++no_args; continue; }
    no_mb += !e["args"].has("mb");
    if (cat == "forward" || cat == "backward") {
      no_chunk += !e["args"].has("chunk");   // two chunks per rank: the chunk is an argument
      chunk1 = chunk1 || (e["args"].has("chunk") && e["args"]["chunk"].num() == 1);
    }
  }
  CHECK(empty == 0);
  CHECK(no_args == 0);
  CHECK(no_mb == 0);
  CHECK(no_chunk == 0);
  CHECK(launch_over == 0);
  CHECK(complete == nonzero);   // every task with a duration, and only those
  CHECK(chunk1);
  CHECK(flops_args > 0);
  CHECK(launch_args > 0);
  // FLOPs at 4 significant digits: the sum matches the lowering's to 1e-3 (a zero-duration task does no work).
  CHECK(flops_sum == doctest::Approx(flops_want).epsilon(1e-3));
}

TEST_CASE("chrome trace: the 128xh100_70b trace stays below 16.5 MB and 180 bytes an event, all args included") {
  using namespace mfusim;
  // About 94,000 events on 4 ranks (per layer: TP collectives, F/B pieces). Before
  // the compact form (no zero-padded decimals, short arg keys, no task ids, no chunk
  // where every op is chunk 0) this trace was 15.4 MB without FLOPs, 148 bytes an
  // event; with mb, FLOPs and launch time it was 12.8 MB, 136 bytes an event; with
  // each piece's layer, longest kernel and HBM bytes too it is 15.9 MB, 170 bytes an
  // event (docs/performance.md, "Trace size"; `run --coarse` gives one event per op).
  const auto p = play("128xh100_70b.toml");
  const auto text = report::chrome_trace(p.low.graph, p.timeline, &p.low.info);
  std::size_t events = 0;
  for (const auto& iv : p.timeline.intervals) events += iv.end.ns > iv.start.ns;
  MESSAGE("128xh100_70b trace: " << text.size() << " bytes, " << events << " events");
  CHECK(text.size() < 16'500'000);
  CHECK(text.size() < 180 * events);
  CHECK(text.find("\"layer\"") != std::string::npos);
  CHECK(text.find("\"kernel\"") != std::string::npos);
  CHECK(text.find("\"bytes\"") != std::string::npos);
  CHECK(text.find("\"chunk\"") == std::string::npos);   // one chunk per rank: no chunk argument
  CHECK(text.find("\"flops\"") != std::string::npos);
  // No zero-padded decimals (".000", "354.220"): a fraction never ends in 0.
  std::size_t padded = 0;
  for (std::size_t i = text.find('.'); i != std::string::npos; i = text.find('.', i + 1)) {
    std::size_t j = i + 1;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
    padded += j > i + 1 && text[j - 1] == '0';
  }
  CHECK(padded == 0);
  CHECK(text.find("e+") == std::string::npos);            // exponents without '+'
  CHECK(text.find("\"dur\":0,") == std::string::npos);
}

TEST_CASE("ascii timeline: one row per rank, F/B with micro-batch digits, idle dots") {
  using namespace mfusim;
  config::ScheduleCosts c;
  c.f = 1e-3;
  c.b = 2e-3;
  const auto r = schedules::run_lab(schedules::one_f_one_b({2, 3, 1}), c);
  const auto text = report::timeline_ascii(r.graph, r.timeline, 24);
  // 1F1B, p=2, m=3, f=1, b=2: makespan (m+p-1)(f+b) = 12 ms, 2 cells per ms.
  CHECK(text.rfind("rank0 |F0F1....B0  F2B1  ..B2  |\n", 0) == 0);
  CHECK(text.find("rank1 |..F0B0  F1B1  F2B2  ....|\n") != std::string::npos);
  CHECK(text.find("12.000 ms") != std::string::npos);
}

TEST_CASE("chrome trace: per-layer pieces carry their layer, longest kernel and HBM bytes, on every emission path") {
  using namespace mfusim;
  // Replayed ops (the base), ops emitted item by item (an overlapped parameter gather
  // before each layer's first forward, gradient buckets flushed inside a backward) and
  // FSDP's units: every F/B piece of a transformer layer gets a layer of its own rank's
  // stage, a kernel and bytes; every TP collective a layer.
  const std::vector<std::vector<std::string>> variants = {
      {},
      {"features.overlap_param_gather=true", "features.overlap_grad_reduce=true"},
      {"features.tp_comm_overlap=true"},
      {"parallel.zero_stage=3"},   // FSDP units (step/fsdp.cpp)
  };
  for (const auto& sets : variants) {
    const std::string which = sets.empty() ? "base" : sets.front();
    CAPTURE(which);
    const auto p = play("128xh100_70b.toml", sets);
    const auto& g = p.low.graph;
    const int ranks = static_cast<int>(p.low.compute_stream.size());
    // Layers each rank runs (one chunk per rank here: stage r on rank r).
    std::vector<std::set<int>> own(static_cast<std::size_t>(ranks));
    for (int r = 0; r < ranks; ++r)
      for (int l : p.low.stage_layers[static_cast<std::size_t>(r)]) own[static_cast<std::size_t>(r)].insert(l);
    std::size_t pieces = 0, described = 0, wrong_rank = 0, no_kernel = 0, no_bytes = 0, comm = 0, comm_layer = 0;
    double bytes = 0;
    for (std::size_t id = 0; id < g.size(); ++id) {
      const auto& t = g.task(static_cast<sim::TaskId>(id));
      const auto& ti = p.low.info[id];
      const int rank = g.streams()[static_cast<std::size_t>(t.stream)].rank;
      // (the TP collectives of the layers; sequence parallelism's gradient all-reduce at the step's end has none)
      if (t.category == sim::Category::tp_comm && t.kind == 'C' && g.name(static_cast<sim::TaskId>(id)) != "sp grads all-reduce") {
        ++comm;
        comm_layer += ti.layer >= 0;
      }
      if ((t.kind != 'F' && t.kind != 'B') || t.duration_ns == 0 || ti.flops <= 0) continue;
      ++pieces;
      if (ti.layer < 0) continue;   // the embedding or the head
      ++described;
      wrong_rank += own[static_cast<std::size_t>(rank)].count(ti.layer) == 0;
      no_kernel += ti.kernel == nullptr || *ti.kernel == 0;
      no_bytes += !(ti.bytes > 0);
      bytes += ti.bytes;
    }
    // 80 layers x 128 micro-batches, 2 forward and 3 backward pieces each (one more per
    // split segment with tp_comm_overlap).
    CHECK(described >= 80u * 128u * 5u);
    CHECK(pieces - described <= 4u * 128u * 3u);   // embedding, head and loss: not per layer
    CHECK(wrong_rank == 0);
    CHECK(no_kernel == 0);
    CHECK(no_bytes == 0);
    CHECK(comm > 0);
    CHECK(comm_layer == comm);
    CHECK(bytes > 0);
  }
}

TEST_CASE("chrome trace: a merged op task carries the bytes of all its layers and no layer") {
  using namespace mfusim;
  const auto fine = play("128xh100_70b.toml");
  const auto coarse = play("128xh100_70b.toml", {}, false);
  double fine_bytes = 0, coarse_bytes = 0;
  std::size_t layered = 0;
  for (const auto& ti : fine.low.info) fine_bytes += ti.bytes;
  for (const auto& ti : coarse.low.info) {
    coarse_bytes += ti.bytes;
    layered += ti.layer >= 0;
  }
  CHECK(layered == 0);
  CHECK(coarse_bytes > 0);
  CHECK(coarse_bytes == doctest::Approx(fine_bytes).epsilon(1e-9));   // the same kernels, merged
  const auto text = report::chrome_trace(coarse.low.graph, coarse.timeline, &coarse.low.info);
  CHECK(text.find("\"bytes\"") != std::string::npos);
  CHECK(text.find("\"layer\"") == std::string::npos);
}
