// cuDNN frontend's published SDPA training benchmark on B200, GB200 and GB300 (validation/cudnn_sdpa,
// SOURCES.md) as the Blackwell calibrations' [attention]: the shipped files are calibrate's fit of the tables,
// the fit gives the published calls back, and a table of calls timed one by one with the host's dispatch is
// fitted without a per-call intercept (attention_intercept = false).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "hardware/calibration.h"
#include "hardware/cost_model.h"
#include "models/kernel_builders.h"
#include "validation/xla/xla_tables.h"

using namespace mfusim;
namespace vx = mfusim::validation::xla;

namespace {

struct Gpu { const char* name; const char* shipped; };
const Gpu kGpus[] = {{"B200", "hardware/calibration/b200-xla.toml"},
                     {"GB200", "hardware/calibration/gb200-cudnn.toml"},
                     {"GB300", "hardware/calibration/gb300-cudnn.toml"}};

std::vector<vx::SdpaRow> table(const std::string& gpu) { return vx::read_sdpa(vx::source_path(vx::sdpa_table_of(gpu).path)); }

hardware::Calibration refit(const std::string& gpu, const std::vector<vx::SdpaRow>& rows, bool intercept = false) {
  const auto probe = std::filesystem::temp_directory_path() / ("mfusim_cudnn_sdpa_" + gpu + ".toml");
  vx::write_probe(vx::read_matmul(vx::source_path("validation/xla/matmul.csv")), gpu, probe.string(), rows,
                  vx::sdpa_table_of(gpu).device_timed);
  if (intercept) {   // the same probe with the per-call intercept asked for
    std::ifstream in(probe);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    in.close();
    const auto at = text.find("attention_intercept = false");
    REQUIRE(at != std::string::npos);
    text.replace(at, 27, "attention_intercept = true ");
    std::ofstream(probe) << text;
  }
  auto cal = vx::fit_from_probe(probe.string(), gpu, nullptr);
  std::filesystem::remove(probe);
  return cal;
}

hardware::Kernel cudnn_call(bool bwd, const vx::SdpaRow& r, bool fa2 = false) {
  std::vector<hardware::Kernel> f, b;
  models::detail::attention_kernels(models::ModelSpec{}, {double(r.batch), double(r.heads), double(r.kv_heads), double(r.seq_q),
                                                          double(r.seq_kv), double(r.head_dim), double(r.head_dim)},
                                    2, config::Attention::flash, f, b);
  hardware::Kernel k = bwd ? b.front() : f.front();
  k.fa2 = fa2;
  return k;
}

}  // namespace

TEST_CASE("cudnn sdpa: the tables read as published (rates consistent with their times, 'inf' where a backend did not run)") {
  for (const Gpu& g : kGpus) {
    const auto rows = table(g.name);
    int cudnn = 0;
    for (const auto& r : rows) {
      if (!vx::is_cudnn_bf16(r.backend)) continue;
      ++cudnn;
      CHECK(r.heads == 128);
      CHECK(r.kv_heads == 8);
      CHECK(r.head_dim == 128);
      CHECK(r.causal);
      CHECK(r.fwd_tflops > 0);
      CHECK(r.bwd_tflops > 0);
    }
    CHECK(cudnn == 9);   // 512 .. 131072 tokens
  }
  // B200's math backend did not run from 16k tokens on: read as no rate, not as a number.
  int none = 0;
  for (const auto& r : table("B200")) none += r.backend == "pyt_math" && r.fwd_tflops == 0;
  CHECK(none == 4);   // 16k, 32k, 64k, 128k
}

TEST_CASE("cudnn sdpa: each shipped Blackwell calibration's [attention] is calibrate's fit of its published table") {
  for (const Gpu& g : kGpus) {
    CAPTURE(g.name);
    const auto shipped = hardware::read_calibration(vx::source_path(g.shipped));
    const auto fit = refit(g.name, table(g.name));
    REQUIRE(shipped.has_attention);
    REQUIRE(fit.has_attention);
    CHECK(shipped.attention.peak_flops == doctest::Approx(vx::hardware_of(g.name).peak_flops_bf16));
    CHECK(shipped.attention.flash_fwd_eff == doctest::Approx(fit.attention.flash_fwd_eff).epsilon(1e-6));
    CHECK(shipped.attention.flash_bwd_eff == doctest::Approx(fit.attention.flash_bwd_eff).epsilon(1e-6));
    CHECK(shipped.attention.flash_fwd_seq_knee == fit.attention.flash_fwd_seq_knee);
    CHECK(shipped.attention.flash_bwd_seq_knee == fit.attention.flash_bwd_seq_knee);
    // A table of calls timed with the host's dispatch is fitted without the intercept (the B200's); a table of
    // device times keeps it, the kernels' own (the GB200's and GB300's).
    if (!vx::sdpa_table_of(g.name).device_timed) CHECK(shipped.attention.overhead_s == 0.0);
    CHECK_FALSE(shipped.attention.tile_form);
    // PyTorch's FlashAttention-2 from the same table: a quarter to a third of cuDNN's rate on Blackwell.
    REQUIRE(shipped.has_attention_fa2);
    CHECK(shipped.attention_fa2.flash_fwd_eff == doctest::Approx(fit.attention_fa2.flash_fwd_eff).epsilon(1e-6));
    CHECK(shipped.attention_fa2.flash_bwd_eff == doctest::Approx(fit.attention_fa2.flash_bwd_eff).epsilon(1e-6));
    CHECK(shipped.attention_fa2.flash_fwd_eff < 0.35 * shipped.attention.flash_fwd_eff);
    CHECK(shipped.attention_fa2.flash_bwd_eff < 0.35 * shipped.attention.flash_bwd_eff);
    if (!vx::sdpa_table_of(g.name).device_timed) CHECK(shipped.attention_fa2.overhead_s == 0.0);
    // Only the B200 has a measured GEMM table (OpenXLA's); the GB200's and GB300's GEMMs stay on the datasheet.
    CHECK(shipped.has_gemm == (std::string(g.name) == "B200"));
  }
}

TEST_CASE("cudnn sdpa: the fitted cost model gives the published cuDNN and FlashAttention-2 calls back (4k tokens and up, within 15%)") {
  for (const Gpu& g : kGpus) {
    CAPTURE(g.name);
    const auto cal = hardware::read_calibration(vx::source_path(g.shipped));
    const hardware::CostModel cm(vx::hardware_of(g.name), hardware::Precision::bf16, &cal, false);
    const hardware::CostModel roof(vx::hardware_of(g.name), hardware::Precision::bf16, nullptr, false);
    auto device = [](const hardware::CostModel& c, const hardware::Kernel& k) { return c.time(k) - c.launch_time(k); };
    double worst = 0, roof_worst = 0;
    for (const auto& r : table(g.name)) {
      const bool fa2 = vx::is_pytorch_fa2(r.backend);
      if (!(vx::is_cudnn_bf16(r.backend) || fa2) || r.seq_q < 4096) continue;
      for (const bool bwd : {false, true}) {
        const double ratio = device(cm, cudnn_call(bwd, r, fa2)) / r.seconds(bwd);
        MESSAGE(std::string(g.name) << " " << r.backend << (bwd ? " bwd " : " fwd ") << r.seq_q << ": model / published " << ratio);
        worst = std::max(worst, std::fabs(ratio - 1));
        roof_worst = std::max(roof_worst, std::fabs(device(roof, cudnn_call(bwd, r, fa2)) / r.seconds(bwd) - 1));
      }
    }
    CHECK(worst < 0.15);
    // The datasheet defaults (the H200's efficiencies) miss some of these calls by more.
    CHECK(roof_worst > worst);
  }
}

TEST_CASE("fit_probe: attention_intercept = false fits a per-call table without an intercept; true keeps it") {
  const auto rows = table("B200");   // one call between CUDA events each (the GB200's and GB300's are device times)
  const auto without = refit("B200", rows);
  const auto with = refit("B200", rows, true);
  REQUIRE(without.has_attention);
  REQUIRE(with.has_attention);
  CHECK(without.attention.overhead_s == 0.0);
  // PyTorch's dispatch around each B200 call is ~0.1-0.25 ms: a fit with an intercept takes it as one.
  CHECK(with.attention.overhead_s > 50e-6);
  CHECK(with.attention.flash_fwd_eff != doctest::Approx(without.attention.flash_fwd_eff));
}

TEST_CASE("fit_probe: a Blackwell probe's efficiencies are fractions of its own datasheet peak ('GB200' holds 'B200')") {
  CHECK(refit("GB200", table("GB200")).attention.peak_flops == doctest::Approx(2500e12));
  CHECK(refit("B200", table("B200")).attention.peak_flops == doctest::Approx(2250e12));
  CHECK(refit("B200", table("B200")).gemm.peak_flops == doctest::Approx(2250e12));
}

TEST_CASE("fit_probe: attention_intercept that is not true or false is refused at its position") {
  const auto probe = std::filesystem::temp_directory_path() / "mfusim_cudnn_sdpa_bad.toml";
  std::ofstream(probe) << "format = \"mfusim-probe-1\"\n[provenance]\ngpu = \"NVIDIA GB200 NVL72\"\nattention_intercept = \"no\"\n";
  std::string what;
  try {
    hardware::fit_probe(probe.string());
  } catch (const std::exception& e) {
    what = e.what();
  }
  std::filesystem::remove(probe);
  CHECK(what.find(":4:") != std::string::npos);
  CHECK(what.find("'attention_intercept' must be true or false") != std::string::npos);
}

TEST_CASE("run 51: the Blackwell tables' method, on the H200, prices back-to-back calls short (clock and few heads)") {
  // The H200's calls timed as cuDNN frontend's benchmark times them (one per event pair after a sleep), fitted as
  // the B200 table is, against the same GPU's back-to-back times (validation/runs/run51-sdpa-method).
  const std::string dir = vx::source_path("validation/runs/run51-sdpa-method/results/");
  const auto cal = refit("H200", vx::read_sdpa(dir + "per_call.csv"));
  REQUIRE(cal.has_attention);
  REQUIRE(cal.has_attention_fa2);
  const hardware::CostModel cm(vx::hardware_of("H200"), hardware::Precision::bf16, &cal, false);
  std::ifstream in(dir + "b2b.csv");
  std::string line;
  std::getline(in, line);
  REQUIRE(line == "backend,heads,kv_heads,seq,pass,ms,tflops_per_sec");
  std::vector<double> cudnn_small, cudnn_long128;
  while (std::getline(in, line)) {
    const auto f = vx::split(line);
    REQUIRE(f.size() == 7);
    vx::SdpaRow r;
    r.backend = f[0];
    r.batch = 1;
    r.heads = std::stoll(f[1]);
    r.kv_heads = std::stoll(f[2]);
    r.seq_q = r.seq_kv = std::stoll(f[3]);
    r.head_dim = 128;
    const bool bwd = f[4] == "bwd";
    const auto k = cudnn_call(bwd, r, vx::is_pytorch_fa2(r.backend));
    const double ratio = (cm.time(k) - cm.launch_time(k)) / (std::stod(f[5]) * 1e-3);
    if (!vx::is_cudnn_bf16(r.backend)) continue;
    if (r.heads == 128 && r.seq_q >= 8192) cudnn_long128.push_back(ratio);
    if (r.heads < 128) cudnn_small.push_back(ratio);
  }
  auto median = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  REQUIRE(cudnn_small.size() == 24);
  REQUIRE(cudnn_long128.size() == 6);
  MESSAGE("cuDNN training-like calls: price / back to back median " << median(cudnn_small));
  MESSAGE("cuDNN 128 heads, 8k-32k: price / back to back median " << median(cudnn_long128));
  // docs/validation-modern.md: median 0.89 on both; every long 128-head call under 0.95 (the unloaded clock).
  CHECK(median(cudnn_small) == doctest::Approx(0.89).epsilon(0.03));
  CHECK(median(cudnn_long128) == doctest::Approx(0.89).epsilon(0.03));
  CHECK(*std::max_element(cudnn_long128.begin(), cudnn_long128.end()) < 0.95);
}

TEST_CASE("cudnn sdpa: one GB300 at cuDNN 9.13 per call and at 9.17 device-timed is as far apart as the B200 and GB200 tables") {
  // The B200 table (cuDNN 9.13, one call at a time) and the GB200 table (cuDNN 9.17, the profiler's device
  // times) price the same die's attention 1.35x / 1.28x (forward / backward) apart at 8k tokens. The GB300's
  // two tables, one of each kind, show how much of that the cuDNN version and the method make on one GPU.
  auto times = [](const std::vector<vx::SdpaRow>& rows, const std::string& backend) {
    std::map<long long, std::pair<double, double>> out;   // seq -> (fwd s, bwd s)
    for (const auto& r : rows)
      if (r.backend == backend && r.fwd_tflops > 0 && r.bwd_tflops > 0) out[r.seq_q] = {r.seconds(false), r.seconds(true)};
    return out;
  };
  const auto b200 = times(table("B200"), "pyt_cudnn"), gb200 = times(table("GB200"), "cudnn_fe");
  const auto gb300_913 = times(vx::read_sdpa(vx::source_path("validation/cudnn_sdpa/gb300_bf16_913.csv")), "pyt_cudnn");
  const auto gb300_917 = times(table("GB300"), "cudnn_fe");
  for (long long seq : {8192LL, 16384LL, 32768LL}) {
    CAPTURE(seq);
    REQUIRE(b200.count(seq));
    REQUIRE(gb200.count(seq));
    REQUIRE(gb300_913.count(seq));
    REQUIRE(gb300_917.count(seq));
    const double vm_f = gb300_913.at(seq).first / gb300_917.at(seq).first;     // version and method, forward
    const double vm_b = gb300_913.at(seq).second / gb300_917.at(seq).second;
    const double bg_f = b200.at(seq).first / gb200.at(seq).first, bg_b = b200.at(seq).second / gb200.at(seq).second;
    MESSAGE("GB300 9.13/9.17 " << vm_f << " / " << vm_b << ", B200/GB200 " << bg_f << " / " << bg_b << ", left "
                               << bg_f / vm_f << " / " << bg_b / vm_b);
    CHECK(vm_f > 1.1);   // the version and the method alone make the 9.13 calls at least 10% slower
    CHECK(vm_b > 1.05);
    // What is left between the B200 and the GB200 is their datasheet peaks' ratio (2,500 / 2,250 = 1.11) within 6%.
    CHECK(bg_f / vm_f == doctest::Approx(2500.0 / 2250.0).epsilon(0.06));
    CHECK(bg_b / vm_b == doctest::Approx(2500.0 / 2250.0).epsilon(0.06));
  }
}
