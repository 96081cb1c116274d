// The training run around the step: interruptions, restarts and checkpoints (training_run.h).
#include "step/training_run.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace mfusim::step {

namespace {

// Uniform in (0, 1] from the 64-bit Mersenne Twister, whose output sequence the standard fixes
// (std::uniform_real_distribution's algorithm is the library's own): the same runs on every platform.
double uniform(std::mt19937_64& rng) {
  return (static_cast<double>(rng() >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

double exponential(std::mt19937_64& rng, double rate) {
  if (!(rate > 0)) return std::numeric_limits<double>::infinity();
  return -std::log(uniform(rng)) / rate;
}

// A run's segments: `full` of `interval` steps' work and one of `rest` (0: none), each followed by a save.
struct Segments {
  double interval = 0, rest = 0;
  double full = 0;
};

Segments segments(const TrainingRunInput& in, double interval) {
  Segments s;
  s.interval = interval;
  s.full = std::floor(in.work_s / interval);
  s.rest = in.work_s - s.full * interval;
  if (s.rest < 1e-9 * interval) s.rest = 0;   // rounding of a whole number of segments
  return s;
}

// The expected time to complete a stretch of length L from its start, interruptions restarting it
// after a restart of R that interruptions restart too: (e^{lam L} - 1) e^{lam R} / lam.
double expected_stretch(double lam, double L, double R) {
  if (!(lam > 0)) return L;
  return std::expm1(lam * L) * std::exp(lam * R) / lam;
}

// Interruptions per run the simulation draws at most (each a handful of operations); beyond it the mean
// is the exact expectation and the spread, about 1 / sqrt(1e4) = 1% of the lost time or less, is not drawn
// (the cap keeps the 200 runs under about 2e6 draws: tens of milliseconds, also under the fuzzers).
constexpr double kMaxInterruptions = 1e4;
// A segment that needs more than a million attempts on average: the run does not finish.
const double kMaxExponent = std::log(1e6);

}  // namespace

double checkpoint_interval(const TrainingRunInput& in) {
  double tau = in.checkpoint_interval_s;
  if (!(tau > 0)) {
    if (!(in.interruption_rate > 0)) return in.work_s;   // nothing to recover from: one save at the end
    tau = std::sqrt(2.0 * in.checkpoint_save_s / in.interruption_rate);   // Young (1974)
  }
  if (in.step_s > 0) tau = std::max(1.0, std::round(tau / in.step_s)) * in.step_s;   // saves at step boundaries
  return std::min(tau, in.work_s);
}

double expected_wall_s(const TrainingRunInput& in) {
  if (!(in.work_s > 0)) return 0;
  const Segments s = segments(in, checkpoint_interval(in));
  const double lam = in.interruption_rate, C = in.checkpoint_save_s, R = in.restart_s;
  double t = s.full * expected_stretch(lam, s.interval + C, R);
  if (s.rest > 0) t += expected_stretch(lam, s.rest + C, R);
  return t;
}

TrainingRunResult simulate_training_run(const TrainingRunInput& in) {
  TrainingRunResult r;
  r.work_s = in.work_s;
  if (!(in.work_s > 0)) return r;
  r.interval_s = checkpoint_interval(in);
  const Segments sg = segments(in, r.interval_s);
  r.checkpoints = sg.full + (sg.rest > 0 ? 1 : 0);
  const double lam = in.interruption_rate, C = in.checkpoint_save_s, R = in.restart_s;
  r.checkpoint_total_s = r.checkpoints * C;
  if (lam * (std::max(sg.interval, sg.rest) + C + R) > kMaxExponent) {
    r.finishes = false;
    return r;
  }
  const double expected = expected_wall_s(in);
  if (lam * expected > kMaxInterruptions) {
    // Too many interruptions to draw: the model's expectation, split as it splits (per failed attempt of
    // a stretch L: the lost part (e^{lam L} - 1) / lam - L over all attempts, the restarts the rest).
    r.drawn = false;
    r.wall_mean_s = r.wall_p5_s = r.wall_p95_s = expected;
    double rework = 0;
    auto add = [&](double L, double count) { rework += count * (std::expm1(lam * L) / lam - L); };
    add(sg.interval + C, sg.full);
    if (sg.rest > 0) add(sg.rest + C, 1);
    r.rework_s = rework;
    r.restart_total_s = expected - in.work_s - r.checkpoint_total_s - rework;
    r.interruptions_mean = lam * expected;
    return r;
  }

  const int runs = std::max(1, in.runs);
  std::vector<double> walls;
  walls.reserve(static_cast<std::size_t>(runs));
  std::mt19937_64 rng(in.seed);
  double rework = 0, restart = 0, interruptions = 0;
  for (int run = 0; run < runs; ++run) {
    double t = 0;
    double f = exponential(rng, lam);   // wall time to the next interruption
    auto play = [&](double work, double count) {
      const double L = work + C;
      double left = count;
      while (left > 0) {
        // Segments completed before the interruption (the process is memoryless: one draw serves many).
        const double k = f >= L * left ? left : std::floor(f / L);
        t += k * L;
        f = std::max(0.0, f - k * L);
        left -= k;
        if (left <= 0) break;
        // Interrupted inside the next segment, f into it: that work is lost; then the restart.
        t += f;
        rework += f;
        interruptions += 1;
        for (;;) {
          const double g = exponential(rng, lam);
          if (g < R) {   // interrupted during the restart: it starts over
            t += g;
            restart += g;
            interruptions += 1;
            continue;
          }
          t += R;
          restart += R;
          f = g - R;
          break;
        }
      }
    };
    play(sg.interval, sg.full);
    if (sg.rest > 0) play(sg.rest, 1);
    walls.push_back(t);
  }
  double sum = 0;
  for (double w : walls) sum += w;
  r.wall_mean_s = sum / runs;
  double ss = 0;
  for (double w : walls) ss += (w - r.wall_mean_s) * (w - r.wall_mean_s);
  r.wall_sd_s = runs > 1 ? std::sqrt(ss / (runs - 1)) : 0.0;
  std::sort(walls.begin(), walls.end());
  // Nearest rank, symmetric: the 5th and 95th percentiles.
  auto at = [&](double q) { return walls[static_cast<std::size_t>(std::lround(q * (runs - 1)))]; };
  r.wall_p5_s = at(0.05);
  r.wall_p95_s = at(0.95);
  r.interruptions_mean = interruptions / runs;
  r.rework_s = rework / runs;
  r.restart_total_s = restart / runs;
  return r;
}

}  // namespace mfusim::step
