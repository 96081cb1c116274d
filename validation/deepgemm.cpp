// validation_deepgemm [SCENARIO] [--set KEY=VALUE ...]
// DeepGEMM's published H800 fp8 GEMM figures (github.com/deepseek-ai/DeepGEMM, README.md at commit
// 55ab91f72f76e8a6db0e86282c3169a88d93df1b, 2025-03-25, "Performance": H800 SXM5, NVCC 12.8, fp8
// e4m3 inputs with fine-grained 1x128 / 128x128 scaling, bf16 output) against the TFLOP/s the cost
// model assigns to the same shapes for a scenario (default scenarios/2048xh800_deepseek_v3.toml):
// the CostModel as the scenario's lowering builds it (hardware, precision, calibration, CUDA graphs,
// the settled GEMM clock), execution time without the launch, grouped expert GEMMs priced as
// layer::group_expert_gemms prices them. Then the scenario's own GEMMs of one MoE layer (forward,
// input gradient, weight gradient) with the TFLOP/s they are priced at.
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "config/loader.h"
#include "validation/scenario_args.h"
#include "hardware/cost_model.h"
#include "hardware/kernel.h"
#include "layer/moe_dispatch.h"
#include "models/layer_kernels.h"
#include "models/rank_shape.h"

using namespace mfusim;

namespace {

// One published row: groups = 0 for a normal GEMM; M is per group for the grouped ones.
struct Row {
  const char* table;   // "normal", "contiguous", "masked"
  int groups;
  long long m, n, k;
  double tflops;       // DeepGEMM's "Computation" column
  const char* use;     // which DeepSeek-V3 GEMM the (N, K) is
  double first = 0;    // the first published table (README.md @ a6d97a1, 2025-02-25) where it differs
};

// DeepGEMM README.md @ 55ab91f72f76e8a6db0e86282c3169a88d93df1b, tables "Normal GEMMs for dense
// models", "Grouped GEMMs for MoE models (contiguous layout)" and "(masked layout)"; `first`: the
// same tables at the initial commit a6d97a1c1b48a7a9d7994d0e155ee6f11d0a3f07 (2025-02-25), where
// they differ (only the rows at M = 4096 and the contiguous rows changed).
const Row kRows[] = {
    {"normal", 0, 64, 2112, 7168, 206, "q_down + kv_down (7168 -> 1536 + 576)"},
    {"normal", 0, 64, 24576, 1536, 289, "q_up (1536 -> 128 x 192)"},
    {"normal", 0, 64, 32768, 512, 219, "kv_up (512 -> 128 x 256)"},
    {"normal", 0, 64, 7168, 16384, 336, "o_proj (128 x 128 -> 7168)"},
    {"normal", 0, 64, 4096, 7168, 287, "shared expert gate + up (7168 -> 2 x 2048)"},
    {"normal", 0, 64, 7168, 2048, 295, "shared expert down (2048 -> 7168)"},
    {"normal", 0, 128, 2112, 7168, 352, "q_down + kv_down"},
    {"normal", 0, 128, 24576, 1536, 535, "q_up"},
    {"normal", 0, 128, 32768, 512, 358, "kv_up"},
    {"normal", 0, 128, 7168, 16384, 645, "o_proj"},
    {"normal", 0, 128, 4096, 7168, 533, "shared expert gate + up"},
    {"normal", 0, 128, 7168, 2048, 510, "shared expert down"},
    {"normal", 0, 4096, 2112, 7168, 1009, "q_down + kv_down", 1058},
    {"normal", 0, 4096, 24576, 1536, 1125, "q_up", 990},
    {"normal", 0, 4096, 32768, 512, 751, "kv_up", 590},
    {"normal", 0, 4096, 7168, 16384, 1426, "o_proj", 1358},
    {"normal", 0, 4096, 4096, 7168, 1265, "shared expert gate + up", 1304},
    {"normal", 0, 4096, 7168, 2048, 1168, "shared expert down", 1025},
    {"contiguous", 4, 8192, 4096, 7168, 1346, "routed experts gate + up, 4 per rank (EP 64)", 1297},
    {"contiguous", 4, 8192, 7168, 2048, 1214, "routed experts down, 4 per rank", 1099},
    {"contiguous", 8, 4096, 4096, 7168, 1346, "routed experts gate + up, 8 per rank (EP 32)", 1288},
    {"contiguous", 8, 4096, 7168, 2048, 1214, "routed experts down, 8 per rank", 1093},
    {"masked", 1, 1024, 4096, 7168, 1233, "routed experts gate + up (decoding)"},
    {"masked", 1, 1024, 7168, 2048, 925, "routed experts down (decoding)"},
    {"masked", 2, 512, 4096, 7168, 1040, "routed experts gate + up (decoding)"},
    {"masked", 2, 512, 7168, 2048, 916, "routed experts down (decoding)"},
    {"masked", 4, 256, 4096, 7168, 932, "routed experts gate + up (decoding)"},
    {"masked", 4, 256, 7168, 2048, 815, "routed experts down (decoding)"},
};

hardware::Kernel gemm(long long m, long long n, long long k, int count, const char* name) {
  hardware::Kernel g;
  g.kind = hardware::KernelKind::gemm;
  g.name = name;
  g.m = m;
  g.n = n;
  g.k = k;
  g.count = count;
  g.flops = 2.0 * static_cast<double>(m) * n * k;
  return g;
}

}  // namespace

int main(int argc, char** argv) {
  std::string path;
  config::LoadOptions lo;
  if (!validation::scenario_args(argc, argv, path, lo)) return 2;
  try {
    const config::Scenario s = config::load_scenario(path, lo).base;
    hardware::CostModel cost(s.hardware, s.training.precision, s.calibration ? &*s.calibration : nullptr,
                             s.features.cuda_graphs);
    const models::RankShape sh = models::rank_shape(s);
    // The lowering's GEMM clock (LayerCosts::place), not its group pace: DeepGEMM's figures are one GPU's.
    models::settle_gemm_duty(s.model, sh, cost);
    auto exec = [&](const hardware::Kernel& k) { return cost.time(k) - cost.launch_time(k); };
    std::printf("%s: %s, precision %s, calibration %s, GEMM clock ratio %.4f at duty %.3f\n", path.c_str(),
                s.hardware.name.c_str(), config::to_string(s.training.precision),
                s.calibration_path.empty() ? "none" : s.calibration_path.c_str(), cost.gemm_clock_scale(),
                cost.gemm_duty());
    std::printf("\nDeepGEMM README.md @ 55ab91f72f76e8a6db0e86282c3169a88d93df1b (H800 SXM5) against the cost model\n");
    std::printf("%-10s %6s %6s %6s %6s %9s %9s %9s %7s  %s\n", "table", "groups", "M", "N", "K", "DeepGEMM",
                "mfusim", "mfusim", "ratio", "DeepSeek-V3 GEMM");
    std::printf("%-10s %6s %6s %6s %6s %9s %9s %9s %7s\n", "", "", "", "", "", "TFLOP/s", "TFLOP/s", "us", "");
    // The forward GEMMs of one MoE layer and micro-batch (4096 tokens, TP 1, EP 64): the rows at M = 4096
    // and the contiguous rows of 4 groups of 8192 (DeepGEMM fuses q_down and kv_down into one N = 2112 call).
    double fwd_theirs = 0, fwd_first = 0, fwd_ours = 0;
    for (const Row& r : kRows) {
      const int g = r.groups > 0 ? r.groups : 1;
      std::vector<hardware::Kernel> ks = {gemm(r.m, r.n, r.k, g, r.groups > 0 ? "expert_fc1" : "gemm")};
      if (r.groups > 0) layer::group_expert_gemms(s, ks, 0, 1, false);   // one grouped call, as the scenario prices it
      const double t = exec(ks[0]);
      const double flops = 2.0 * static_cast<double>(r.m) * r.n * r.k * g;
      const double ours = flops / t * 1e-12;
      std::printf("%-10s %6d %6lld %6lld %6lld %9.0f %9.0f %9.1f %7.3f  %s\n", r.table, r.groups, r.m, r.n, r.k,
                  r.tflops, ours, t * 1e6, ours / r.tflops, r.use);
      if ((r.groups == 0 && r.m == 4096) || (std::string(r.table) == "contiguous" && r.groups == 4)) {
        fwd_theirs += flops / (r.tflops * 1e12);
        fwd_first += flops / ((r.first > 0 ? r.first : r.tflops) * 1e12);
        fwd_ours += t;
      }
    }
    std::printf("forward GEMMs of one MoE layer at the published training shapes (M = 4096; 4 x 8192 grouped): "
                "DeepGEMM %.1f us, mfusim %.1f us (mfusim / DeepGEMM time %.3f)\n",
                fwd_theirs * 1e6, fwd_ours * 1e6, fwd_ours / fwd_theirs);
    std::printf("the same against the first published table (README.md @ a6d97a1, 2025-02-25): DeepGEMM %.1f us "
                "(mfusim / DeepGEMM time %.3f)\n",
                fwd_first * 1e6, fwd_ours / fwd_first);
    // The scenario's own GEMMs of its first MoE layer, as the cost model prices them.
    const int layer = s.model.is_moe() ? s.model.moe->dense_layers : 0;
    auto ks = models::layer_kernels(s.model, layer, sh);
    layer::group_expert_gemms(s, ks.f, ks.f_experts, ks.f_experts_end, false);
    layer::group_expert_gemms(s, ks.b, ks.b_experts, ks.b_experts_end, false);
    layer::group_expert_gemms(s, ks.w, 0, ks.w.size(), true);
    std::printf("\nThe scenario's GEMMs of layer %d (per rank, one micro-batch), as priced\n", layer);
    std::printf("%-5s %-24s %6s %6s %6s %6s %9s %9s %6s\n", "pass", "kernel", "M", "N", "K", "count", "us",
                "TFLOP/s", "fp8");
    double total_t = 0, total_f = 0;
    auto show = [&](const char* pass, const std::vector<hardware::Kernel>& v) {
      for (const auto& k : v) {
        if (k.kind != hardware::KernelKind::gemm) continue;
        const double t = exec(k);
        const double f = (k.flops > 0 ? k.flops : 2.0 * static_cast<double>(k.m) * k.n * k.k) * k.count;
        total_t += t;
        total_f += f;
        std::printf("%-5s %-24s %6lld %6lld %6lld %6d %9.1f %9.0f %6s\n", pass, k.name, static_cast<long long>(k.m),
                    static_cast<long long>(k.n), static_cast<long long>(k.k), k.count, t * 1e6, f / t * 1e-12,
                    k.keep_bf16 || s.training.precision != config::Precision::fp8 ? "no" : "yes");
      }
    };
    show("F", ks.f);
    show("B", ks.b);
    show("W", ks.w);
    std::printf("all GEMMs of the layer: %.1f us, %.0f TFLOP/s\n", total_t * 1e6, total_f / total_t * 1e-12);
    // Where the rest of the layer's kernel time goes (execution, no launch), by kind and pass.
    std::printf("\nlayer %d kernel time by kind (us): pass  gemm  attention  memory-bound\n", layer);
    for (const auto& [pass, v] : {std::pair<const char*, const std::vector<hardware::Kernel>*>{"F", &ks.f}, {"B", &ks.b},
                                  {"W", &ks.w}}) {
      double by[3] = {0, 0, 0};
      for (const auto& k : *v) {
        const int i = k.kind == hardware::KernelKind::gemm ? 0 : k.kind == hardware::KernelKind::memory ? 2 : 1;
        by[i] += exec(k);
      }
      std::printf("  %-4s %9.1f %9.1f %9.1f\n", pass, by[0] * 1e6, by[1] * 1e6, by[2] * 1e6);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  return 0;
}
