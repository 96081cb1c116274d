#pragma once
// Seconds (the cost model's unit) to the engine's integer nanoseconds. The one
// conversion every builder of tasks uses, so it can be checked in one place.
#include <cmath>
#include <cstdint>

namespace mfusim::sim {

inline std::int64_t to_ns(double seconds) { return static_cast<std::int64_t>(std::llround(seconds * 1e9)); }

}  // namespace mfusim::sim
