// Modelled kernels of one Llama-3-8B block (h200 + the shipped calibration, seq 8192), per kernel
// and per pass: block_sim MBS none|op|full [tt] [compile]. Build against libmfusim_core:
//   g++ -std=c++20 -O1 -DWITH_TT -I. -DMFUSIM_SOURCE_DIR=\"$PWD\" validation/runs/run23-eager-trace/block_sim.cpp \
//       build/libmfusim_core.a -ltomlplusplus -lpthread -o /tmp/block_sim
#include <cstdio>
#include <cstring>
#include "config/loader.h"
#include "models/layer_kernels.h"
#include "models/rank_shape.h"
#include "hardware/cost_model.h"
#include "hardware/calibration.h"
#include "validation/published/published.h"
using namespace mfusim;
int main(int argc, char** argv) {
  int mbs = argc > 1 ? atoi(argv[1]) : 1;
  const char* rcs = argc > 2 ? argv[2] : "none";
  bool tt = argc > 3 && !strcmp(argv[3], "tt");
  bool fused = argc > 4 && !strcmp(argv[4], "compile");
  config::Scenario s;
  s.hardware = config::load_hardware(validation::source_path("hardware/h200.toml"));
  auto cal = hardware::read_calibration(validation::source_path("hardware/calibration/h200.toml"));
  s.model = config::load_model(validation::source_path("models/llama3-8b.toml"));
  s.training.seq_len = 8192; s.training.micro_batch = mbs; s.gpus = 1;
  s.features.fused_kernels = fused; s.features.flash_attention = true;
  s.features.recompute = !strcmp(rcs, "op") ? config::Recompute::selective_op : !strcmp(rcs, "full") ? config::Recompute::full : config::Recompute::none;
#ifdef WITH_TT  // built with -DWITH_TT after the torchtitan block exists; without it: the list before
  if (tt) s.features.model_code = config::ModelCode::torchtitan;
#endif
  hardware::CostModel cm(s.hardware, hardware::Precision::bf16, &cal, false);
  auto sh = models::rank_shape(s);
  auto lk = models::layer_kernels(s.model, 0, sh);
  for (auto [nm, v] : {std::pair{"F", &lk.f}, {"B", &lk.b}, {"W", &lk.w}, {"R", &lk.r}}) {
    double t = 0;
    for (auto& k : *v) {
      std::printf("%s %-24s %8.1f us  %8.1f MB %10.3f GF x%d\n", nm, k.name, 1e6 * cm.time(k), k.bytes / 1e6, k.flops / 1e9, k.count);
      t += cm.time(k);
    }
    std::printf("%s total %.3f ms (%zu kernels)\n", nm, 1e3 * t, v->size());
  }
}
