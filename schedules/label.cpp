#include <charconv>
#include <string>

#include "schedules/schedule.h"

namespace mfusim::schedules {

namespace {
void number(std::string& out, int x) {
  char buf[16];
  out.append(buf, std::to_chars(buf, buf + sizeof buf, x).ptr);
}
void part(std::string& out, char kind, int microbatch, int chunk) {
  out += kind;
  out += " mb";
  number(out, microbatch);
  out += " chunk";
  number(out, chunk);
}
}  // namespace

std::string label(const Op& op) {
  std::string out;
  out.reserve(15);
  switch (op.kind) {
    case OpKind::F: part(out, 'F', op.microbatch, op.chunk); break;
    case OpKind::B: part(out, 'B', op.microbatch, op.chunk); break;
    case OpKind::W: part(out, 'W', op.microbatch, op.chunk); break;
    case OpKind::FB:
      part(out, 'F', op.microbatch, op.chunk);
      out += " + ";
      part(out, 'B', op.microbatch_b, op.chunk_b);
      break;
  }
  return out;
}

}  // namespace mfusim::schedules
