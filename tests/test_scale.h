#pragma once
// MFUSIM_TEST_SCALE (a number in (0, 1], default 1): the share of the heavy tests'
// repetitions to run. .ci/run sets it for the AddressSanitizer step, where every
// simulation is ~10-30x slower; the tests keep every assertion, on fewer cases.
// An unset, unparsable or out-of-range value means 1 (the full test).
#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace mfusim::testing {

inline double test_scale() {
  const char* v = std::getenv("MFUSIM_TEST_SCALE");
  if (!v || !*v) return 1.0;
  char* end = nullptr;
  const double x = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(x > 0) || !(x <= 1)) return 1.0;
  return x;
}

// n repetitions scaled, at least `floor_n` (and never more than n).
inline int scaled_count(int n, int floor_n = 1) {
  return std::min(n, std::max(floor_n, static_cast<int>(std::lround(n * test_scale()))));
}

}  // namespace mfusim::testing
