#pragma once
// Runs the built `mfusim` binary (path from tests/cli.cmake) and captures its
// exit code, stdout and stderr, for the CLI tests of SPEC §2.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace mfusim::testing {

namespace fs = std::filesystem;

inline const std::string kCli = MFUSIM_CLI;
inline const std::string kTestDir = MFUSIM_TEST_DIR;
inline const std::string kRoot = fs::path(MFUSIM_TEST_DIR).parent_path().string();

struct CliResult {
  int code = -1;
  std::string out, err;
};

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') q.append("'\\''");
    else q.push_back(c);
  }
  q.push_back('\'');
  return q;
}

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A scratch directory for this test process, removed at exit.
inline const fs::path& scratch_dir() {
  struct Dir {
    fs::path path;
    Dir() {
      std::string tmpl = (fs::temp_directory_path() / "mfusim-cli-XXXXXX").string();
      if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
      path = tmpl;
    }
    ~Dir() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  };
  static const Dir d;
  return d.path;
}

// `mfusim ARGS...` with stdin from /dev/null.
inline CliResult run_cli(const std::vector<std::string>& args) {
  static int serial = 0;
  const fs::path out = scratch_dir() / ("out" + std::to_string(serial) + ".txt");
  const fs::path err = scratch_dir() / ("err" + std::to_string(serial) + ".txt");
  ++serial;
  std::string cmd = shell_quote(kCli);
  for (const auto& a : args) cmd.append(" ").append(shell_quote(a));
  cmd.append(" </dev/null >").append(shell_quote(out.string())).append(" 2>").append(shell_quote(err.string()));
  const int status = std::system(cmd.c_str());
  CliResult r;
  if (status != -1 && WIFEXITED(status)) r.code = WEXITSTATUS(status);
  else if (status != -1 && WIFSIGNALED(status)) r.code = 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  fs::remove(out);
  fs::remove(err);
  return r;
}

inline std::vector<fs::path> scenario_files() {
  std::vector<fs::path> v;
  for (const auto& e : fs::directory_iterator(kRoot + "/scenarios"))
    if (e.path().extension() == ".toml") v.push_back(e.path());
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace mfusim::testing
