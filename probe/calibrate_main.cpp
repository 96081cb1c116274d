// Stand-alone `calibrate`: fits a probe output into a calibration file with
// hardware::fit_probe (the same code `mfusim calibrate` uses). Built by the
// top-level CMake as `mfusim_calibrate`; no CUDA needed.
#include <cstdio>
#include <exception>
#include <string>

#include "hardware/calibration.h"

int main(int argc, char** argv) {
  if (argc != 4 || std::string(argv[2]) != "--out") {
    std::fprintf(stderr, "usage: mfusim_calibrate PROBE_OUTPUT.toml --out CALIBRATION.toml\n");
    return 2;
  }
  try {
    std::string report;
    auto cal = mfusim::hardware::fit_probe(argv[1], &report);
    mfusim::hardware::write_calibration(cal, argv[3]);
    std::printf("%swrote %s\n", report.c_str(), argv[3]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  return 0;
}
