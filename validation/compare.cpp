// validation_compare: measured (validation/results/h200_steps.csv) vs simulated
// step, forward and backward times on one H200; see validation/README.md.
// Usage: validation_compare [CSV] [--calibration FILE]   (paths relative to the repository root)
#include <cstdio>
#include <exception>
#include <string>

#include "validation/h200_compare.h"

int main(int argc, char** argv) {
  const std::string root = MFUSIM_SOURCE_DIR;
  std::string csv = root + "/validation/results/h200_steps_run4.csv";   // 3 interleaved passes (run 4)
  std::string cal = root + "/hardware/calibration/h200-fa2.toml";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--calibration" && i + 1 < argc) cal = argv[++i];
    else if (a == "-h" || a == "--help") {
      std::printf("usage: validation_compare [CSV] [--calibration FILE]\n");
      return 0;
    } else csv = a;
  }
  try {
    const auto s = mfusim::validation::compare(csv, cal, root);
    std::printf("measured: %s\ncalibration: %s\n", csv.c_str(), cal.c_str());
    std::printf("| model | seq | mbs | flash | rec | fused | step ms | pred | err | fwd ms | pred | err | bwd ms | pred | err | opt ms | pred |\n");
    std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (const auto& r : s.rows)
      std::printf("| %s | %d | %d | %d | %d | %d | %.1f | %.1f | %+.1f%% | %.1f | %.1f | %+.1f%% | %.1f | %.1f | %+.1f%% | %.1f | %.1f |\n",
                  r.m.model.c_str(), r.m.seq, r.m.mbs, int(r.m.flash), int(r.m.recompute), int(r.m.fused), r.m.step_ms,
                  r.pred_step_ms, r.err_step * 100, r.m.fwd_ms, r.pred_fwd_ms, r.err_fwd * 100, r.m.bwd_ms, r.pred_bwd_ms,
                  r.err_bwd * 100, r.m.opt_ms, r.pred_opt_ms);
    std::printf("\n%zu rows. step: median |err| %.1f%%, max %.1f%%; fwd: median %.1f%%, max %.1f%%; bwd: median %.1f%%, max %.1f%%\n",
                s.rows.size(), s.median_abs_step * 100, s.max_abs_step * 100, s.median_abs_fwd * 100, s.max_abs_fwd * 100,
                s.median_abs_bwd * 100, s.max_abs_bwd * 100);
    // Peak memory (not asserted: the simulator counts no allocator caching or workspace).
    std::printf("\npeak memory GiB, measured / simulated:");
    for (const auto& r : s.rows)
      std::printf(" %s-%d-%d-f%d-r%d %.1f/%.1f;", r.m.model.c_str(), r.m.seq, r.m.mbs, int(r.m.flash), int(r.m.recompute),
                  r.m.peak_mem_gib, r.pred_peak_gib);
    std::printf("\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  return 0;
}
