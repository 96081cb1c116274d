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

// Microseconds with ns precision and no trailing zeros (1.5, 354.224, 12),
// no locale or float formatting involved.
void micros(std::ostream& out, std::int64_t ns) {
  if (ns < 0) { out << '-'; ns = -ns; }
  char buf[32];
  int n = std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(ns / 1000));
  if (const auto frac = ns % 1000; frac != 0) {
    n += std::snprintf(buf + n, sizeof buf - static_cast<std::size_t>(n), ".%03lld", static_cast<long long>(frac));
    while (buf[n - 1] == '0') buf[--n] = 0;
  }
  out << buf;
}

// Four significant digits (FLOP counts are model estimates, not exact), the
// exponent without '+' or leading zeros: 2.242e11, 0.5, 1.5e-05 -> 1.5e-5.
void sig4(std::ostream& out, double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", x);
  std::string s = buf;
  if (const auto e = s.find('e'); e != std::string::npos) {
    std::size_t i = e + 1;
    if (s[i] == '+') s.erase(i, 1);
    else if (s[i] == '-') ++i;
    while (i + 1 < s.size() && s[i] == '0') s.erase(i, 1);
  }
  out << s;
}

}  // namespace

void write_chrome_trace(std::ostream& out, const sim::TaskGraph& g, const sim::Timeline& tl,
                        const std::vector<step::TaskInfo>* info) {
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
  // The chunk is worth an argument only where some op runs on a second chunk.
  bool chunks = false;
  for (const auto& iv : tl.intervals) chunks = chunks || g.task(iv.task).chunk > 0;
  for (const auto& iv : tl.intervals) {
    if (iv.end.ns <= iv.start.ns) continue;   // nothing to see: joins and empty pieces
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
    char open = '{';
    auto arg = [&](const char* key) { out << (open == '{' ? ",\"args\":{" : ",") << '"' << key << "\":"; open = ','; };
    if (t.microbatch >= 0) { arg("mb"); out << t.microbatch; }
    if (chunks && t.chunk >= 0) { arg("chunk"); out << t.chunk; }
    if (info && static_cast<std::size_t>(iv.task) < info->size()) {
      const auto& ti = (*info)[static_cast<std::size_t>(iv.task)];
      if (ti.layer >= 0) { arg("layer"); out << ti.layer; }
      if (ti.kernel) { arg("kernel"); json_string(out, ti.kernel); }
      if (ti.flops > 0) { arg("flops"); sig4(out, ti.flops); }
      if (ti.bytes > 0) { arg("bytes"); sig4(out, ti.bytes); }
      if (ti.launch_ns > 0) { arg("launch_us"); micros(out, ti.launch_ns); }
    }
    if (open == ',') out << '}';
    out << '}';
  }
  out << "\n]}\n";
}

std::string chrome_trace(const sim::TaskGraph& g, const sim::Timeline& tl, const std::vector<step::TaskInfo>* info) {
  std::ostringstream out;
  write_chrome_trace(out, g, tl, info);
  return out.str();
}

}  // namespace mfusim::report
