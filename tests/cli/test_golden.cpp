// Golden reports (STYLE.md "Golden reports for every file in scenarios/,
// refreshed deliberately"): `mfusim run scenarios/X.toml` must print exactly
// tests/golden/X.txt. A change in any number or line of the terminal report
// shows up here; when it is intended, regenerate with tests/golden/update.sh
// and review the diff (tests/golden/README.md).
#include <doctest/doctest.h>

#include "tests/cli/cli_support.h"

namespace {

using namespace mfusim::testing;

// The first differing line, for a readable failure.
std::string first_difference(const std::string& want, const std::string& got) {
  std::istringstream a(want), b(got);
  std::string la, lb;
  for (int n = 1;; ++n) {
    const bool ha = static_cast<bool>(std::getline(a, la)), hb = static_cast<bool>(std::getline(b, lb));
    if (!ha && !hb) return "(no line differs: trailing newline or bytes differ)";
    if (!ha || !hb || la != lb)
      return "line " + std::to_string(n) + ":\n  golden: " + (ha ? la : "<end>") + "\n  now:    " + (hb ? lb : "<end>");
  }
}

}  // namespace

TEST_CASE("golden: mfusim run prints tests/golden/<scenario>.txt exactly, for every scenario") {
  const auto scenarios = scenario_files();
  REQUIRE(scenarios.size() >= 5);
  for (const auto& s : scenarios) {
    const fs::path golden = fs::path(kTestDir) / "golden" / (s.stem().string() + ".txt");
    CAPTURE(golden.string());
    INFO("regenerate deliberately with tests/golden/update.sh, then review the diff");
    REQUIRE_MESSAGE(fs::exists(golden), "no golden report for " << s.filename().string());
    const auto r = run_cli({"run", s.string()});
    REQUIRE(r.code == 0);
    CHECK(r.err.empty());
    const std::string want = slurp(golden);
    if (r.out != want) FAIL_CHECK(s.filename().string() << " differs from its golden report, " << first_difference(want, r.out));
  }
  // No stale goldens: every golden file has its scenario.
  for (const auto& e : fs::directory_iterator(fs::path(kTestDir) / "golden")) {
    if (e.path().extension() != ".txt") continue;
    CAPTURE(e.path().string());
    CHECK(fs::exists(fs::path(kRoot) / "scenarios" / (e.path().stem().string() + ".toml")));
  }
}
