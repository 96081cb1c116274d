#include <string>

#include "schedules/schedule.h"

namespace mfusim::schedules {

namespace {
const char* kind_letter(OpKind k) {
  switch (k) {
    case OpKind::F: return "F";
    case OpKind::B: return "B";
    case OpKind::W: return "W";
    case OpKind::FB: return "FB";
  }
  return "?";
}
std::string part(const char* kind, int microbatch, int chunk) {
  return std::string(kind) + " mb" + std::to_string(microbatch) + " chunk" + std::to_string(chunk);
}
}  // namespace

std::string label(const Op& op) {
  if (op.kind == OpKind::FB) return part("F", op.microbatch, op.chunk) + " + " + part("B", op.microbatch_b, op.chunk_b);
  return part(kind_letter(op.kind), op.microbatch, op.chunk);
}

}  // namespace mfusim::schedules
