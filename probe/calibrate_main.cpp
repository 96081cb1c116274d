// Stand-alone `calibrate`: fits a probe output into a calibration file with
// hardware::fit_probe (the same code `mfusim calibrate` uses). Built by the
// top-level CMake as `mfusim_calibrate`; no CUDA needed. Like `mfusim calibrate`,
// it validates the probe and the fit, writes atomically and never over its input.
#include <cstdio>
#include <exception>
#include <string>

#include "hardware/calibration.h"
#include "io/output_file.h"

int main(int argc, char** argv) {
  // mfusim_calibrate PROBE.toml --out CAL.toml [--fused-attention flash|cudnn_fused]
  std::string in, out, fused;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--out" && i + 1 < argc) out = argv[++i];
    else if (a == "--fused-attention" && i + 1 < argc) fused = argv[++i];
    else if (in.empty() && a.rfind("--", 0) != 0) in = a;
    else { in.clear(); break; }
  }
  if (in.empty() || out.empty()) {
    std::fprintf(stderr, "usage: mfusim_calibrate PROBE_OUTPUT.toml --out CALIBRATION.toml [--fused-attention flash|cudnn_fused]\n");
    return 2;
  }
  if (out == in || mfusim::io::same_file(in, out)) {
    std::fprintf(stderr, "%s: error: --out names the probe file itself; write the calibration to another file\n",
                 out.c_str());
    return 2;
  }
  try {
    std::string report;
    auto cal = mfusim::hardware::fit_probe(in, &report, fused);
    mfusim::hardware::write_calibration(cal, out);
    std::printf("%swrote %s\n", report.c_str(), out.c_str());
    mfusim::io::flush_stdout();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  return 0;
}
