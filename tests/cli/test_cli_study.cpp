// Sweeps and plans over a cluster (--shard K/N, mfusim merge), plan's
// constraints (--set held, --headroom, --framework), what-if rows, list and
// name suggestions, the MFU conventions (SPEC §2, issue "answers a planner can trust").
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/cli_support.h"
#include "tests/cli/json_reader.h"

using namespace mfusim::testing;

namespace {

const std::string kS8 = kRoot + "/scenarios/8xh100_llama3_8b.toml";

std::string write_part(const std::string& name, const std::string& text) {
  const auto p = scratch_dir() / name;
  std::ofstream(p, std::ios::binary) << text;
  return p.string();
}

std::vector<std::string> text_lines(const std::string& s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

TEST_CASE("cli: sweep --shard K/N: the merged parts are the unsharded sweep, byte for byte") {
  const std::vector<std::string> args = {"sweep", kS8, "--json", "--vary", "parallel.tp=1,2,3,4,8",
                                         "--vary", "training.micro_batch=1,2"};
  const auto whole = run_cli(args);
  REQUIRE(whole.code == 0);
  for (int n : {1, 3, 13}) {   // 13 > 10 points: some shards are empty
    CAPTURE(n);
    std::vector<std::string> parts;
    std::size_t rows = 0;
    for (int k = n; k >= 1; --k) {   // any order
      const auto part = run_cli(with(args, {"--shard", std::to_string(k) + "/" + std::to_string(n)}));
      REQUIRE(part.code == 0);
      const auto j = parse_json(part.out);
      CHECK(j["mfusim_part"].str() == "sweep");
      CHECK(j["shard"].num() == k);
      CHECK(j["points"].num() == 10);
      rows += j["rows"].array().size();
      parts.push_back(write_part("sweep" + std::to_string(n) + "-" + std::to_string(k) + ".json", part.out));
    }
    CHECK(rows == 10);
    const auto merged = run_cli(with({"merge"}, parts));
    REQUIRE(merged.code == 0);
    CHECK(merged.out == whole.out);
  }
}

TEST_CASE("cli: plan --shard K/N: the merged parts rank as the unsharded plan, byte for byte") {
  const std::vector<std::string> args = {"plan", kS8, "--json", "--top", "4"};
  const auto whole = run_cli(args);
  REQUIRE(whole.code == 0);
  std::vector<std::string> parts;
  for (int k = 1; k <= 3; ++k) {
    const auto part = run_cli(with(args, {"--shard", std::to_string(k) + "/3"}));
    REQUIRE(part.code == 0);
    CHECK(parse_json(part.out)["mfusim_part"].str() == "plan");
    parts.push_back(write_part("plan-" + std::to_string(k) + ".json", part.out));
  }
  const auto merged = run_cli(with({"merge"}, {parts[2], parts[0], parts[1]}));
  REQUIRE(merged.code == 0);
  CHECK(merged.out == whole.out);
  const auto rows = parse_json(merged.out);
  REQUIRE(rows.array().size() == 4);
  CHECK(rows.array()[0]["point"]["rank_in_choice"].num() == 1);

  // A missing or repeated shard, a sweep part among plan parts, bad --shard values: exit 2.
  const auto missing = run_cli({"merge", parts[0], parts[2]});
  CHECK(missing.code == 2);
  CHECK(missing.err.find("shard 2 of 3 is missing") != std::string::npos);
  CHECK(run_cli({"merge", parts[0], parts[0], parts[1]}).code == 2);
  for (const char* bad : {"0/3", "4/3", "3", "a/b", "1/0"}) {
    CAPTURE(bad);
    const auto r = run_cli(with(args, {"--shard", bad}));
    CHECK(r.code == 2);
    CHECK(r.err.find("--shard") != std::string::npos);
  }
  CHECK(run_cli({"plan", kS8, "--shard", "1/2"}).code == 2);   // a part is JSON
  CHECK(run_cli({"sweep", kS8, "--vary", "parallel.tp=1,2", "--shard", "1/2"}).code == 2);
}

TEST_CASE("cli: plan holds the keys set with --set, says what it searched, keeps the headroom") {
  const auto r = run_cli({"plan", kS8, "--json", "--top", "5", "--set", "schedule.name=1f1b", "--set", "parallel.cp=1",
                          "--set", "features.recompute=selective"});
  REQUIRE(r.code == 0);
  const auto rows = parse_json(r.out);
  REQUIRE(!rows.array().empty());
  for (const auto& x : rows.array()) {
    CHECK(x["point"]["schedule"].str() == "1f1b");
    CHECK(x["point"]["recompute"].str() == "selective");
    CHECK(x["parallel"]["cp"].num() == 1);
  }
  const auto t = run_cli({"plan", kS8, "--top", "3", "--set", "schedule.name=1f1b", "--set", "parallel.cp=1"});
  REQUIRE(t.code == 0);
  CHECK(t.out.find("searched: tp 1,2,4,8 | cp 1 |") != std::string::npos);
  CHECK(t.out.find("| schedules 1f1b |") != std::string::npos);
  CHECK(t.out.find("held by --set: parallel.cp schedule.name") != std::string::npos);
  CHECK(t.out.find("free GiB") != std::string::npos);

  // Headroom: every pick keeps that much free; without it some pick keeps less.
  const auto all = parse_json(run_cli({"plan", kS8, "--json", "--top", "10"}).out);
  double least = 1e9;
  for (const auto& x : all.array()) least = std::min(least, x["point"]["margin_gib"].num());
  const double want = least + 1.0;
  const auto h = run_cli({"plan", kS8, "--json", "--top", "10", "--headroom", std::to_string(want)});
  REQUIRE(h.code == 0);
  const auto hr = parse_json(h.out);
  REQUIRE(!hr.array().empty());
  for (const auto& x : hr.array()) {
    CHECK(x["point"]["margin_gib"].num() >= want);
    CHECK(x["memory"]["capacity_gib"].num() - x["memory"]["peak_gib"].num() >= want);
  }
  const auto pct = run_cli({"plan", kS8, "--json", "--top", "3", "--headroom", "25%"});
  REQUIRE(pct.code == 0);
  const auto pct_rows = parse_json(pct.out);   // a named tree: the loop must not outlive a temporary
  for (const auto& x : pct_rows.array()) CHECK(x["point"]["margin_gib"].num() >= 0.25 * 80 - 1e-9);
  for (const char* bad : {"-1", "100%", "x", ""}) {
    CAPTURE(bad);
    CHECK(run_cli({"plan", kS8, "--headroom", bad}).code == 2);
  }
}

TEST_CASE("cli: plan --framework keeps the search to what the framework ships") {
  struct Case { const char* fw; std::vector<std::string> schedules; std::vector<std::string> recompute; bool cp; };
  const std::vector<Case> cases = {
      {"megatron", {"1f1b", "interleaved-1f1b"}, {"none", "selective", "full"}, true},
      {"torchtitan", {"gpipe", "1f1b", "interleaved-1f1b", "zb-v", "dualpipev"}, {"none", "selective-op", "full"}, true},
      {"deepspeed", {"1f1b"}, {"none", "full"}, false},
  };
  for (const auto& c : cases) {
    CAPTURE(c.fw);
    const auto r = run_cli({"plan", kS8, "--json", "--top", "20", "--framework", c.fw});
    REQUIRE(r.code == 0);
    const auto rows = parse_json(r.out);
    REQUIRE(!rows.array().empty());
    for (const auto& x : rows.array()) {
      CHECK(std::find(c.schedules.begin(), c.schedules.end(), x["point"]["schedule"].str()) != c.schedules.end());
      CHECK(std::find(c.recompute.begin(), c.recompute.end(), x["point"]["recompute"].str()) != c.recompute.end());
      if (!c.cp) CHECK(x["parallel"]["cp"].num() == 1);
    }
    const auto t = run_cli({"plan", kS8, "--top", "1", "--framework", c.fw});
    CHECK(t.out.find(std::string("framework ") + c.fw) != std::string::npos);
  }
  const auto bad = run_cli({"plan", kS8, "--framework", "jax"});
  CHECK(bad.code == 2);
  CHECK(bad.err.find("expected megatron, torchtitan, deepspeed or any") != std::string::npos);
}

TEST_CASE("cli: a what-if rung that --set makes infeasible is a row that says why") {
  const std::string s = kRoot + "/scenarios/128xh100_70b.toml";
  const auto r = run_cli({"run", s, "--set", "model=llama3-8b", "--set", "parallel.pp=1"});
  REQUIRE(r.code == 0);
  CHECK(r.out.find("infeasible:") != std::string::npos);
  const auto j = run_cli({"run", s, "--json", "--set", "model=llama3-8b", "--set", "parallel.pp=1"});
  REQUIRE(j.code == 0);
  const auto doc = parse_json(j.out);
  int infeasible = 0, feasible = 0;
  for (const auto& w : doc["whatif"].array()) {
    if (w.has("error")) {
      ++infeasible;
      CHECK(!w["error"].str().empty());
      CHECK(w["fits"].boolean() == false);
    } else {
      ++feasible;
      CHECK(w["step_time_s"].num() > 0);
    }
  }
  CHECK(infeasible >= 1);
  CHECK(feasible >= 1);
  // Without --set the shipped ladder has no infeasible rung.
  const auto plain = parse_json(run_cli({"run", s, "--json"}).out);
  for (const auto& w : plain["whatif"].array()) CHECK(!w.has("error"));
}

TEST_CASE("cli: list shows sizes; an unknown hardware name suggests the profile it starts") {
  const auto m = run_cli({"list", "models"});
  REQUIRE(m.code == 0);
  CHECK(m.out.find("llama3-8b  8.03 B params, 32 layers, hidden 4096\n") != std::string::npos);
  CHECK(m.out.find("deepseek-v3  ") != std::string::npos);
  CHECK(m.out.find(" activated), 61 layers") != std::string::npos);
  const auto h = run_cli({"list", "hardware"});
  REQUIRE(h.code == 0);
  CHECK(h.out.find("h100-sxm  bf16 989 TFLOP/s, fp8 1979, HBM 80 GiB") != std::string::npos);
  CHECK(h.out.find("per GPU, list price 6.155 USD/GPU-h\n") != std::string::npos);   // h100-sxm's
  const auto bad = run_cli({"run", kS8, "--set", "hardware=h100"});
  CHECK(bad.code == 2);
  CHECK(bad.err.find("did you mean 'h100-sxm'?") != std::string::npos);
}

TEST_CASE("cli: fp8 reports the MFU against the bf16 peak too; CSV headers carry units") {
  const auto r = run_cli({"run", kS8, "--json", "--set", "training.precision=fp8"});
  REQUIRE(r.code == 0);
  const auto j = parse_json(r.out);
  REQUIRE(j.has("mfu_bf16_peak"));
  const auto& hw = j["resolved"]["hardware"];
  CHECK(j["mfu_bf16_peak"].num() ==
        doctest::Approx(j["mfu"].num() * hw["peak_tflops_fp8"].num() / hw["peak_tflops_bf16"].num()).epsilon(1e-9));
  CHECK(!parse_json(run_cli({"run", kS8, "--json"}).out).has("mfu_bf16_peak"));
  const auto t = run_cli({"run", kS8, "--set", "training.precision=fp8"});
  CHECK(t.out.find("MFU (bf16 peak)") != std::string::npos);
  CHECK(t.out.find("conventions      MFU counts 6 x activated parameters") != std::string::npos);

  const auto csv = (scratch_dir() / "units.csv").string();
  const auto s = run_cli({"sweep", kS8, "--vary", "training.precision=bf16,fp8", "--csv", csv});
  REQUIRE(s.code == 0);
  CHECK(s.out.find("MFU bf16") != std::string::npos);
  const auto text = slurp(csv);
  CHECK(text.rfind("training.precision,step_s,mfu_fraction,mfu_bf16_peak_fraction,bubble_fraction,exposed_comm_s,"
                   "peak_gib,fits,tokens_per_s,days_to_train,cost_usd,error\n", 0) == 0);
}

TEST_CASE("cli: diagnose calls the planner for layout levers, proposes what makes a base fit, says why") {
  // Pure data parallelism at 8k tokens does not fit (~96 GiB per GPU).
  const auto r = run_cli({"diagnose", kS8, "--json", "--set", "parallel.tp=1", "--set",
                          "parallel.sequence_parallel=false"});
  REQUIRE(r.code == 0);
  const auto rows = parse_json(r.out);
  const Json* fit = nullptr;
  for (const auto& x : rows.array())
    if (x["lever"].str() == "layout that fits (planner)") fit = &x;
  REQUIRE(fit != nullptr);
  CHECK((*fit)["fits"].boolean());
  CHECK((*fit)["planner"].boolean());
  CHECK((*fit)["change"].str().find("parallel.tp") == std::string::npos);   // tp was set: held
  CHECK((*fit)["why"].str().find("does not fit") != std::string::npos);
  // The rows that fit say that they make it fit; the first rows are the fitting ones.
  CHECK(rows.array().front()["fits"].boolean());
  for (const auto& x : rows.array())
    if (x["fits"].boolean() && x["lever"].str() != "layout that fits (planner)") CHECK(x["why"].str().rfind("it fits", 0) == 0);

  const auto t = run_cli({"diagnose", kS8});
  REQUIRE(t.code == 0);
  CHECK(t.out.find("Why each lever helps") != std::string::npos);
  const auto j = parse_json(run_cli({"diagnose", kS8, "--json"}).out);
  bool planner = false;
  for (const auto& x : j.array()) {
    if (!x["shrinks"].str().empty()) CHECK(!x["why"].str().empty());
    planner = planner || x["planner"].boolean();
  }
  CHECK(planner);   // the 8B base is not the planner's best layout
  // fp8 speeds up the matmuls: it shrinks forward or backward time, and says so.
  bool fp8 = false;
  for (const auto& x : j.array())
    if (x["lever"].str().rfind("precision fp8", 0) == 0) {
      fp8 = true;
      CHECK((x["shrinks"].str() == "forward" || x["shrinks"].str() == "backward"));
      CHECK(x["why"].str().find("fp8 peak") != std::string::npos);
    }
  CHECK(fp8);
}

TEST_CASE("cli: a sweep over schedule-lab scenarios prints n/a for MFU, memory and fits") {
  const fs::path lab = scratch_dir() / "sweep-lab.toml";
  std::ofstream(lab) << "name = \"lab\"\nmodel = \"llama2-7b\"\nhardware = \"h100-sxm\"\n[cluster]\ngpus = 4\n"
                        "[training]\nseq_len = 4096\nglobal_batch = 8\nmicro_batch = 1\n[parallel]\npp = 4\n"
                        "[schedule]\nname = \"1f1b\"\n[schedule.costs]\nf = 1.0\nb = 2.0\ncomm = 0.1\n";
  const auto r = run_cli({"sweep", lab.string(), "--vary", "schedule.name=1f1b,gpipe"});
  REQUIRE(r.code == 0);
  const auto lines = text_lines(r.out);
  REQUIRE(lines.size() == 3);
  for (std::size_t i = 1; i < lines.size(); ++i) {
    CAPTURE(lines[i]);
    CHECK(lines[i].find("n/a") != std::string::npos);
    CHECK(lines[i].find("yes") == std::string::npos);
    CHECK(lines[i].find("0.0%  ") == std::string::npos);
  }
}

TEST_CASE("cli: sweep --vary hardware=NAME@PRICE prices each GPU on its own; the table shows days and cost") {
  const std::vector<std::string> base = {"sweep", kS8, "--set", "training.tokens_to_train=1e12", "--set",
                                         "cost.price_per_gpu_hour=9"};
  const auto j = run_cli(with(base, {"--json", "--vary", "hardware=h100-sxm@2,h200@3.5,b200"}));
  REQUIRE(j.code == 0);
  const auto rows = parse_json(j.out).array();
  REQUIRE(rows.size() == 3);
  CHECK(rows[0]["resolved"]["cost"]["price_per_gpu_hour"].num() == 2);
  CHECK(rows[1]["resolved"]["cost"]["price_per_gpu_hour"].num() == 3.5);
  // No price given: b200's own list price (hardware/b200.toml), not the 9 the scenario gave for its GPU.
  CHECK(rows[2]["resolved"]["cost"]["price_per_gpu_hour"].num() == 8.60);
  CHECK(rows[2]["resolved"]["cost"]["price_source"].str() == "hardware");
  CHECK(rows[0]["resolved"]["cost"]["price_source"].str() == "scenario");
  CHECK(rows[1]["resolved"]["hardware"]["ref"].str() == "h200");
  const double days = rows[0]["days_to_train"].num();
  CHECK(rows[0]["cost_usd"].num() == doctest::Approx(2.0 * 8 * days * 24).epsilon(1e-9));
  const auto t = run_cli(with(base, {"--vary", "hardware=h100-sxm@2,b200"}));
  REQUIRE(t.code == 0);
  CHECK(t.out.find("days") != std::string::npos);
  CHECK(t.out.find("cost $M") != std::string::npos);
  CHECK(t.err.find("priced at its profile's on-demand list price") != std::string::npos);
  // A GPU whose profile publishes no price (b300): no cost on its row, and a note that says so.
  const auto u = run_cli(with(base, {"--json", "--vary", "hardware=h100-sxm,b300"}));
  REQUIRE(u.code == 0);
  const auto urows = parse_json(u.out).array();
  REQUIRE(urows.size() == 2);
  CHECK(urows[0]["resolved"]["cost"]["price_per_gpu_hour"].num() == 6.155);
  CHECK(urows[0]["cost_usd"].num() > 0);
  CHECK(urows[1]["resolved"]["cost"]["price_per_gpu_hour"].num() == 0);
  CHECK(urows[1]["resolved"]["cost"]["price_source"].str() == "none");
  const auto ut = run_cli(with(base, {"--vary", "hardware=h100-sxm,b300"}));
  REQUIRE(ut.code == 0);
  CHECK(ut.err.find("b300 has no published list price") != std::string::npos);
}

TEST_CASE("cli: a scenario without a [cost] price is priced at its hardware profile's list price") {
  const auto j = run_cli({"run", kS8, "--json", "--set", "training.tokens_to_train=1e12"});
  REQUIRE(j.code == 0);
  const auto r = parse_json(j.out);
  const auto& res = r["resolved"];
  const double hw = res["hardware"]["price_per_gpu_hour"].num();
  if (res["hardware"]["ref"].str() == "h100-sxm") CHECK(hw == 6.155);
  CHECK(hw > 0);
  CHECK(res["cost"]["price_per_gpu_hour"].num() == hw);
  CHECK(res["cost"]["price_source"].str() == "hardware");
  CHECK(r["cost_usd"].num() == doctest::Approx(hw * res["cluster"]["gpus"].num() * r["days_to_train"].num() * 24).epsilon(1e-9));
  // The scenario's own price wins over the profile's.
  const auto k = run_cli({"run", kS8, "--json", "--set", "training.tokens_to_train=1e12", "--set", "cost.price_per_gpu_hour=1.5"});
  REQUIRE(k.code == 0);
  CHECK(parse_json(k.out)["resolved"]["cost"]["price_per_gpu_hour"].num() == 1.5);
  CHECK(parse_json(k.out)["resolved"]["cost"]["price_source"].str() == "scenario");
  // A profile's price is checked like its other numbers.
  const auto bad = run_cli({"run", kS8, "--set", "hardware.price_per_gpu_hour=-1"});
  CHECK(bad.code == 2);
  CHECK(bad.err.find("'hardware.price_per_gpu_hour' must be >= 0") != std::string::npos);
}

TEST_CASE("cli: plan says what the validation set says of the best layout's family, and nothing where it has none") {
  // report/accuracy.h: the H100 bf16 family of the modern set, under each choice's header.
  const auto p = run_cli({"plan", kS8, "--top", "1"});
  REQUIRE(p.code == 0);
  const auto header = p.out.find("8 x h100-sxm: ");
  const auto line = p.out.find("\n  accuracy  against ");
  REQUIRE(header != std::string::npos);
  REQUIRE(line != std::string::npos);
  CHECK(line > header);
  CHECK(p.out.find("published H100 bf16 Megatron/NeMo steps", line) != std::string::npos);
  CHECK(p.out.find("  # layout", line) != std::string::npos);
  // The same plan on a profile changed by --set hardware.* (not the GPU the rows ran on): no line.
  const auto q = run_cli({"plan", kS8, "--top", "1", "--set", "hardware.hbm_bandwidth_gbs=2000"});
  REQUIRE(q.code == 0);
  CHECK(q.out.find("  accuracy  ") == std::string::npos);
}

TEST_CASE("cli: a training run that does not finish: run says so, --json has null days and cost, sweep and plan show 'never' last") {
  // 5e4 interruptions per 1,000 GPU-days: on 8 GPUs one every 3.6 min, the run finishes slowly; on 64 GPUs
  // one every 27 s against minutes-long segments and 10-minute restarts: it does not.
  const std::vector<std::string> sets = {"--set", "training.tokens_to_train=1e12", "--set",
                                         "reliability.interruptions_per_1k_gpu_days=5e4"};
  const auto t = run_cli(with(with({"run", kS8}, sets), {"--set", "cluster.gpus=64"}));
  REQUIRE(t.code == 0);
  CHECK(t.out.find("time to train    does not finish") != std::string::npos);
  const auto j = run_cli(with(with({"run", kS8, "--json"}, sets), {"--set", "cluster.gpus=64"}));
  REQUIRE(j.code == 0);
  const auto r = parse_json(j.out);
  CHECK(std::holds_alternative<std::nullptr_t>(r["days_to_train"].v));
  CHECK(std::holds_alternative<std::nullptr_t>(r["cost_usd"].v));
  CHECK(std::get<bool>(r["training_run"]["finishes"].v) == false);
  CHECK(r["training_run"]["days_of_steps"].num() > 0);
  const auto s = run_cli(with(with({"sweep", kS8}, sets), {"--vary", "cluster.gpus=8,64"}));
  REQUIRE(s.code == 0);
  const auto lines = text_lines(s.out);
  REQUIRE(lines.size() >= 3);
  CHECK(lines[lines.size() - 2].find("never") == std::string::npos);   // 8 GPUs: days
  CHECK(lines.back().find("never") != std::string::npos);              // 64 GPUs
  const auto p = run_cli(with(with({"plan", kS8, "--gpus", "64,8", "--rank-by", "days", "--top", "1"}, sets), {}));
  REQUIRE(p.code == 0);
  const auto pl = text_lines(p.out);
  // The purchase table ranks the 8-GPU choice first, the 64-GPU one last with 'never'.
  REQUIRE(pl.size() >= 2);
  CHECK(pl[pl.size() - 2].find(" 8 ") != std::string::npos);
  CHECK(pl.back().find("never") != std::string::npos);
}
