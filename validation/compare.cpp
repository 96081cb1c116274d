// validation_compare: measured (validation/runs/run01-full/h200_steps.csv) vs simulated
// step, forward and backward times on one H200; see validation/README.md.
// Usage: validation_compare [CSV] [--calibration FILE] [--hardware NAME]   (paths relative to the repository root)
//        validation_compare --predict "MODEL:SEQ:MBS:FLASH:RECOMPUTE:FUSED;..." [--calibration FILE] [--hardware NAME]
//        --hardware: the profile hardware/NAME.toml the steps ran on (default h200; h100-sxm for run 54)
//          predictions only, for configurations not measured yet (train_step.py MODELS shapes)
#include <cstdio>
#include <exception>
#include <sstream>
#include <string>

#include "validation/h200_compare.h"

int main(int argc, char** argv) {
  const std::string root = MFUSIM_SOURCE_DIR;
  std::string csv = root + "/validation/runs/run04-fidelity/h200_steps_run4.csv";   // 3 interleaved passes (run 4)
  std::string cal = root + "/hardware/calibration/h200-fa2.toml";
  std::string predict, hardware = "h200";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--calibration" && i + 1 < argc) cal = argv[++i];
    else if (a == "--predict" && i + 1 < argc) predict = argv[++i];
    else if (a == "--hardware" && i + 1 < argc) hardware = argv[++i];
    else if (a == "-h" || a == "--help") {
      std::printf("usage: validation_compare [CSV] [--calibration FILE] [--hardware NAME]\n"
                  "       validation_compare --predict \"MODEL:SEQ:MBS:FLASH:RECOMPUTE:FUSED;...\" [--calibration FILE] [--hardware NAME]\n");
      return 0;
    } else csv = a;
  }
  try {
    if (!predict.empty()) {
      const auto hw = mfusim::validation::hardware_profile(root, hardware);
      const auto calib = mfusim::hardware::read_calibration(cal);
      std::printf("hardware: %s\ncalibration: %s\n| model | seq | mbs | flash | rec | fused | step ms | fwd ms | bwd ms | opt ms |\n"
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n", hardware.c_str(), cal.c_str());
      std::stringstream list(predict);
      std::string item;
      while (std::getline(list, item, ';')) {
        if (item.empty()) continue;
        std::stringstream f(item);
        std::string name, v[5];
        std::getline(f, name, ':');
        for (auto& x : v)
          if (!std::getline(f, x, ':') || x.empty())
            throw std::runtime_error("error: --predict item '" + item + "': want MODEL:SEQ:MBS:FLASH:RECOMPUTE:FUSED");
        mfusim::validation::MeasuredRow m = mfusim::validation::model_row(name);
        m.seq = std::stoi(v[0]);
        m.mbs = std::stoi(v[1]);
        m.flash = v[2] == "1";
        m.recompute = v[3] == "1";
        m.fused = v[4] == "1";
        const auto p = mfusim::validation::predict(m, hw, calib, cal);
        std::printf("| %s | %d | %d | %d | %d | %d | %.1f | %.1f | %.1f | %.1f |\n", m.model.c_str(), m.seq, m.mbs,
                    int(m.flash), int(m.recompute), int(m.fused), p.step_ms, p.fwd_ms, p.bwd_ms, p.opt_ms);
      }
      return 0;
    }
    const auto s = mfusim::validation::compare(csv, cal, root, hardware);
    std::printf("measured: %s\nhardware: %s\ncalibration: %s\n", csv.c_str(), hardware.c_str(), cal.c_str());
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
