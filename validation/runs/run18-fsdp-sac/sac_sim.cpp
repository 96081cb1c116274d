#include <cstdio>
#include "config/loader.h"
#include "models/layer_kernels.h"
#include "models/memory.h"
#include "models/rank_shape.h"
#include "hardware/cost_model.h"
#include "hardware/calibration.h"
#include "validation/published/published.h"
using namespace mfusim;
int main() {
  for (int mbs : {1, 2}) {
    config::Scenario s;
    s.hardware = config::load_hardware(validation::source_path("hardware/h200.toml"));
    auto cal = hardware::read_calibration(validation::source_path("hardware/calibration/h200.toml"));
    s.model = config::load_model(validation::source_path("models/llama3-8b.toml"));
    s.training.seq_len = 8192; s.training.micro_batch = mbs; s.gpus = 1;
    s.features.fused_kernels = false; s.features.flash_attention = true;
    hardware::CostModel cm(s.hardware, hardware::Precision::bf16, &cal, false);
    auto sum = [&](const std::vector<hardware::Kernel>& ks){ double t=0; for (auto& k: ks) t += cm.time(k); return t; };
    double base = 0;
    for (auto rc : {config::Recompute::none, config::Recompute::full, config::Recompute::selective_op}) {
      s.features.recompute = rc;
      auto sh = models::rank_shape(s);
      auto lk = models::layer_kernels(s.model, 0, sh);
      double t = sum(lk.f) + sum(lk.b) + sum(lk.w) + sum(lk.r);
      if (rc == config::Recompute::none) base = t;
      std::printf("mbs %d %-13s per block %.3f ms (recompute %.3f ms, %.3f of full's) act %.3f GiB\n", mbs, config::to_string(rc), 1e3*t, 1e3*sum(lk.r), 0.0, models::activation_bytes(s.model, 0, sh)/1073741824.0);
    }
    (void)base;
  }
}
