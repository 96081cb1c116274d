#include "io/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

namespace mfusim::io {
namespace {

[[noreturn]] void fail(const OutputFile& f, int err) {
  throw OutputError(f.path + ": error: cannot write " + f.what + ": " + std::strerror(err));
}

// Writes all of `text` to fd; returns 0 or the errno of the failure.
int write_all(int fd, const std::string& text) {
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return 0;
}

std::string dir_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}
std::string base_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

struct Pending {
  const OutputFile* file;
  std::string temp;   // empty once renamed
};

}  // namespace

void write_files(const std::vector<OutputFile>& files) {
  std::vector<Pending> done;
  auto discard = [&] {
    for (const auto& p : done)
      if (!p.temp.empty()) ::unlink(p.temp.c_str());
  };
  try {
    for (const OutputFile& f : files) {
      const std::string& path = f.path;
      const std::string& text = f.text;
      if (path.empty() || path.back() == '/') fail(f, path.empty() ? ENOENT : EISDIR);
      struct stat st {};
      const bool exists = ::stat(path.c_str(), &st) == 0;
      if (exists && S_ISDIR(st.st_mode)) fail(f, EISDIR);
      if (exists && !S_ISREG(st.st_mode)) {
        // A device or FIFO: written in place, now (nothing to rename).
        const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
        if (fd < 0) fail(f, errno);
        const int err = write_all(fd, text);
        const int cerr = ::close(fd) != 0 ? errno : 0;
        if (err || cerr) fail(f, err ? err : cerr);
        continue;
      }
      std::string temp = dir_of(path) + "/." + base_of(path) + ".tmp-XXXXXX";
      const int fd = ::mkstemp(temp.data());
      if (fd < 0) fail(f, errno);
      done.push_back({&f, temp});
      // The permissions the file would have had: the old file's, or 0666 less the umask.
      mode_t mode = exists ? (st.st_mode & 07777) : 0;
      if (!exists) {
        const mode_t mask = ::umask(0);
        ::umask(mask);
        mode = 0666 & ~mask;
      }
      int err = ::fchmod(fd, mode) != 0 ? errno : 0;
      if (!err) err = write_all(fd, text);
      if (!err && ::fsync(fd) != 0 && errno != EINVAL && errno != EROFS) err = errno;
      if (::close(fd) != 0 && !err) err = errno;
      if (err) fail(f, err);
    }
    for (auto& p : done) {
      if (p.temp.empty()) continue;
      if (::rename(p.temp.c_str(), p.file->path.c_str()) != 0) fail(*p.file, errno);
      p.temp.clear();
    }
  } catch (...) {
    discard();
    throw;
  }
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

void flush_stdout() {
  // A write that failed before this call (an output longer than the stream's buffer fails while it is
  // written) left its errno behind, and the stream keeps no code of its own: take it before anything else
  // (best effort: a system call between that write and this one may have set errno since).
  const bool failed_before = !std::cout.good() || std::ferror(stdout);
  int err = failed_before ? errno : 0;
  errno = 0;
  std::cout.flush();
  if (err == 0) err = errno;
  bool ok = !failed_before && std::cout.good();
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    ok = false;
    if (err == 0) err = errno;
  }
  if (!ok) {
    if (err == 0) err = EIO;
    std::clearerr(stdout);
    std::cout.clear();
    throw OutputError(std::string("mfusim: error: cannot write standard output: ") + std::strerror(err));
  }
}

}  // namespace mfusim::io
