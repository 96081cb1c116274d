// report/output_file: all-or-nothing output files and checked standard output.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "io/output_file.h"

namespace fs = std::filesystem;
using namespace mfusim;

namespace {

fs::path scratch() {
  static const fs::path d = [] {
    std::string t = (fs::temp_directory_path() / "mfusim-out-XXXXXX").string();
    REQUIRE(mkdtemp(t.data()) != nullptr);
    return fs::path(t);
  }();
  return d;
}
std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}
std::size_t entries(const fs::path& d) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(d)) ++n;
  return n;
}

}  // namespace

TEST_CASE("write_files replaces the targets with the new text and leaves no temporary file") {
  const fs::path d = scratch() / "ok";
  fs::create_directories(d);
  std::ofstream(d / "a.json") << "old a";
  io::write_files({{(d / "a.json").string(), "new a", "the trace file"}, {(d / "b.svg").string(), "new b", "the SVG file"}});
  CHECK(slurp(d / "a.json") == "new a");
  CHECK(slurp(d / "b.svg") == "new b");
  CHECK(entries(d) == 2);
  // A new file gets the usual permissions (0666 less the umask), not mkstemp's 0600.
  struct stat st {};
  REQUIRE(::stat((d / "b.svg").c_str(), &st) == 0);
  const mode_t mask = ::umask(0);
  ::umask(mask);
  CHECK((st.st_mode & 0777) == (0666 & ~mask));
}

TEST_CASE("a failed write leaves every old file as it was: all or nothing") {
  const fs::path d = scratch() / "fail";
  fs::create_directories(d);
  std::ofstream(d / "trace.json") << "old trace";
  // The second target's directory does not exist: the first must not be replaced either.
  try {
    io::write_files({{(d / "trace.json").string(), "new trace", "the trace file"},
                         {(d / "missing" / "x.svg").string(), "svg", "the SVG file"}});
    FAIL("expected an OutputError");
  } catch (const io::OutputError& e) {
    CHECK(std::string(e.what()) ==
          (d / "missing" / "x.svg").string() + ": error: cannot write the SVG file: No such file or directory");
  }
  CHECK(slurp(d / "trace.json") == "old trace");
  CHECK(entries(d) == 1);   // no temporary file left behind
  // A directory as the target.
  CHECK_THROWS_AS(io::write_file(d.string(), "x", "the CSV file"), io::OutputError);
  CHECK(fs::is_directory(d));
}

TEST_CASE("a device is written in place, not renamed over") {
  if (!fs::exists("/dev/null")) return;
  io::write_file("/dev/null", "discarded");
  CHECK(fs::is_character_file("/dev/null"));
  if (fs::exists("/dev/full")) {
    // ENOSPC on every write: the error names the file and the reason.
    CHECK_THROWS_WITH_AS(io::write_file("/dev/full", std::string(1 << 16, 'x'), "the trace file"),
                         "/dev/full: error: cannot write the trace file: No space left on device", io::OutputError);
  }
}

TEST_CASE("same_file sees one file through two spellings and a link") {
  const fs::path d = scratch() / "same";
  fs::create_directories(d / "sub");
  std::ofstream(d / "p.toml") << "x";
  fs::create_symlink(d / "p.toml", d / "link.toml");
  CHECK(io::same_file((d / "p.toml").string(), (d / "sub" / ".." / "p.toml").string()));
  CHECK(io::same_file((d / "p.toml").string(), (d / "link.toml").string()));
  std::ofstream(d / "q.toml") << "x";
  CHECK_FALSE(io::same_file((d / "p.toml").string(), (d / "q.toml").string()));
  CHECK_FALSE(io::same_file((d / "p.toml").string(), (d / "none.toml").string()));
}
