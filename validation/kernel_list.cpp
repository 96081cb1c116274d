// validation_kernel_list MODEL SEQ MBS FLASH RECOMPUTE FUSED [--calibration FILE]
// The modelled kernels of one decoder layer (models::layer_kernels) of a validation row's
// scenario (validation/h200_compare.h), each with its GPU time from the cost model (launch
// overhead included) and its bytes / FLOPs: the model side of the kernel-by-kernel comparison
// with validation/kernel_trace.py (validation/README.md, run 8).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "hardware/cost_model.h"
#include "models/accounting.h"
#include "validation/h200_compare.h"

using namespace mfusim;

int main(int argc, char** argv) {
  if (argc < 7) {
    std::fprintf(stderr, "usage: %s MODEL SEQ MBS FLASH RECOMPUTE FUSED [--calibration FILE]\n", argv[0]);
    return 2;
  }
  const std::string src = MFUSIM_SOURCE_DIR;
  std::string cal_path = src + "/hardware/calibration/h200-fa2.toml";
  for (int i = 7; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--calibration") cal_path = argv[i + 1];
  validation::MeasuredRow r;
  r.model = argv[1];
  const struct { const char* n; int L; long h, f; int a, kv; long v; } shapes[] = {
      {"s0.5b", 16, 1536, 4096, 12, 4, 32000}, {"s1.3b", 24, 2048, 5632, 16, 8, 32000},
      {"s3b", 26, 3072, 8192, 24, 8, 32000}, {"s7b-8L", 8, 4096, 14336, 32, 8, 128256}};
  bool found = false;
  for (const auto& s : shapes)
    if (r.model == s.n) {
      r.layers = s.L; r.hidden = s.h; r.ffn = s.f; r.heads = s.a; r.kv_heads = s.kv; r.vocab = s.v;
      r.head_dim = s.h / s.a; found = true;
    }
  if (!found) { std::fprintf(stderr, "unknown model %s\n", argv[1]); return 2; }
  r.seq = std::atoi(argv[2]);
  r.mbs = std::atoi(argv[3]);
  r.flash = std::string(argv[4]) == "1";
  r.recompute = std::string(argv[5]) == "1";
  r.fused = std::string(argv[6]) == "1";
  const auto hw = config::load_hardware(src + "/hardware/h200.toml");
  const auto cal = hardware::read_calibration(cal_path);
  const config::Scenario s = validation::scenario_for(r, hw, cal, cal_path);
  const hardware::CostModel cm(s.hardware, s.training.precision, &cal, false);
  const auto ks = models::layer_kernels(s.model, 0, models::rank_shape(s));
  auto dump = [&](const char* pass, const std::vector<hardware::Kernel>& v) {
    double tot = 0;
    int n = 0;
    for (const auto& k : v) {
      const double t = cm.time(k);
      tot += t;
      n += k.count;
      std::printf("%s\t%s\t%d\t%d\t%.0f\t%.3g\t%.2f\t%d\n", pass, k.name, k.count, static_cast<int>(k.family), k.bytes,
                  k.flops, t * 1e6, k.compiled ? 1 : 0);
    }
    std::printf("%s\tTOTAL\t%d\t\t\t\t%.2f\n", pass, n, tot * 1e6);
  };
  std::printf("pass\tname\tcount\tfamily\tbytes\tflops\tus\tcompiled\n");
  dump("f", ks.f);
  dump("b", ks.b);
  dump("w", ks.w);
  return 0;
}
