// The command line of SPEC §2, run as a user would: the built `mfusim` binary
// on the shipped scenarios and on the bad-input corpus. Exit codes: 0 success
// (also when a result does not fit), 2 bad input with `FILE:LINE:COL: error:`.
// The JSON report (SPEC §4) and the trace and SVG (SPEC §5) are parsed back.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <regex>
#include <set>
#include <thread>

#include "tests/cli/cli_support.h"
#include "tests/cli/json_reader.h"
#include "config/loader.h"
#include "report/json.h"
#include "step/simulate.h"

namespace {

using namespace mfusim::testing;
namespace config = mfusim::config;
namespace report = mfusim::report;
namespace step = mfusim::step;

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

// Every line of a bad-input message is `FILE:LINE:COL: error: ...` or, where no
// position exists, `WHAT: error: ...` (SPEC §2).
void check_diagnostics(const std::string& err) {
  static const std::regex positioned(R"(^.+:[0-9]+:[0-9]+: error: .+$)");
  static const std::regex plain(R"(^.+: error: .+$)");
  const auto ls = lines_of(err);
  CHECK_FALSE(ls.empty());
  for (const auto& l : ls) {
    CAPTURE(l);
    CHECK((std::regex_match(l, positioned) || std::regex_match(l, plain)));
  }
}

// The SPEC §4 report: every listed field, with its type.
void check_spec_fields(const Json& j, int pp, std::size_t whatifs) {
  REQUIRE(j.is_object());
  CHECK(j["name"].is_string());
  CHECK(j["resolved"].is_object());
  for (const char* k : {"params", "activated_params", "model_flops_per_token"}) {
    CAPTURE(k);
    REQUIRE(j["model"].has(k));
    CHECK(j["model"][k].is_number());
    CHECK(j["model"][k].num() > 0);
  }
  for (const char* k : {"tp", "pp", "dp", "cp", "ep", "vpp", "microbatches"}) {
    CAPTURE(k);
    REQUIRE(j["parallel"].has(k));
    CHECK(j["parallel"][k].num() >= 1);
  }
  CHECK(j["parallel"]["pp"].num() == pp);
  for (const char* k : {"step_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "tflops_per_gpu", "mfu", "mfu_attn", "hfu",
                        "bubble_fraction"}) {
    CAPTURE(k);
    REQUIRE(j.has(k));
    CHECK(j[k].is_number());
    CHECK(j[k].num() >= 0);
  }
  CHECK(j["step_time_s"].num() > 0);
  CHECK(j["mfu"].num() < 1.0);
  CHECK(j["mfu"].num() <= j["mfu_attn"].num());
  CHECK(j["mfu_attn"].num() <= j["hfu"].num() + 1e-12);
  CHECK(j["bubble_fraction"].num() < 1.0);
  for (const char* k : {"forward", "backward", "recompute", "optimizer", "tp_comm_exposed", "pp_comm_exposed",
                        "dp_comm_exposed", "ep_comm_exposed", "bubble", "dataloader", "gc", "launch_overhead"}) {
    CAPTURE(k);
    REQUIRE(j["breakdown_s"].has(k));
    CHECK(j["breakdown_s"][k].num() >= 0);
  }
  const Json& m = j["memory"];
  for (const char* k : {"capacity_gib", "peak_gib"}) CHECK(m[k].num() > 0);
  CHECK(m["fits"].is_bool());
  CHECK(m["fits"].boolean() == (m["peak_gib"].num() <= m["capacity_gib"].num()));
  REQUIRE(m["per_stage_peak_gib"].is_array());
  CHECK(m["per_stage_peak_gib"].array().size() == static_cast<std::size_t>(pp));
  double max_stage = 0;
  for (const auto& x : m["per_stage_peak_gib"].array()) max_stage = std::max(max_stage, x.num());
  CHECK(max_stage == doctest::Approx(m["peak_gib"].num()).epsilon(1e-6));
  for (const char* k : {"params", "grads", "optimizer", "activations"}) {
    CAPTURE(k);
    REQUIRE(m["parts_gib"].has(k));
    CHECK(m["parts_gib"][k].num() >= 0);
  }
  REQUIRE(j["whatif"].is_array());
  CHECK(j["whatif"].array().size() == whatifs);
  for (const auto& w : j["whatif"].array()) {
    CHECK(w["name"].is_string());
    for (const char* k : {"step_time_s", "mfu", "delta_mfu"}) CHECK(w[k].is_number());
  }
}

// SPEC §4: "breakdown_s is per GPU (the slowest pipeline rank's view) and its
// parts sum to step_time_s within 1%" -- every member, extensions included.
void check_breakdown_sum(const Json& j) {
  double sum = 0;
  for (const auto& [k, v] : j["breakdown_s"].object()) sum += v.num();
  const double T = j["step_time_s"].num();
  CAPTURE(sum);
  CAPTURE(T);
  CHECK(std::abs(sum - T) <= 0.01 * T);
}

std::size_t whatif_count(const fs::path& scenario) {
  return config::load_scenario(scenario.string()).whatifs.size();
}

int pp_of(const fs::path& scenario) { return config::load_scenario(scenario.string()).base.parallel.pp; }

}  // namespace

TEST_CASE("cli: every scenario passes check (exit 0, prints the resolved config)") {
  for (const auto& s : scenario_files()) {
    CAPTURE(s.string());
    const auto r = run_cli({"check", s.string()});
    CHECK(r.code == 0);
    CHECK(r.err.empty());
    CHECK(r.out.find(s.string() + ": ok") != std::string::npos);
    CHECK(r.out.find("schedule: ") != std::string::npos);
  }
}

TEST_CASE("cli: run --json on every scenario: valid JSON with every SPEC §4 field; breakdown sums to the step") {
  for (const auto& s : scenario_files()) {
    CAPTURE(s.string());
    const auto r = run_cli({"run", s.string(), "--json"});
    REQUIRE(r.code == 0);
    CHECK(r.err.empty());
    Json j;
    REQUIRE_NOTHROW(j = parse_json(r.out));
    check_spec_fields(j, pp_of(s), whatif_count(s));
    check_breakdown_sum(j);
    // `mfusim FILE` is `mfusim run FILE` (SPEC §2).
    if (s.filename() == "8xh100_llama3_8b.toml") {
      const auto short_form = run_cli({s.string(), "--json"});
      CHECK(short_form.code == 0);
      CHECK(short_form.out == r.out);
    }
  }
}

TEST_CASE("cli: resolved holds the scenario after defaults, --set and --calibration") {
  const std::string s = kRoot + "/scenarios/8xh100_llama3_8b.toml";
  const auto r = run_cli({"run", s, "--json", "--set", "features.python_gc=true", "--set", "features.gc_pause_ms=50",
                          "--set", "features.gc_interval_s=600", "--set", "features.dataloader_ms_per_sample=3.5",
                          "--set", "features.nccl_algo=ring", "--set", "hardware.host_backward_overhead_us=26.5",
                          "--calibration", "hardware/calibration/h200.toml"});
  REQUIRE(r.code == 0);
  const Json j = parse_json(r.out);
  const Json& res = j["resolved"];
  for (const char* k : {"name", "model", "hardware", "calibration", "cluster", "training", "parallel", "schedule",
                        "features", "cost", "seed"}) {
    CAPTURE(k);
    CHECK(res.has(k));
  }
  // Every [features] key of SPEC §3 and of the loader, with its resolved value.
  for (const char* k : {"flash_attention", "fused_kernels", "overlap_grad_reduce", "overlap_param_gather",
                        "tp_comm_overlap", "recompute", "cuda_graphs", "python_gc", "dataloader_workers", "nccl_algo",
                        "dataloader_ms_per_sample", "gc_pause_ms", "gc_interval_s"}) {
    CAPTURE(k);
    CHECK(res["features"].has(k));
  }
  CHECK(res["features"]["python_gc"].boolean());
  CHECK(res["features"]["gc_pause_ms"].num() == 50);
  CHECK(res["features"]["gc_interval_s"].num() == 600);
  CHECK(res["features"]["dataloader_ms_per_sample"].num() == 3.5);
  CHECK(res["features"]["nccl_algo"].str() == "ring");
  // The host issue costs (docs/fidelity.md): the backward one as set, the others from the GPU profile.
  for (const char* k : {"launch_overhead_us", "host_overhead_us", "host_compiled_overhead_us", "host_backward_overhead_us"}) {
    CAPTURE(k);
    CHECK(res["hardware"].has(k));
  }
  CHECK(res["hardware"]["host_backward_overhead_us"].num() == doctest::Approx(26.5));
  const std::string cal = res["calibration"].str();
  CHECK(cal.size() > 9);
  CHECK(cal.substr(cal.size() - 9) == "h200.toml");
  // The derived dp is resolved: gpus / (tp * pp * cp).
  CHECK(res["parallel"]["dp"].num() == 4);   // 8 GPUs, tp 2 (scenarios/8xh100_llama3_8b.toml)
  CHECK(res["cluster"]["gpus"].num() == 8);
  // A named model resolves to its file's contents.
  CHECK(res["model"]["ref"].str() == "llama3-8b");
  CHECK(res["model"]["layers"].num() == 32);

  // Without --set the defaults appear (SPEC §3 defaults, docs/levers.md for the GC model).
  const Json d = parse_json(run_cli({"run", s, "--json"}).out)["resolved"];
  CHECK(d["features"]["gc_pause_ms"].num() == 100);
  CHECK(d["features"]["gc_interval_s"].num() == 3400);
  CHECK(d["features"]["dataloader_ms_per_sample"].num() == -1);
  // A Hopper GPU without a calibration line uses the shipped measured calibration (docs/cost-model.md,
  // "Which calibration"); `--calibration none` the datasheet roofline.
  CHECK(d["calibration"].str() == "hardware/calibration/h100.toml");   // the H100's own (run 54)
  CHECK(d["calibration_choice"].str() == "default");
  const Json n = parse_json(run_cli({"run", s, "--json", "--calibration", "none"}).out)["resolved"];
  CHECK(n["calibration"].str().empty());
  CHECK(n["calibration_choice"].str() == "none");
  // The block's conventions appear where the model file states them (a Llama file states none).
  CHECK_FALSE(d["model"].has("bias"));
  const auto nem = run_cli({"run", s, "--json", "--set", "model=nemotron4-15b"});
  REQUIRE(nem.code == 0);
  const Json nm = parse_json(nem.out)["resolved"]["model"];
  CHECK_FALSE(nm["bias"].boolean());
  CHECK_FALSE(nm["dropout"].boolean());
  CHECK(nm["rope"].boolean());
  CHECK(nm["norm"].str() == "layernorm");
}

TEST_CASE("cli: the bad-input corpus exits 2 with FILE:LINE:COL: error: (check and run)") {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(kTestDir + "/bad_input"))
    if (e.path().extension() == ".toml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 20);
  for (const auto& f : files) {
    CAPTURE(f.filename().string());
    std::ifstream in(f);
    std::string line, expect;
    std::vector<std::string> sets;
    while (std::getline(in, line) && line.rfind("# ", 0) == 0) {
      if (line.rfind("# expect: ", 0) == 0) expect = line.substr(10);
      if (line.rfind("# set: ", 0) == 0) sets.push_back(line.substr(7));
    }
    REQUIRE_FALSE(expect.empty());
    for (const char* cmd : {"check", "run"}) {
      CAPTURE(cmd);
      std::vector<std::string> args = {cmd, f.string()};
      for (const auto& s : sets) {
        args.push_back("--set");
        args.push_back(s);
      }
      const auto r = run_cli(args);
      CAPTURE(r.err);
      CHECK(r.code == 2);
      CHECK(r.out.empty());
      CHECK(r.err.find(expect) != std::string::npos);
      check_diagnostics(r.err);
    }
  }
  // A positioned message names the file as given, then line and column; all
  // problems are reported together (here tp=3 breaks heads and seq_len).
  const auto r = run_cli({"check", kTestDir + "/bad_input/tp_heads.toml"});
  const auto ls = lines_of(r.err);
  CHECK(ls.size() == 2);
  CHECK(std::any_of(ls.begin(), ls.end(), [](const std::string& l) {
    return l.rfind(kTestDir + "/bad_input/tp_heads.toml:14:1: error: tensor parallel size (tp=3)", 0) == 0;
  }));
}

TEST_CASE("cli: unreadable files, bad --set and unknown flags exit 2 with a one-line error") {
  const std::string s = kRoot + "/scenarios/8xh100_llama3_8b.toml";
  struct Case {
    std::vector<std::string> args;
    std::string expect;   // substring of stderr
  };
  const std::vector<Case> cases = {
      {{"run", kRoot + "/scenarios/no_such_scenario.toml"}, "no_such_scenario.toml: error: "},
      {{"check", kRoot + "/scenarios"}, "scenarios: error: "},                      // a directory
      {{kRoot + "/scenarios/no_such_scenario.toml"}, "no_such_scenario.toml: error: "},
      {{"run", s, "--set", "parallel.pp=x"}, "--set parallel.pp=x: error: "},
      {{"run", s, "--set", "parallel.tpp=2"}, "error: "},
      {{"run", s, "--set", "parallel.pp"}, "error: "},                              // no '='
      {{"run", s, "--set", "parallel.tp=3"}, "error: "},                            // inconsistent
      {{"run", s, "--calibration", kRoot + "/no_such_calibration.toml"}, "error: "},
      {{"run", s, "--frobnicate"}, ""},                                              // unknown flag
      {{"check", s, "--json"}, ""},                                                  // flag of another command
      {{"list", "widgets"}, "error: "},
      {{"sweep", s, "--vary", "parallel.pp"}, "error: "},
      {{}, ""},                                                                      // no command
  };
  for (const auto& c : cases) {
    std::string joined;
    for (const auto& a : c.args) joined += a + " ";
    CAPTURE(joined);
    const auto r = run_cli(c.args);
    CAPTURE(r.err);
    CHECK(r.code == 2);
    CHECK_FALSE(r.err.empty());
    CHECK(r.err.find(c.expect) != std::string::npos);
    CHECK(r.err.find("internal error") == std::string::npos);
  }
  // Cannot write the trace: bad input, not a crash.
  const auto w = run_cli({"run", s, "--trace", kRoot + "/no_such_dir/x.json"});
  CHECK(w.code == 2);
  CHECK(w.err.find("error: cannot write the trace file") != std::string::npos);
}

TEST_CASE("cli: list models|hardware|schedules") {
  const auto models = run_cli({"list", "models"});
  CHECK(models.code == 0);
  // Each line is NAME, two spaces, its size (the name alone is the first field).
  auto first_fields = [](const std::vector<std::string>& lines) {
    std::vector<std::string> out;
    for (const auto& l : lines) out.push_back(l.substr(0, l.find(' ')));
    return out;
  };
  const auto ml = first_fields(lines_of(models.out));
  for (const char* m : {"llama2-70b", "llama3-8b", "llama3.1-405b", "gpt3-175b", "deepseek-v3"}) {
    CAPTURE(m);
    CHECK(std::find(ml.begin(), ml.end(), m) != ml.end());
  }
  const auto hw = run_cli({"list", "hardware"});
  CHECK(hw.code == 0);
  const auto hl = first_fields(lines_of(hw.out));
  for (const char* h : {"h100-sxm", "a100-sxm-80gb"}) {
    CAPTURE(h);
    CHECK(std::find(hl.begin(), hl.end(), h) != hl.end());
  }
  // SPEC §3: gpipe | 1f1b | interleaved-1f1b | zb-h1 | zb-h2 | zb-v | dualpipe | dualpipev | zb-auto | v-half | v-min
  const auto sc = run_cli({"list", "schedules"});
  CHECK(sc.code == 0);
  auto sl = lines_of(sc.out);
  std::sort(sl.begin(), sl.end());
  std::vector<std::string> want = {"gpipe", "1f1b",     "interleaved-1f1b", "zb-h1",   "zb-h2", "zb-v",
                                   "dualpipe", "dualpipev", "zb-auto",        "v-half", "v-min"};
  std::sort(want.begin(), want.end());
  CHECK(sl == want);
}

TEST_CASE("cli: --trace writes Chrome trace JSON, one process per rank and one thread per stream") {
  // A real scenario (not lab mode), trimmed to 16 micro-batches: pp 4, TP, DP, data workers.
  const std::string s = kRoot + "/scenarios/128xh100_70b.toml";
  const std::string trace = (scratch_dir() / "trace.json").string();
  const std::string svg = (scratch_dir() / "timeline.svg").string();
  const auto r = run_cli({"run", s, "--set", "training.global_batch=64", "--trace", trace, "--svg", svg});
  REQUIRE(r.code == 0);
  Json j;
  REQUIRE_NOTHROW(j = parse_json(slurp(trace)));
  REQUIRE(j["traceEvents"].is_array());
  std::map<int, std::string> processes;                  // pid -> name
  std::map<std::pair<int, int>, std::string> threads;    // (pid, tid) -> name
  std::set<std::pair<int, int>> used;                    // threads with events
  std::set<std::string> names;
  std::size_t complete = 0;
  for (const auto& e : j["traceEvents"].array()) {
    const std::string ph = e["ph"].str();
    const int pid = static_cast<int>(e["pid"].num()), tid = static_cast<int>(e["tid"].num());
    if (ph == "M" && e["name"].str() == "process_name") processes[pid] = e["args"]["name"].str();
    if (ph == "M" && e["name"].str() == "thread_name") threads[{pid, tid}] = e["args"]["name"].str();
    if (ph == "X") {
      ++complete;
      used.insert({pid, tid});
      names.insert(e["name"].str());
      CHECK(e["ts"].num() >= 0);
      CHECK(e["dur"].num() >= 0);
      CHECK(e["cat"].is_string());
    }
  }
  // pp = 4: processes 0..3, named "rank N".
  REQUIRE(processes.size() == 4);
  for (int p = 0; p < 4; ++p) CHECK(processes[p] == "rank " + std::to_string(p));
  // Every thread with events is named, and each rank has a compute thread plus
  // its communication streams (tp, pp sends, dp).
  for (const auto& t : used) {
    CAPTURE(t.first);
    CAPTURE(t.second);
    CHECK(threads.count(t));
  }
  for (int p = 0; p < 4; ++p) {
    std::set<std::string> mine;
    std::size_t count = 0;
    for (const auto& [k, v] : threads)
      if (k.first == p) { mine.insert(v); ++count; }
    CAPTURE(p);
    CHECK(mine.size() == count);   // one thread per stream: names unique within a rank
    for (const char* st : {"compute", "tp", "dp", "pp send fwd", "pp send bwd"}) {
      CAPTURE(st);
      CHECK(mine.count(st));
    }
  }
  CHECK(complete > 1000);
  // Ops are named like `F mb3 chunk1` (SPEC §5).
  CHECK(names.count("F mb0 chunk0"));
  CHECK(names.count("B mb15 chunk0"));

  const std::string pic = slurp(svg);
  REQUIRE(pic.size() > 1000);
  CHECK(pic.find("<svg") != std::string::npos);
  CHECK(pic.find("</svg>") != std::string::npos);
  CHECK(pic.find("<rect") != std::string::npos);
  CHECK(pic.find("xmlns=\"http://www.w3.org/2000/svg\"") != std::string::npos);
}

TEST_CASE("cli: the same scenario run twice gives byte-identical JSON") {
  // 128xh100_70b has seeded GC pauses, data workers and a what-if ladder.
  const std::string s = kRoot + "/scenarios/128xh100_70b.toml";
  const auto a = run_cli({"run", s, "--json"});
  const auto b = run_cli({"run", s, "--json"});
  REQUIRE(a.code == 0);
  CHECK(a.out == b.out);
}

TEST_CASE("step::simulate is deterministic across threads in one process") {
  // The core has no global state (STYLE.md): two threads simulating at once get
  // the same bytes as one thread alone.
  for (const char* name : {"128xh100_70b.toml", "2048xh100_deepseek_v3.toml"}) {
    CAPTURE(name);
    const auto sc = config::load_scenario(kRoot + "/scenarios/" + name).base;
    auto once = [&] { return report::to_json(step::simulate(sc)); };
    const std::string alone = once();
    std::string t1, t2;
    std::thread a([&] { t1 = once(); });
    std::thread b([&] { t2 = once(); });
    a.join();
    b.join();
    CHECK(t1 == alone);
    CHECK(t2 == alone);
  }
}

TEST_CASE("cli: a schedule-lab scenario reads as a lab report, not a zero-MFU model report") {
  // [schedule.costs] (SPEC §3): only the schedule is simulated. 1F1B, p = 4,
  // m = 8, f = 1 ms, b = 2 ms, comm = 0.1 ms: rank r holds p - r activations
  // at its peak (Narayanan et al. 2021 §2.2: 1F1B keeps at most p in flight).
  const fs::path lab = scratch_dir() / "lab.toml";
  std::ofstream(lab) << "name = \"lab 1f1b\"\nmodel = \"llama2-7b\"\nhardware = \"h100-sxm\"\n[cluster]\ngpus = 4\n"
                        "[training]\nseq_len = 4096\nglobal_batch = 8\nmicro_batch = 1\n[parallel]\npp = 4\n"
                        "[schedule]\nname = \"1f1b\"\n[schedule.costs]\nf = 1.0\nb = 2.0\ncomm = 0.1\n";
  const auto r = run_cli({"run", lab.string()});
  REQUIRE(r.code == 0);
  CHECK(r.out.find("schedule lab: f 1.0 ms, b 2.0 ms, comm 100 us") != std::string::npos);
  CHECK(r.out.find("MFU") == std::string::npos);
  CHECK(r.out.find("tokens/s") == std::string::npos);
  CHECK(r.out.find("Activations in flight per pipeline rank") != std::string::npos);
  for (int rank = 0; rank < 4; ++rank) {
    char line[64];
    std::snprintf(line, sizeof line, "  rank %3d %5d\n", rank, 4 - rank);
    CAPTURE(line);
    CHECK(r.out.find(line) != std::string::npos);
  }
  const auto j = run_cli({"run", lab.string(), "--json"});
  REQUIRE(j.code == 0);
  const Json doc = parse_json(j.out);
  check_breakdown_sum(doc);
}

TEST_CASE("cli: calibrate refuses a probe file with a 15,000-segment dotted key: exit 2 with its position") {
  std::string key = "a";
  for (int i = 1; i < 15000; ++i) key += ".a";
  const fs::path probe = scratch_dir() / "deep_probe.toml";
  std::ofstream(probe) << "# probe output\n" << key << " = 1\n";
  const fs::path out = scratch_dir() / "deep_cal.toml";
  const auto r = run_cli({"calibrate", probe.string(), "--out", out.string()});
  CAPTURE(r.err);
  CHECK(r.code == 2);
  CHECK(r.err.find(probe.string() + ":2:1: error: tables nest more than 64 levels deep") != std::string::npos);
  CHECK(r.err.find("internal error") == std::string::npos);
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("cli: a step too large to simulate: run exits 2 at once with the estimate and the way out; plan too") {
  const std::string s = kRoot + "/scenarios/8xh100_llama3_8b.toml";
  // 4,194,304 sequences on dp 4: 1,048,576 micro-batches per pipeline (took 28 s and 13 GB,
  // four million exhausted memory, before the estimate).
  auto t0 = std::chrono::steady_clock::now();
  const auto r = run_cli({"run", s, "--set", "training.global_batch=4194304"});
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CAPTURE(r.err);
  CHECK(r.code == 2);
  CHECK(r.err.find("mfusim: error: the step is too large to simulate: 1048576 micro-batches") != std::string::npos);
  CHECK(r.err.find("--coarse") != std::string::npos);
  CHECK(r.err.find("internal error") == std::string::npos);
  CHECK(r.err.find("bad_alloc") == std::string::npos);
  CHECK(secs < 10);
  // --coarse runs what per-layer refuses (80,000 micro-batches).
  const auto c = run_cli({"run", s, "--coarse", "--set", "training.global_batch=320000"});
  CAPTURE(c.err);
  CHECK(c.code == 0);
  CHECK(c.out.find("80000 micro-batches") != std::string::npos);
  // plan simulates every point coarse; at this size each is refused at once, with its reason.
  t0 = std::chrono::steady_clock::now();
  const auto p = run_cli({"plan", s, "--set", "training.global_batch=16777216"});
  secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CAPTURE(p.out);
  CAPTURE(p.err);
  CHECK((p.code == 0 || p.code == 2));
  CHECK((p.out + p.err).find("too large to simulate") != std::string::npos);
  CHECK((p.out + p.err).find("internal error") == std::string::npos);
  CHECK(secs < 30);
}
