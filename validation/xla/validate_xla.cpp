// validation_xla [--shapes] [--calibration GPU=FILE ...]
// validation_xla --fit-table GPU CSV PROBE OUT   (the same for an SDPA table in cuDNN frontend's format, CSV)
// validation_xla --fit GPU PROBE OUT   (writes the GPU's GEMM table as a probe output PROBE and
//                                       `mfusim calibrate`'s fit of it, against the datasheet peak, to OUT)
// OpenXLA's published H100 (sm_90) and B200 (sm_100_B200) GEMM and collective measurements
// (validation/xla/matmul.csv, collectives.csv; SOURCES.md) against the cost model, with the
// datasheet profile and the calibration validate_modern's calibrated profile uses for that GPU
// (hardware::default_calibration_file: the shipped H100 file on the H100, run 54; b200-xla.toml on the B200).
// --calibration GPU=FILE adds a profile with that calibration file (relative to the source tree).
// --shapes prints every GEMM shape; otherwise the largest shapes and the summaries.
// Ratio = model time / measured time (below 1: the model is faster than the measurement).
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "validation/xla/xla_tables.h"

using namespace mfusim;
using namespace mfusim::validation::xla;

namespace {

void print_summary_line(const char* label, const RatioSummary& s) {
  if (s.n == 0) return;
  std::printf("  %-34s n %3d  median %.3f  geomean %.3f  min %.3f  max %.3f  sum-time %.3f\n", label, s.n, s.median,
              s.geomean, s.min, s.max, s.time_ratio);
}

}  // namespace

int main(int argc, char** argv) {
  bool shapes = false;
  std::vector<std::pair<std::string, std::string>> extra;   // GPU, calibration file
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--shapes") shapes = true;
    else if ((a == "--fit" && i + 3 < argc) || (a == "--fit-table" && i + 4 < argc)) {
      // --fit-table GPU CSV PROBE OUT: a table in cuDNN frontend's format measured elsewhere (run 51: the H200).
      const bool table = a == "--fit-table";
      const std::string gpu = argv[i + 1], probe = argv[i + (table ? 3 : 2)], out = argv[i + (table ? 4 : 3)];
      try {
        // A table given on the command line is one of host-timed calls, as run 51's.
        const SdpaTable shipped = sdpa_table_of(gpu);
        const std::string sdpa_table = table ? std::string(argv[i + 2]) : shipped.path;
        write_probe(read_matmul(source_path("validation/xla/matmul.csv")), gpu, probe,
                    sdpa_table.empty() ? std::vector<SdpaRow>{} : read_sdpa(table ? sdpa_table : source_path(sdpa_table)),
                    !table && shipped.device_timed);
        std::string report;
        const hardware::Calibration cal = fit_from_probe(probe, gpu, &report);
        if (!sdpa_table.empty() && !cal.has_attention)
          throw std::runtime_error(sdpa_table + ":1:1: error: no cuDNN call of the table could be fitted");
        hardware::write_calibration(cal, out);
        std::printf("%s", report.c_str());
        if (cal.has_gemm && cal.has_gemm_fp8)
          std::printf("re-expressed against the datasheet peaks: gemm eff_max %.4f of %.1f TFLOP/s, gemm_fp8 eff_max "
                      "%.4f of %.1f TFLOP/s\n",
                      cal.gemm.eff_max, cal.gemm.peak_flops * 1e-12, cal.gemm_fp8.eff_max, cal.gemm_fp8.peak_flops * 1e-12);
        if (cal.has_attention)
          std::printf("attention (cuDNN, %s): flash fwd eff %.4f, bwd eff %.4f of %.1f TFLOP/s\n", sdpa_table.c_str(),
                      cal.attention.flash_fwd_eff, cal.attention.flash_bwd_eff, cal.attention.peak_flops * 1e-12);
        if (cal.has_attention_fa2)
          std::printf("attention_fa2 (PyTorch's FlashAttention-2): flash fwd eff %.4f, bwd eff %.4f of %.1f TFLOP/s\n",
                      cal.attention_fa2.flash_fwd_eff, cal.attention_fa2.flash_bwd_eff, cal.attention_fa2.peak_flops * 1e-12);
        std::printf("wrote %s\n", out.c_str());
      } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 2;
      }
      return 0;
    }
    else if (a == "--calibration" && i + 1 < argc) {
      const std::string v = argv[++i];
      const auto eq = v.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == v.size()) {
        std::fprintf(stderr, "error: --calibration takes GPU=FILE (GPU: H100 or B200), got '%s'\n", v.c_str());
        return 2;
      }
      extra.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else {
      std::fprintf(stderr, "usage: %s [--shapes] [--calibration GPU=FILE ...] | --fit GPU PROBE OUT | --fit-table GPU CSV PROBE OUT\n", argv[0]);
      return 2;
    }
  }
  try {
    const auto gemms = read_matmul(source_path("validation/xla/matmul.csv"));
    const auto colls = read_collectives(source_path("validation/xla/collectives.csv"));
    for (const char* gpu : {"H100", "B200"}) {
      std::vector<Profile> profiles = {make_profile(gpu, "datasheet"), make_profile(gpu, "calibrated")};
      if (!profiles[1].cal) profiles.pop_back();   // no shipped calibration for this GPU
      for (const auto& [g, file] : extra)
        if (g == gpu) {
          profiles.push_back(make_profile(gpu, "file", file));
          profiles.push_back(profiles.back());   // the same fit without its exact-shape tables
          profiles.back().name = "fit-only";
          profiles.back().cal->gemm_table.clear();
          profiles.back().cal->gemm_fp8_table.clear();
        }
      std::printf("== %s (%s)\n", gpu, profiles[0].hw.name.c_str());
      for (const Profile& p : profiles)
        std::printf("   profile %-10s %s\n", p.name.c_str(), p.cal_path.empty() ? "no calibration" : p.cal_path.c_str());
      for (const char* dtype : {"bf16", "fp8_e4m3"}) {
        const double peak = dtype == std::string("bf16") ? profiles[0].hw.peak_flops_bf16 : profiles[0].hw.peak_flops_fp8;
        int above_peak = 0, rows = 0;
        for (const GemmRow& r : gemms)
          if (r.gpu == gpu && r.dtype == dtype && r.revision == "71feedd") {
            ++rows;
            if (r.flops_per_s > peak) ++above_peak;
          }
        std::printf("\n%s GEMMs, %s: %d shapes; %d above the datasheet dense peak %.0f TFLOP/s%s\n", gpu, dtype, rows,
                    above_peak, peak * 1e-12,
                    above_peak ? " (not a GEMM's time: see SOURCES.md; excluded from conclusions)" : "");
        std::printf("  %2s %5s %5s %5s %9s", "b", "m", "n", "k", "XLA TF/s");
        for (const Profile& p : profiles) std::printf(" %10.10s %6s", p.name.c_str(), "ratio");
        std::printf("\n");
        for (const GemmRow& r : gemms) {
          if (r.gpu != gpu || r.dtype != dtype || r.revision != "71feedd") continue;
          if (!shapes && !(r.m == 4096 && r.n >= 2048 && r.k >= 2048)) continue;
          std::printf("  %2lld %5lld %5lld %5lld %9.0f", r.b, r.m, r.n, r.k, r.flops_per_s * 1e-12);
          for (const Profile& p : profiles) {
            const double t = model_seconds(p, r);
            std::printf(" %10.0f %6.3f", r.flops() / t * 1e-12, t / r.seconds());
          }
          std::printf("\n");
        }
        for (const Profile& p : profiles) {
          std::printf(" %s (%s):\n", p.name.c_str(), p.cal_path.empty() ? "no calibration" : p.cal_path.c_str());
          for (Subset s : {Subset::all, Subset::single, Subset::large})
            print_summary_line(to_string(s), gemm_summary(p, gemms, gpu, dtype, "71feedd", s));
        }
      }
      if (profiles.size() > 1 && profiles[1].name == "calibrated") {
        // Shapes both the calibration's measured table and XLA's table hold (b = 1): the calibration
        // GPU's own time against XLA's on this GPU, no fit involved.
        std::printf("\n%s bf16, shapes measured in both %s's table and XLA's (b = 1):\n", gpu,
                    profiles[1].cal_path.c_str());
        std::vector<double> cal_t, xla_t;
        for (const hardware::GemmSample& c : profiles[1].cal->gemm_table)
          for (const GemmRow& r : gemms)
            if (r.gpu == gpu && r.dtype == "bf16" && r.revision == "71feedd" && r.b == 1 && r.m == c.m && r.n == c.n &&
                r.k == c.k) {
              std::printf("  %5lld %5lld %5lld  %s %6.0f TF/s  XLA %6.0f TF/s  time ratio %.3f\n", r.m, r.n, r.k,
                          profiles[1].cal->gpu_name.c_str(), r.flops() / c.seconds * 1e-12, r.flops_per_s * 1e-12,
                          c.seconds / r.seconds());
              cal_t.push_back(c.seconds);
              xla_t.push_back(r.seconds());
            }
        print_summary_line("calibration GPU / XLA time", summarise(cal_t, xla_t));
      }
      if (std::string(gpu) == "H100") {
        // The same shapes in XLA's two earlier H100 tables (bf16): the measurement's repeatability.
        std::printf("\nH100 bf16, earlier revisions of the table against the current one (same shapes, b = 1, "
                    "m,n,k >= 2048):\n");
        for (const char* rev : {"b276608", "f325373"}) {
          std::vector<double> cur, old;
          for (const GemmRow& r : gemms)
            if (r.gpu == gpu && r.dtype == "bf16" && r.revision == rev && in_subset(r, Subset::large))
              for (const GemmRow& c : gemms)
                if (c.gpu == gpu && c.dtype == "bf16" && c.revision == "71feedd" && c.b == r.b && c.m == r.m &&
                    c.n == r.n && c.k == r.k) {
                  cur.push_back(c.seconds());
                  old.push_back(r.seconds());
                }
          print_summary_line((std::string("current / ") + rev + " time").c_str(), summarise(cur, old));
        }
      }
      std::printf("\n%s collectives (one 8-GPU node, f32), model / measured time per message size; bus GB/s = "
                  "nccl-tests bus bandwidth of the measurement\n",
                  gpu);
      for (const char* op : {"all-reduce", "all-gather", "reduce-scatter", "all-to-all"})
        for (int gsize : {8, 4, 2}) {
          std::printf("  %-14s group %d:", op, gsize);
          for (const CollectiveRow& r : colls) {
            if (r.gpu != gpu || r.op != op || r.group_size != gsize) continue;
            if (r.bytes < 16.0 * (1 << 20) || static_cast<long long>(r.bytes) % (1 << 22)) continue;   // 16 MiB..2 GiB, x4
            std::printf(" %4.0fM %3.0f/%.2f", r.bytes / (1 << 20), r.throughput * bus_factor(op, gsize) * 1e-9,
                        model_seconds(profiles[0], r) / r.seconds());
          }
          std::printf("\n");
        }
      for (const Profile& p : profiles) {
        std::printf(" %s, messages >= 256 MiB:\n", p.name.c_str());
        for (const char* op : {"all-reduce", "all-gather", "reduce-scatter", "all-to-all"})
          for (int gsize : {8, 4, 2})
            print_summary_line((std::string(op) + " group " + std::to_string(gsize)).c_str(),
                               collective_summary(p, colls, gpu, op, gsize));
      }
      std::printf("\n");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  return 0;
}
