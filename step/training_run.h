#pragma once
// The whole training run around the simulated step: the wall-clock time to train a token budget
// when the job stops at random interruptions (a failed GPU, host, link or a software fault),
// restarts, and resumes from its last checkpoint (docs/training-run.md).
//
// A discrete-event simulation of the run, repeated over independent draws: the job trains in
// segments of `checkpoint_interval_s` of steps, each followed by a checkpoint save that blocks
// training for `checkpoint_save_s`; interruptions arrive as a Poisson process over the wall clock
// at `interruption_rate` (per second, for the whole job); an interruption loses the segment in
// progress (the work since the last completed save) and costs `restart_s` (detection, rescheduling,
// initialisation, loading the checkpoint), during which a further interruption starts the restart
// over. The closed form of the expected time (per segment of length L: (e^{lambda L} - 1) e^{lambda R} /
// lambda) is the tests' oracle, not the implementation: the simulation also gives the spread over runs.
#include <cstdint>

namespace mfusim::step {

struct TrainingRunInput {
  double work_s = 0;                 // the run's steps back to back (a whole number of steps)
  double step_s = 0;                 // one step (checkpoints are saved at step boundaries)
  double interruption_rate = 0;      // job interruptions per second of wall clock (all GPUs together)
  double restart_s = 0;              // from an interruption to training again
  double checkpoint_save_s = 0;      // training time blocked by one save (0: not priced)
  double checkpoint_interval_s = 0;  // steps between saves, in seconds; 0: Young's optimum sqrt(2 C / lambda)
  std::uint64_t seed = 1;
  int runs = 200;                    // independent draws of the run
};

struct TrainingRunResult {
  // false: a segment and a restart are so long against the interruptions that a segment would need more
  // than a million attempts on average (lambda (L + R) > ln 1e6): the run does not finish in any useful sense.
  bool finishes = true;
  // false: the runs would draw more interruptions than the simulation takes on (kMaxInterruptions per run);
  // the mean is then the model's exact expectation and the spread, of relative size under 1 / sqrt of
  // that count, is not drawn (p5 = p95 = the mean).
  bool drawn = true;
  double interval_s = 0;            // the checkpoint interval used (a whole number of steps)
  double wall_mean_s = 0;           // mean over the runs
  double wall_sd_s = 0;             // their sample standard deviation
  double wall_p5_s = 0, wall_p95_s = 0;   // 9 runs in 10 lie between them
  double interruptions_mean = 0;    // interruptions per run (those during restarts included)
  double checkpoints = 0;           // saves per run
  // Where the time beyond work_s goes, mean over the runs (sums to wall_mean_s - work_s):
  double rework_s = 0;              // segments lost to interruptions (work since the last save)
  double restart_total_s = 0;       // restarts (and restarts interrupted)
  double checkpoint_total_s = 0;    // blocking saves
  double work_s = 0;                // the input's work, for goodput()
  // The share of the wall clock spent on steps that count (Kokolis et al.'s effective training time ratio).
  double goodput() const { return wall_mean_s > 0 ? work_s / wall_mean_s : 1.0; }
};

// The interval Young's rule gives for these inputs, rounded to whole steps (at least one step);
// the input's own interval when it gives one.
double checkpoint_interval(const TrainingRunInput&);

TrainingRunResult simulate_training_run(const TrainingRunInput&);

// The exact expectation of the simulated model (the tests' oracle).
double expected_wall_s(const TrainingRunInput&);

}  // namespace mfusim::step
