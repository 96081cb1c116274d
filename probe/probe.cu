// mfusim probe: measures the kernels the cost model needs on the GPU it runs on
// and writes one TOML file (SPEC.md §6). Every sample is written; fitting is
// `mfusim calibrate` (hardware/calibration.cpp).
//
// Families: dense GEMM through cuBLASLt (bf16, fp8 e4m3), materialised-softmax
// attention (cuBLASLt batched GEMMs + our softmax kernels), memory-bound
// kernels (copy, SwiGLU elementwise, RMSNorm), kernel launch overhead (plain and
// CUDA-graph replay), NCCL collectives when built with NCCL. Fused (flash)
// attention is measured through PyTorch SDPA (validation/attention_sdpa.py) and
// appended to this file: see probe/README.md.
//
// Files: harness.{h,cu} (checks, TOML writer and provenance, random data, event and
// CUDA-graph timers), gemm.{h,cu} (GEMM family), shapes.{h,cu} (scenario GEMM shapes),
// attention.cu, memory.cu (memory-bound kernels and launch overhead), collectives.cu (NCCL),
// lib.cu (the GEMM path as a shared library); this file: the command line and --serve.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "families.h"
#include "gemm.h"
#include "harness.h"
#include "shapes.h"

using namespace mfusim::probe;

namespace {
void usage() {
  std::puts(
      "usage: probe [--out FILE] [--quick] [--gemm-grid] [--no-gemm-grid] [--fp8|--no-fp8]\n"
      "             [--scenario SCENARIO.toml]... [--model hidden=..,ffn=..,heads=..,kv_heads=..,vocab=..,seq=..,mbs=..,tp=..,name=..]...\n"
      "             [--shapes 'label:m,n,k;m,n,k'] [--no-attention] [--no-memory] [--no-nccl] [--print-shapes]\n"
      "             [--graph] [--serve [--graph-only]] [--sustained MS] [--power SECONDS]\n"
      "--power SECONDS: only the power curve: an 8192^3 bf16 GEMM loop confined to k SMs (cuBLASLt's SM count\n"
      "         target) for SECONDS s per k, from all SMs down to 12; the median SM clock and board power over\n"
      "         the second half of each, under the board's power limit: [[gemm_power]] samples, the [power]\n"
      "         fit of mfusim calibrate (docs/cost-model.md 2e).\n"
      "--sustained MS: MS milliseconds of a large bf16 GEMM before each timed GEMM batch (and 3 s at\n"
      "         the start), so GEMMs are timed at the power-capped clock training steps run at.\n"
      "--graph: also time each GEMM under CUDA graph replay (graph_seconds).\n"
      "--serve: GEMMs on request: reads 'bf16|fp8 M N K [lt|gemmex] [WORKSPACE_MIB] [time|name]' lines on\n"
      "         stdin, answers 'RESULT eager_s graph_s<TAB>algo<TAB>kernel names' per line on stdout (for\n"
      "         validation/gemm_torch.py, which alternates probe and torch per shape). lt (default):\n"
      "         cublasLtMatmul, first heuristic, workspace WORKSPACE_MIB (default and at most 64);\n"
      "         gemmex: cublasGemmEx as torch.matmul's default path calls it, 32 MiB cublasSetWorkspace;\n"
      "         name: only the kernel names (no timing). --graph-only: no eager timing (eager_s = 0).\n"
      "Measures GEMMs (cuBLASLt), materialised attention, memory-bound kernels, launch overhead and\n"
      "NCCL collectives; writes one TOML file (default probe-output.toml).");
}
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// --power: an 8192^3 bf16 GEMM loop confined to k SMs for `seconds` s per k, from all the GPU's SMs down to
// 12; the SM clock and board power sampled (ClockSampler) over the second half of each, the GEMM rate timed
// over the same half, 2 s idle between. One [[gemm_power]] sample per k, with the board's power limit.
void power_curve(Ctx& c, Lt& lt, int sms, double seconds) {
  const long long n = 8192;
  DevBuf a(std::size_t(n) * n * 2), b(std::size_t(n) * n * 2), out(std::size_t(n) * n * 2);
  random_bf16(a.p, std::size_t(n) * n);
  random_bf16(b.p, std::size_t(n) * n);
  CUDA_CHECK(cudaDeviceSynchronize());
  const double limit = std::atof(shell("nvidia-smi -i 0 --query-gpu=power.limit --format=csv,noheader,nounits 2>/dev/null").c_str());
  if (!(limit > 0))
    std::fprintf(stderr, "probe --power: nvidia-smi gave no power limit for GPU 0; the sweep runs but writes no samples\n");
  std::vector<int> ks;
  for (int k : {0, 8, 16, 24, 32, 48, 64, 80, 96}) ks.push_back(sms - k);
  for (int k : {20, 12}) ks.push_back(k);
  for (int k : ks) {
    if (k < 1 || k > sms) continue;
    GemmPlan p;
    if (!make_plan(lt, p, false, n, n, n, 1, 0, 0, 0, true, false, k == sms ? 0 : k)) {
      std::fprintf(stderr, "probe --power: no cuBLASLt algorithm on %d SMs\n", k);
      continue;
    }
    ClockSampler clocks;
    cudaEvent_t e0, e1;
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    const auto t0 = std::chrono::steady_clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
    bool second_half = false;
    long long calls = 0;
    while (elapsed() < seconds) {
      for (int i = 0; i < 8; ++i) run_plan(lt, p, b.p, a.p, out.p, c.st);
      if (second_half) calls += 8;
      CUDA_CHECK(cudaStreamSynchronize(c.st));
      if (!second_half && elapsed() >= seconds / 2) {
        second_half = true;
        clocks.start();
        CUDA_CHECK(cudaEventRecord(e0, c.st));
      }
    }
    CUDA_CHECK(cudaEventRecord(e1, c.st));
    CUDA_CHECK(cudaEventSynchronize(e1));
    clocks.stop();
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    const double tflops = calls > 0 && ms > 0 ? 2.0 * n * n * n * calls / (ms * 1e-3) / 1e12 : 0;
    const double mhz = median(clocks.mhz), w = median(clocks.watts);
    std::printf("power: %3d SMs  %6.0f MHz  %6.1f W  %7.1f TFLOP/s\n", k, mhz, w, tflops);
    if (mhz > 0 && w > 0 && limit > 0) {
      c.out.table("gemm_power");
      c.out.kv("dtype", "bf16");
      c.out.kv("sms", k);
      c.out.kvf("clock_mhz", mhz);
      c.out.kvf("power_w", w);
      c.out.kvf("limit_w", limit);
      c.out.kvf("tflops", tflops);
      c.out.kv("clock_samples", static_cast<int>(clocks.mhz.size()));
    }
    CUDA_CHECK(cudaEventDestroy(e0));
    CUDA_CHECK(cudaEventDestroy(e1));
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
}
}  // namespace

int main(int argc, char** argv) {
  std::string out_path = "probe-output.toml";
  bool quick = false, grid = true, fp8 = true, attn = true, mem = true, nccl = true, print_only = false;
  bool graph = false, serve = false, c_eager = true;
  double sustained_ms = 0;
  double power_s = 0;
  std::vector<Shape> shapes;
  std::string cmdline;
  for (int i = 0; i < argc; ++i) cmdline += (i ? " " : "") + std::string(argv[i]);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--out") out_path = next();
    else if (a == "--quick") quick = true;
    else if (a == "--gemm-grid") grid = true;
    else if (a == "--no-gemm-grid") grid = false;
    else if (a == "--fp8") fp8 = true;
    else if (a == "--no-fp8") fp8 = false;
    else if (a == "--no-attention") attn = false;
    else if (a == "--no-memory") mem = false;
    else if (a == "--no-nccl") nccl = false;
    else if (a == "--scenario") { auto s = scenario_shapes(dims_from_scenario(next())); shapes.insert(shapes.end(), s.begin(), s.end()); }
    else if (a == "--model") { auto s = scenario_shapes(dims_from_list(next())); shapes.insert(shapes.end(), s.begin(), s.end()); }
    else if (a == "--shapes") { auto s = parse_shapes(next()); shapes.insert(shapes.end(), s.begin(), s.end()); }
    else if (a == "--print-shapes") print_only = true;
    else if (a == "--graph") graph = true;
    else if (a == "--serve") serve = true;
    else if (a == "--graph-only") c_eager = false;
    else if (a == "--sustained") {
      sustained_ms = std::atof(next().c_str());
      if (!(sustained_ms > 0 && sustained_ms <= 10000)) die("--sustained needs milliseconds in (0, 10000]");
    }
    else if (a == "--power") {
      power_s = std::atof(next().c_str());
      if (!(power_s >= 2 && power_s <= 600)) die("--power needs seconds per SM count in [2, 600]");
    }
    else if (a == "-h" || a == "--help") { usage(); return 0; }
    else { usage(); die("unknown argument " + a); }
  }

  if (print_only) {
    for (const auto& s : shapes) std::printf("%s m=%lld n=%lld k=%lld\n", s.label.c_str(), s.m, s.n, s.k);
    return 0;
  }
  int ngpu = 0;
  CUDA_CHECK(cudaGetDeviceCount(&ngpu));
  if (ngpu == 0) die("no CUDA device");
  CUDA_CHECK(cudaSetDevice(0));
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  int drv = 0, rt = 0;
  CUDA_CHECK(cudaDriverGetVersion(&drv));
  CUDA_CHECK(cudaRuntimeGetVersion(&rt));
  int clock_khz = 0, mem_clock_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
  cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, 0);

  Ctx c;
  c.quick = quick;
  c.l2 = std::size_t(prop.l2CacheSize);
  CUDA_CHECK(cudaStreamCreateWithFlags(&c.st, cudaStreamNonBlocking));
  Lt lt;
  c.lt = &lt;
  CUBLAS_CHECK(cublasLtLoggerSetLevel(0));

  const bool fp8_ok = fp8 && (prop.major >= 9 || (prop.major == 8 && prop.minor >= 9));
  c.graph = graph || serve;
  c.eager = !serve || c_eager;
  if (serve) {   // one GEMM per stdin line, answered at once; samples also go to --out
    std::string line;
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    // which cuBLAS(Lt) library this process loaded: the honesty check runs the probe on the
    // same libcublasLt as torch (validation/gemm_torch.py sets LD_LIBRARY_PATH), and says so.
    Dl_info lt_info{}, blas_info{};
    dladdr(reinterpret_cast<void*>(&cublasLtGetVersion), &lt_info);
    dladdr(reinterpret_cast<void*>(&cublasCreate_v2), &blas_info);
    std::printf("READY cublaslt=%zu lib=%s cublas_lib=%s\n", cublasLtGetVersion(),
                lt_info.dli_fname ? lt_info.dli_fname : "?", blas_info.dli_fname ? blas_info.dli_fname : "?");
    std::fflush(stdout);
    while (std::getline(std::cin, line)) {
      char dt[16] = {0}, api[16] = "lt", mode[16] = "time";
      long long m = 0, n = 0, k = 0, ws_mib = 64;
      int got = std::sscanf(line.c_str(), "%15s %lld %lld %lld %15s %lld %15s", dt, &m, &n, &k, api, &ws_mib, mode);
      const std::string api_s = api, mode_s = mode;
      if (got < 4 || (api_s != "lt" && api_s != "gemmex") || (mode_s != "time" && mode_s != "name") || ws_mib < 0 ||
          std::size_t(ws_mib) << 20 > Lt::ws_cap) {
        std::printf("ERROR bad request\n"); std::fflush(stdout); continue;
      }
      const bool f8 = std::string(dt) == "fp8";
      if (f8 && !fp8_ok) { std::printf("ERROR no fp8\n"); std::fflush(stdout); continue; }
      c.last_eager_s = c.last_graph_s = 0;
      c.gemmex = api_s == "gemmex";
      c.name_only = mode_s == "name";
      lt.ws_bytes = std::size_t(ws_mib) << 20;
      int before = c.gemm_count;
      gemm_sample(c, {c.gemmex ? "serve-gemmex" : "serve-lt" + std::to_string(ws_mib), m, n, k}, f8);
      lt.ws_bytes = Lt::ws_cap;
      c.gemmex = c.name_only = false;
      if (c.gemm_count == before) std::printf("ERROR no algorithm\n");
      else std::printf("RESULT %.9g %.9g\t%s\t%s\n", c.last_eager_s, c.last_graph_s, c.last_algo.c_str(),
                       c.last_kernels.c_str());
      std::fflush(stdout);
    }
    std::ofstream f(out_path);
    f << "# mfusim probe --serve samples\nformat = \"mfusim-probe-1\"\n" << c.out.body.str();
    return 0;
  }
  if (power_s > 0) {   // --power: the power curve alone
    power_curve(c, lt, prop.multiProcessorCount, power_s);
    write_output(out_path, {prop, ngpu, drv, rt, clock_khz, mem_clock_khz, cmdline, {}, {}}, 0, 0, 0, c.out);
    CUDA_CHECK(cudaStreamDestroy(c.st));
    std::printf("probe: wrote %s (power curve)\n", out_path.c_str());
    return 0;
  }
  // The heater (--sustained): an 8192^3 bf16 GEMM on buffers of its own, 3 s first.
  std::unique_ptr<DevBuf> heat_a, heat_b, heat_c;
  GemmPlan heat_plan;
  if (sustained_ms > 0) {
    const long long h = 8192;
    heat_a = std::make_unique<DevBuf>(std::size_t(h) * h * 2);
    heat_b = std::make_unique<DevBuf>(std::size_t(h) * h * 2);
    heat_c = std::make_unique<DevBuf>(std::size_t(h) * h * 2);
    random_bf16(heat_a->p, std::size_t(h) * h);
    random_bf16(heat_b->p, std::size_t(h) * h);
    if (!make_plan(lt, heat_plan, false, h, h, h)) die("--sustained: no cuBLASLt algorithm for the heater GEMM");
    set_heater([&] { run_plan(lt, heat_plan, heat_b->p, heat_a->p, heat_c->p, c.st); }, sustained_ms);
    heat(c.st, 3000.0);
    CUDA_CHECK(cudaStreamSynchronize(c.st));
  }
  auto t0 = std::chrono::steady_clock::now();
  ClockSampler clocks;
  clocks.start();
  std::vector<Shape> g = grid ? gemm_grid(quick) : std::vector<Shape>{};
  for (const auto& s : g) gemm_sample(c, s, false);
  for (const auto& s : shapes) gemm_sample(c, s, false);
  if (fp8_ok) {
    for (const auto& s : g) gemm_sample(c, s, true);
    for (const auto& s : shapes) if (s.m % 16 == 0 && s.n % 16 == 0 && s.k % 16 == 0) gemm_sample(c, s, true);
  }
  double t_gemm = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  clocks.stop();
  if (attn) {
    std::vector<AttnCfg> cfgs;
    for (long long s : quick ? std::vector<long long>{1024, 4096} : std::vector<long long>{1024, 2048, 4096, 8192, 16384})
      cfgs.push_back({1, 32, 8, s, 128});
    if (!quick) {
      cfgs.push_back({1, 16, 16, 4096, 128});
      cfgs.push_back({2, 8, 1, 8192, 128});
      cfgs.push_back({4, 32, 8, 2048, 128});
    }
    for (auto& a : cfgs) attention_materialized(c, a);
  }
  double t_attn = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (mem) memory_family(c, prop.multiProcessorCount);
  if (nccl) collectives(c, ngpu, quick);
  double t_all = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  write_output(out_path, {prop, ngpu, drv, rt, clock_khz, mem_clock_khz, cmdline, clocks.mhz, clocks.watts}, t_gemm,
               t_attn, t_all, c.out);
  CUDA_CHECK(cudaStreamDestroy(c.st));
  std::printf("probe: wrote %s (%d GEMM samples, %.1f s)\n", out_path.c_str(), c.gemm_count, t_all);
  return 0;
}
