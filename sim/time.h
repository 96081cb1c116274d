#pragma once
// Checked time arithmetic. The engine keeps time as int64 nanoseconds
// (sim::Time); every duration computed in seconds (a double from the cost
// model) enters it through checked_ns, and every sum of times the engine forms
// through checked_add_ns, so a time can never wrap, turn negative or become
// NaN: a value out of range is an error naming the quantity.
//
// The limit: one duration, and the simulated step as a whole, at most
// kMaxStepSeconds (1e6 s, about 11.6 days; docs/scenario.md). A step that long
// is not a training step of any real run; int64 nanoseconds reach 9.2e9 s, so
// sums of two in-range times can never overflow.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace mfusim::sim {

constexpr double kMaxStepSeconds = 1e6;
constexpr std::int64_t kMaxStepNs = 1'000'000'000'000'000;   // kMaxStepSeconds in ns

// A time quantity out of range (not finite, negative, or beyond kMaxStepSeconds).
// Bad input, not an internal error: the inputs made the step absurdly long.
struct TimeLimitError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// "1e+06 s" style limit text for messages.
inline std::string time_limit_text() { return "1e6 s (about 11.6 days)"; }

// seconds -> int64 ns, rounded to the nearest ns; throws TimeLimitError naming
// `what` when seconds is NaN, infinite, negative or above kMaxStepSeconds.
inline std::int64_t checked_ns(double seconds, const char* what) {
  if (!(seconds >= 0) || !(seconds <= kMaxStepSeconds)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", seconds);
    throw TimeLimitError(std::string("error: ") + what + " is " + buf +
                         " s: a duration must be finite, >= 0 and at most " + time_limit_text() +
                         " (check the hardware, model and training inputs)");
  }
  return static_cast<std::int64_t>(std::llround(seconds * 1e9));
}

// a + b for times in ns (both >= 0); throws TimeLimitError naming `what` when
// the sum passes kMaxStepNs.
inline std::int64_t checked_add_ns(std::int64_t a, std::int64_t b, const char* what) {
  std::int64_t s = 0;
  if (__builtin_add_overflow(a, b, &s) || s > kMaxStepNs)
    throw TimeLimitError(std::string("error: ") + what + " passes " + time_limit_text() +
                         ": the simulated step is beyond the limit of the simulator (check the hardware, model and "
                         "training inputs)");
  return s;
}

}  // namespace mfusim::sim
