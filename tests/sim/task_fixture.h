#pragma once
// A bare task for the engine tests: a stream, a duration, optional resources.
#include <cstdint>

#include "sim/engine.h"

namespace mfusim::sim::testing {

inline TaskSpec task(StreamId s, std::int64_t ns, ResourceList res = {}) {
  TaskSpec t;
  t.stream = s;
  t.duration_ns = ns;
  t.resources = res;
  return t;
}

}  // namespace mfusim::sim::testing
