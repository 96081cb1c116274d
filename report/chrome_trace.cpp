#include "report/chrome_trace.h"

#include <algorithm>

#include <cstdio>
#include <sstream>

namespace mfusim::report {
namespace {

void json_string(std::ostream& out, const std::string& s) {
  out << '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out << "\\\""; break;
      case '\\': out << "\\\\"; break;
      case '\n': out << "\\n"; break;
      case '\t': out << "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out << buf;
        } else {
          out << c;
        }
    }
  }
  out << '"';
}

// Microseconds with ns precision, no locale or float formatting involved.
void micros(std::ostream& out, std::int64_t ns) {
  if (ns < 0) { out << '-'; ns = -ns; }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld.%03lld", static_cast<long long>(ns / 1000), static_cast<long long>(ns % 1000));
  out << buf;
}

}  // namespace

void write_chrome_trace(std::ostream& out, const sim::TaskGraph& g, const sim::Timeline& tl) {
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[";
  bool first = true;
  auto sep = [&] { out << (first ? "\n" : ",\n"); first = false; };
  for (int r = 0; r < g.ranks(); ++r) {
    sep();
    out << "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" << r << ",\"tid\":0,\"args\":{\"name\":\"rank " << r << "\"}}";
    sep();
    out << "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" << r << ",\"tid\":0,\"args\":{\"sort_index\":" << r << "}}";
  }
  const auto& streams = g.streams();
  for (std::size_t s = 0; s < streams.size(); ++s) {
    sep();
    out << "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << streams[s].rank << ",\"tid\":" << s << ",\"args\":{\"name\":";
    json_string(out, streams[s].name);
    out << "}}";
    sep();
    out << "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":" << streams[s].rank << ",\"tid\":" << s
        << ",\"args\":{\"sort_index\":" << (streams[s].compute ? 0 : 1 + static_cast<int>(s)) << "}}";
  }
  for (const auto& iv : tl.intervals) {
    const sim::TaskSpec& t = g.task(iv.task);
    sep();
    out << "{\"ph\":\"X\",\"name\":";
    // Per-layer pieces of an op carry no name of their own: label them by their op.
    std::string name = g.name(iv.task);
    if (name.empty() && t.kind != 0 && t.microbatch >= 0)
      name = std::string(1, t.kind) + " mb" + std::to_string(t.microbatch) + " chunk" + std::to_string(std::max(0, t.chunk));
    if (name.empty()) name = "task " + std::to_string(iv.task);
    json_string(out, name);
    out << ",\"cat\":\"" << sim::to_string(t.category) << "\",\"pid\":"
        << streams[static_cast<std::size_t>(t.stream)].rank << ",\"tid\":" << t.stream << ",\"ts\":";
    micros(out, iv.start.ns);
    out << ",\"dur\":";
    micros(out, iv.end.ns - iv.start.ns);
    out << ",\"args\":{\"task\":" << iv.task;
    if (t.microbatch >= 0) out << ",\"microbatch\":" << t.microbatch;
    if (t.chunk >= 0) out << ",\"chunk\":" << t.chunk;
    out << "}}";
  }
  out << "\n]}\n";
}

std::string chrome_trace(const sim::TaskGraph& g, const sim::Timeline& tl) {
  std::ostringstream out;
  write_chrome_trace(out, g, tl);
  return out.str();
}

}  // namespace mfusim::report
