// Published Megatron-LM runs against the simulator: every NAR21-* and KOR22-*
// row of validation/published/published.csv, predicted vs published in the
// row's own metric, with the error per row and the median |error|.
//   build/validation/published/validate_published [published.csv] [--markdown]
// Configuration and assumptions: validation/published/published.h; results:
// docs/validation.md.
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "config/loader.h"
#include "validation/published/published.h"

using namespace mfusim;

namespace {
const char* unit(validation::Metric m) {
  switch (m) {
    case validation::Metric::tflops_eq3: return "TFLOP/s/GPU (eq.3)";
    case validation::Metric::iteration_s: return "iteration s";
    case validation::Metric::mfu_pct: return "MFU % (eq.7)";
    case validation::Metric::layer_ms: return "layer F+B ms";
  }
  return "?";
}
}  // namespace

int main(int argc, char** argv) {
  std::string csv = validation::source_path("validation/published/published.csv");
  bool markdown = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--markdown") markdown = true;
    else csv = a;
  }
  try {
    const auto a100 = config::load_hardware(validation::source_path("hardware/a100-sxm-80gb.toml"));
    const auto rows = validation::read_published(csv);
    std::vector<double> errors, nar21, kor22;
    if (markdown) {
      std::printf("| row | metric | published | predicted | error | configuration simulated |\n");
      std::printf("|---|---|---:|---:|---:|---|\n");
    } else {
      std::printf("%-14s %-20s %10s %10s %8s  %s\n", "row", "metric", "published", "predicted", "error", "configuration");
    }
    for (const auto& r : rows) {
      const auto c = validation::compare(r, a100);
      if (!c.in_scope) {
        if (markdown) std::printf("| %s | %s | %g | out of scope | | %s |\n", r.id.c_str(), unit(c.metric), r.value, c.reason.c_str());
        else std::printf("%-14s %-20s %10g %10s %8s  %s\n", r.id.c_str(), unit(c.metric), r.value, "-", "-", c.reason.c_str());
        continue;
      }
      errors.push_back(std::fabs(c.error));
      (r.id.rfind("NAR21", 0) == 0 ? nar21 : kor22).push_back(std::fabs(c.error));
      if (markdown)
        std::printf("| %s | %s | %g | %.3g | %+.1f%% | %s |\n", r.id.c_str(), unit(c.metric), r.value, c.predicted,
                    100 * c.error, c.reason.c_str());
      else
        std::printf("%-14s %-20s %10g %10.4g %+7.1f%%  %s\n", r.id.c_str(), unit(c.metric), r.value, c.predicted,
                    100 * c.error, c.reason.c_str());
      std::fflush(stdout);
    }
    std::printf("\n%s%zu rows simulated: median |error| %.1f%% (NAR21 %.1f%% over %zu, KOR22 %.1f%% over %zu)\n",
                markdown ? "" : "", errors.size(), 100 * validation::median(errors), 100 * validation::median(nar21),
                nar21.size(), 100 * validation::median(kor22), kor22.size());
  } catch (const config::ConfigError& e) {
    for (const auto& d : e.diagnostics()) std::fprintf(stderr, "%s\n", d.str().c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "validate_published: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
