#pragma once
// Writing the output files of the CLI (--trace, --svg, --csv, calibrate --out)
// and standard output, so that a failure never destroys a file and never goes
// unnoticed:
//  - each file is written to a temporary file in its own directory, every
//    write checked (including the close), and renamed over the target only
//    when all the files of the command are complete: a failed write leaves
//    every old file as it was and no half-written one;
//  - a target that exists and is not a regular file (/dev/stdout, a FIFO) is
//    written in place, since renaming over it would replace it.
// Failures throw OutputError: "PATH: error: cannot write WHAT: REASON" (exit 2).
#include <stdexcept>
#include <string>
#include <vector>

namespace mfusim::io {

struct OutputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct OutputFile {
  std::string path;
  std::string text;
  std::string what = "the file";   // for messages: "the trace file"
};

// Writes every file, all or none (see above).
void write_files(const std::vector<OutputFile>& files);
inline void write_file(const std::string& path, const std::string& text, const std::string& what = "the file") {
  write_files({OutputFile{path, text, what}});
}

// True when both paths name the same existing file (same device and inode,
// so also through a link or another spelling of the path).
bool same_file(const std::string& a, const std::string& b);

// Flushes std::cout and stdout and checks that everything printed reached
// its destination (a full disk, a closed pipe); throws OutputError if not.
void flush_stdout();

}  // namespace mfusim::io
