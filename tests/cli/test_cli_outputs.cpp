// CLI hardening (SPEC §2): --version; output files written all-or-nothing;
// write errors on stdout and files exit 2 with a message; calibrate never
// writes over its probe; sweep and plan keep the user's overrides, refuse
// --vary typos and oversized sweeps; a step beyond the time limit is an error.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/cli/cli_support.h"
#include "tests/cli/json_reader.h"

using namespace mfusim::testing;
namespace fs = std::filesystem;

namespace {
const std::string kS = kRoot + "/scenarios/8xh100_llama3_8b.toml";

// `mfusim ARGS > /dev/full`: exit code and stderr.
CliResult run_to_full(const std::vector<std::string>& args) {
  const fs::path err = scratch_dir() / "full-err.txt";
  std::string cmd = shell_quote(kCli);
  for (const auto& a : args) cmd.append(" ").append(shell_quote(a));
  cmd.append(" </dev/null >/dev/full 2>").append(shell_quote(err.string()));
  const int status = std::system(cmd.c_str());
  CliResult r;
  if (status != -1 && WIFEXITED(status)) r.code = WEXITSTATUS(status);
  r.err = slurp(err);
  return r;
}
}  // namespace

TEST_CASE("cli: --version prints mfusim and the project version, exit 0") {
  const auto r = run_cli({"--version"});
  CHECK(r.code == 0);
  CHECK(r.out.rfind("mfusim ", 0) == 0);
  CHECK(r.out.find('.') != std::string::npos);   // 0.1.0 style
}

TEST_CASE("cli: a failed write on standard output exits 2 with a message") {
  if (!fs::exists("/dev/full")) return;
  // Outputs shorter than stdio's buffer fail at the final flush; the sweep's 13 kB fails while it is written,
  // and its errno must still reach the message (it once read "Input/output error").
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"run", kS, "--json"}, {"run", kS}, {"check", kS},
           {"sweep", kS, "--vary", "training.micro_batch=1,2,4", "--json"}}) {
    const auto r = run_to_full(args);
    CAPTURE(args[0]);
    CHECK(r.code == 2);
    CHECK(r.err.find("error: cannot write standard output: No space left on device") != std::string::npos);
  }
}

TEST_CASE("cli: when --svg cannot be written, --trace is left as it was (all or nothing)") {
  const fs::path d = scratch_dir() / "atomic";
  fs::create_directories(d);
  const std::string trace = (d / "trace.json").string();
  std::ofstream(trace) << "previous trace";
  const auto r = run_cli({"run", kS, "--trace", trace, "--svg", (d / "missing" / "t.svg").string()});
  CHECK(r.code == 2);
  CHECK(r.err.find("error: cannot write the SVG file: No such file or directory") != std::string::npos);
  CHECK(slurp(trace) == "previous trace");
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(d)) ++n;
  CHECK(n == 1);   // no temporary left
  CHECK(r.out.empty());   // no report printed for a failed command
  // Both writable: both replaced.
  const auto ok = run_cli({"run", kS, "--trace", trace, "--svg", (d / "t.svg").string()});
  REQUIRE(ok.code == 0);
  CHECK(slurp(trace).rfind("{", 0) == 0);
  CHECK(slurp(d / "t.svg").find("<svg") != std::string::npos);
  // An output over the scenario itself is refused; the scenario stays.
  const std::string scen = (d / "s.toml").string();
  fs::copy_file(kS, scen);
  const auto over = run_cli({"run", scen, "--trace", scen});
  CHECK(over.code == 2);
  CHECK(over.err.find("--trace names the scenario file itself") != std::string::npos);
  CHECK(slurp(scen) == slurp(kS));
  fs::remove(scen);
  // A sweep's CSV likewise names the file and the reason.
  const auto c = run_cli({"sweep", kS, "--vary", "parallel.pp=1", "--csv", (d / "no" / "x.csv").string()});
  CHECK(c.code == 2);
  CHECK(c.err.find("error: cannot write the CSV file: No such file or directory") != std::string::npos);
}

TEST_CASE("cli: calibrate refuses to write over its probe file, by any path") {
  const fs::path d = scratch_dir() / "cal";
  fs::create_directories(d / "sub");
  const std::string probe = (d / "p.toml").string();
  fs::copy_file(kRoot + "/probe/results/run9-x2/h200x2-nccl.toml", probe);
  const std::string before = slurp(probe);
  for (const std::string& out : {probe, (d / "sub" / ".." / "p.toml").string()}) {
    const auto r = run_cli({"calibrate", probe, "--out", out});
    CAPTURE(out);
    CHECK(r.code == 2);
    CHECK(r.err.find("error: --out names the probe file itself") != std::string::npos);
  }
  fs::create_symlink(probe, d / "link.toml");
  CHECK(run_cli({"calibrate", (d / "link.toml").string(), "--out", probe}).code == 2);
  CHECK(slurp(probe) == before);
  // Another file: written.
  const auto ok = run_cli({"calibrate", probe, "--out", (d / "cal.toml").string()});
  CHECK(ok.code == 0);
  CHECK(slurp(d / "cal.toml").find("format = \"mfusim-calibration-1\"") != std::string::npos);
}

TEST_CASE("cli: sweep and plan keep --set hardware.* under --vary hardware; typos and huge sweeps exit 2") {
  // Llama-3-8B's training state takes ~55 GiB per GPU here: nothing fits in 20 GiB.
  const auto sw = run_cli({"sweep", kS, "--set", "hardware.hbm_gib=20", "--vary", "hardware=h100-sxm,b200"});
  REQUIRE(sw.code == 0);
  CHECK(sw.out.find(" yes") == std::string::npos);
  CHECK(sw.out.find(" NO") != std::string::npos);
  const auto pl = run_cli({"plan", kS, "--set", "hardware.hbm_gib=20", "--vary", "hardware=h100-sxm,b200", "--json"});
  REQUIRE(pl.code == 0);
  // Every listed layout peaks within 20 GiB.
  std::size_t at = 0, listed = 0;
  while ((at = pl.out.find("\"peak_gib\": ", at)) != std::string::npos) {
    at += 12;
    CHECK(std::stod(pl.out.substr(at, 12)) <= 20.0);
    ++listed;
  }
  CHECK(listed > 0);
  const auto typo = run_cli({"sweep", kS, "--vary", "parallel.ppp=1,2"});
  CHECK(typo.code == 2);
  CHECK(typo.err.find("unknown key 'parallel.ppp'") != std::string::npos);
  std::string many;
  for (int i = 0; i < 400; ++i) {
    if (i) many.push_back(',');
    many.append(std::to_string(i % 4 + 1));
  }
  const auto big = run_cli({"sweep", kS, "--vary", "parallel.pp=" + many, "--vary", "training.micro_batch=" + many});
  CHECK(big.code == 2);
  CHECK(big.err.find("160000 points") != std::string::npos);
}

TEST_CASE("cli: a step beyond the time limit exits 2 with a message, never a wrapped or crashed report") {
  // Every value inside its documented range; the step would last years.
  const auto r = run_cli({"run", kS, "--set", "training.micro_batch=1048576", "--set", "training.global_batch=4194304",
                          "--set", "training.seq_len=1048576"});
  CHECK(r.code == 2);
  CHECK(r.err.find("1e6 s") != std::string::npos);
  CHECK(r.err.find("internal error") == std::string::npos);
  // A huge latency makes the step slower or an error, never faster.
  const auto base = run_cli({"run", kS, "--json"});
  const auto absurd = run_cli({"run", kS, "--json", "--set", "hardware.nvlink_latency_us=1e9"});
  REQUIRE(base.code == 0);
  CHECK(absurd.code == 2);   // beyond the physical range of the input: refused before simulating
  CHECK(absurd.err.find("outside the physically plausible range") != std::string::npos);
  const auto slow = run_cli({"run", kS, "--json", "--set", "hardware.nvlink_latency_us=1e6"});
  REQUIRE(slow.code == 0);
  CHECK(mfusim::testing::parse_json(slow.out)["step_time_s"].num() > mfusim::testing::parse_json(base.out)["step_time_s"].num());
}

TEST_CASE("cli: plan names why points failed, in the text and the JSON") {
  // A GPU of 1 GFLOP/s (the lower end of the input range), 12 sequences a step: the slower layouts pass the 1e6 s limit.
  const auto t = run_cli({"plan", kS, "--set", "hardware.peak_tflops_bf16=0.001", "--set", "training.global_batch=12", "--top", "2"});
  REQUIRE(t.code == 0);
  CHECK(t.out.find("FAILED to simulate") != std::string::npos);
  CHECK(t.out.find("  failed: ") != std::string::npos);
  CHECK(t.out.find("1e6 s") != std::string::npos);
  const auto j = run_cli({"plan", kS, "--set", "hardware.peak_tflops_bf16=0.001", "--set", "training.global_batch=12", "--top", "2", "--json"});
  REQUIRE(j.code == 0);
  CHECK(j.out.find("\"failed\":{\"error: ") != std::string::npos);
  CHECK(j.err.find("failed to simulate: ") != std::string::npos);
}

TEST_CASE("cli: a hand-edited calibration with an absurd value is refused with its position") {
  const std::string cal = (scratch_dir() / "absurd.toml").string();
  std::string text = slurp(kRoot + "/hardware/calibration/h200.toml");
  const std::string key = "achieved_bandwidth_gbs = ";
  const auto at = text.find(key);
  REQUIRE(at != std::string::npos);
  const auto eol = text.find('\n', at);
  text.replace(at, eol - at, key + "2.6e19");
  std::ofstream(cal) << text;
  const auto r = run_cli({"run", kS, "--calibration", cal});
  CHECK(r.code == 2);
  CHECK(r.err.find(cal + ":") != std::string::npos);
  CHECK(r.err.find("'achieved_bandwidth_gbs' must be in (0, 100000]") != std::string::npos);
}
