// The probe's shared harness (harness.h): checks, TOML writer and output file, random data,
// event and CUDA-graph timers, kernel names of a captured call.
#include "harness.h"

#include <cublasLt.h>
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <vector>

namespace mfusim::probe {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "probe: error: %s\n", what.c_str());
  std::exit(1);
}

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (c == '\n') { o += "\\n"; continue; }
    o += c;
  }
  return o;
}
std::string num(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.6g", v);
  std::string s = b;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

void write_output(const std::string& out_path, const Provenance& pv, double t_gemm, double t_attn, double t_all,
                  const Out& out) {
  const cudaDeviceProp& prop = pv.prop;
  const int ngpu = pv.ngpu, drv = pv.drv, rt = pv.rt, clock_khz = pv.clock_khz, mem_clock_khz = pv.mem_clock_khz;
  const std::string& cmdline = pv.cmdline;
  std::time_t now = std::time(nullptr);
  char date[64];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  std::string smi = shell("nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,clocks.mem,power.limit,temperature.gpu "
                          "--format=csv,noheader 2>/dev/null");
  std::string drv_s = shell("nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1");
  std::ofstream f(out_path);
  if (!f) die("cannot write " + out_path);
  f << "# mfusim probe output (SPEC.md §6). Fit with: mfusim calibrate " << out_path << " --out FILE\n";
  f << "format = \"mfusim-probe-1\"\n\n[provenance]\n";
  f << "gpu = \"" << esc(prop.name) << "\"\n";
  f << "gpus = " << ngpu << "\n";
  f << "compute_capability = \"" << prop.major << "." << prop.minor << "\"\n";
  f << "sm_count = " << prop.multiProcessorCount << "\n";
  f << "l2_bytes = " << prop.l2CacheSize << "\n";
  f << "hbm_bytes = " << (long long)prop.totalGlobalMem << "\n";
  f << "sm_clock_max_mhz = " << clock_khz / 1000 << "\n";
  f << "mem_clock_mhz = " << mem_clock_khz / 1000 << "\n";
  f << "nvidia_smi_clocks = \"" << esc(smi) << "\"  # sm, max sm, mem, power limit, temp at end of run\n";
  if (!pv.gemm_sm_mhz.empty()) {
    auto stats = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return "[" + num(v.front()) + ", " + num(v[v.size() / 2]) + ", " + num(v.back()) + "]";
    };
    f << "sm_clock_gemm_mhz = " << stats(pv.gemm_sm_mhz) << "  # min, median, max while the GEMMs ran ("
      << pv.gemm_sm_mhz.size() << " nvidia-smi samples)\n";
    if (!pv.gemm_power_w.empty()) f << "power_gemm_w = " << stats(pv.gemm_power_w) << "  # min, median, max\n";
  }
  f << "driver = \"" << esc(drv_s) << "\"\n";
  f << "cuda_driver_api = " << drv << "\n";
  f << "cuda_runtime = " << rt << "\n";
  f << "cublaslt = " << cublasLtGetVersion() << "\n";
  f << "date = \"" << date << "\"\n";
  f << "command = \"" << esc(cmdline) << "\"\n";
  f << "seconds_gemm = " << num(t_gemm) << "\nseconds_attention = " << num(t_attn - t_gemm)
    << "\nseconds_total = " << num(t_all) << "\n";
  f << "timing = \"CUDA events around batches of back-to-back launches; 3 warm-up calls; median of repeats; "
       "random inputs in [-1,1); small shapes rotate buffer sets >= 4x L2";
  if (heater_ms() > 0) f << "; sustained: " << heater_ms() << " ms of an 8192^3 bf16 GEMM before each batch";
  f << "\"\n";
  f << "sustained_heater_ms = " << heater_ms() << "\n";
  f << "gemm_layout = \"C[m,n] = A[m,k] * W[n,k]^T (torch x @ W.t()), bf16 output, fp32 accumulate; cuBLASLt "
       "first heuristic, 64 MiB workspace\"\n";
  f << out.body.str();
  f.close();
}

std::string shell(const char* cmd) {
  std::string r;
  FILE* p = popen(cmd, "r");
  if (!p) return r;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) r += buf;
  pclose(p);
  while (!r.empty() && (r.back() == '\n' || r.back() == ' ')) r.pop_back();
  return r;
}

namespace {
__device__ inline float hash_uniform(std::uint64_t i, std::uint32_t seed) {
  std::uint64_t x = i * 0x9E3779B97F4A7C15ull + seed * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 31; x *= 0x94D049BB133111EBull; x ^= x >> 29;
  return float(x >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f;  // [-1, 1)
}
__global__ void fill_bf16(__nv_bfloat16* p, std::size_t n, std::uint32_t seed, float scale) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    p[i] = __float2bfloat16(hash_uniform(i, seed) * scale);
}
__global__ void fill_fp8(__nv_fp8_e4m3* p, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    p[i] = __nv_fp8_e4m3(hash_uniform(i, seed) * 2.0f);
}
}  // namespace

std::uint32_t g_seed = 12345;
void random_bf16(void* p, std::size_t n, float scale) {
  fill_bf16<<<1024, 256>>>(static_cast<__nv_bfloat16*>(p), n, g_seed++, scale);
  LAUNCH_CHECK();
}
void random_fp8(void* p, std::size_t n) {
  fill_fp8<<<1024, 256>>>(static_cast<__nv_fp8_e4m3*>(p), n, g_seed++);
  LAUNCH_CHECK();
}
void fill_bf16_on(void* p, std::size_t n, std::uint32_t seed, float scale, cudaStream_t st) {
  fill_bf16<<<1024, 256, 0, st>>>(static_cast<__nv_bfloat16*>(p), n, seed, scale);
  LAUNCH_CHECK();
}


namespace {
std::function<void()> g_heat_once;
double g_heat_ms = 0, g_heat_call_s = 0;
}  // namespace

void set_heater(std::function<void()> heat_once, double ms) {
  g_heat_once = std::move(heat_once);
  g_heat_ms = ms;
  g_heat_call_s = 0;
}

double heater_ms() { return g_heat_once ? g_heat_ms : 0.0; }

// Runs the heater for about `ms` milliseconds on `st` (asynchronously; its first call measures it).
void heat(cudaStream_t st, double ms) {
  if (!g_heat_once || ms <= 0) return;
  if (g_heat_call_s <= 0) {
    cudaEvent_t a, b;
    CUDA_CHECK(cudaEventCreate(&a));
    CUDA_CHECK(cudaEventCreate(&b));
    g_heat_once();
    CUDA_CHECK(cudaEventRecord(a, st));
    for (int i = 0; i < 4; ++i) g_heat_once();
    CUDA_CHECK(cudaEventRecord(b, st));
    CUDA_CHECK(cudaEventSynchronize(b));
    float t = 0;
    CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
    g_heat_call_s = std::max(t * 1e-3 / 4, 1e-6);
    CUDA_CHECK(cudaEventDestroy(a));
    CUDA_CHECK(cudaEventDestroy(b));
  }
  const int n = std::max(1, int(ms * 1e-3 / g_heat_call_s + 0.5));
  for (int i = 0; i < n; ++i) g_heat_once();
}

// Times fn(i) (i = launch index, used to rotate buffers): warm-up, choose a batch
// size so one batch runs >= target_s, then `repeats` batches; per-call median.
// With a heater (--sustained), each batch follows heater_ms() of heater work on the stream.
Timing time_it(const std::function<void(int)>& fn, cudaStream_t st, int repeats,
               double target_s, int max_inner) {
  cudaEvent_t a, b;
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  int idx = 0;
  for (int i = 0; i < 3; ++i) fn(idx++);
  CUDA_CHECK(cudaStreamSynchronize(st));
  CUDA_CHECK(cudaEventRecord(a, st));
  fn(idx++);
  CUDA_CHECK(cudaEventRecord(b, st));
  CUDA_CHECK(cudaEventSynchronize(b));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
  int inner = std::clamp(int(target_s / std::max(ms * 1e-3, 1e-7)), 1, max_inner);
  std::vector<double> v;
  for (int r = 0; r < repeats; ++r) {
    heat(st, heater_ms());
    CUDA_CHECK(cudaEventRecord(a, st));
    for (int i = 0; i < inner; ++i) fn(idx++);
    CUDA_CHECK(cudaEventRecord(b, st));
    CUDA_CHECK(cudaEventSynchronize(b));
    CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    v.push_back(ms * 1e-3 / inner);
  }
  CUDA_CHECK(cudaEventDestroy(a));
  CUDA_CHECK(cudaEventDestroy(b));
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back(), repeats, inner};
}

void make_batch(GraphBatch& g, const std::function<void(int)>& fn, cudaStream_t st, double target_s,
                int max_inner) {
  CUDA_CHECK(cudaEventCreate(&g.a));
  CUDA_CHECK(cudaEventCreate(&g.b));
  int idx = 0;
  for (int i = 0; i < 3; ++i) fn(idx++);
  CUDA_CHECK(cudaStreamSynchronize(st));
  // one call's GPU time, from a one-call graph
  cudaGraph_t g1; cudaGraphExec_t e1;
  CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  fn(0);
  CUDA_CHECK(cudaStreamEndCapture(st, &g1));
  CUDA_CHECK(cudaGraphInstantiate(&e1, g1, 0));
  CUDA_CHECK(cudaGraphLaunch(e1, st));
  CUDA_CHECK(cudaEventRecord(g.a, st));
  CUDA_CHECK(cudaGraphLaunch(e1, st));
  CUDA_CHECK(cudaEventRecord(g.b, st));
  CUDA_CHECK(cudaEventSynchronize(g.b));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, g.a, g.b));
  cudaGraphExecDestroy(e1); cudaGraphDestroy(g1);
  g.inner = std::clamp(int(target_s / std::max(ms * 1e-3, 1e-7)), 1, max_inner);
  CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < g.inner; ++i) fn(idx++);
  CUDA_CHECK(cudaStreamEndCapture(st, &g.graph));
  CUDA_CHECK(cudaGraphInstantiate(&g.exec, g.graph, 0));
  CUDA_CHECK(cudaGraphLaunch(g.exec, st));   // warm-up replay
}

double replay_seconds(GraphBatch& g, cudaStream_t st) {
  CUDA_CHECK(cudaEventRecord(g.a, st));
  CUDA_CHECK(cudaGraphLaunch(g.exec, st));
  CUDA_CHECK(cudaEventRecord(g.b, st));
  CUDA_CHECK(cudaEventSynchronize(g.b));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, g.a, g.b));
  return ms * 1e-3 / g.inner;
}

Timing time_graph(const std::function<void(int)>& fn, cudaStream_t st, int repeats,
                  double target_s, int max_inner) {
  GraphBatch g;
  make_batch(g, fn, st, target_s, max_inner);
  std::vector<double> v;
  for (int r = 0; r < repeats; ++r) v.push_back(replay_seconds(g, st));
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back(), repeats, g.inner};
}

std::string kernel_names(const std::function<void()>& fn, cudaStream_t st) {
  static PFN_cuGraphKernelNodeGetParams_v12000 get_params = nullptr;
  static PFN_cuFuncGetName_v12030 func_name = nullptr;
  static PFN_cuKernelGetName_v12030 kern_name = nullptr;
  static bool init = false;
  if (!init) {
    init = true;
    cudaDriverEntryPointQueryResult q{};
    cudaGetDriverEntryPointByVersion("cuGraphKernelNodeGetParams", reinterpret_cast<void**>(&get_params), 12000,
                                     cudaEnableDefault, &q);
    cudaGetDriverEntryPointByVersion("cuFuncGetName", reinterpret_cast<void**>(&func_name), 12030,
                                     cudaEnableDefault, &q);
    cudaGetDriverEntryPointByVersion("cuKernelGetName", reinterpret_cast<void**>(&kern_name), 12030,
                                     cudaEnableDefault, &q);
    cudaGetLastError();
  }
  fn();   // warm-up outside the capture: handle set-up and module loading happen here
  CUDA_CHECK(cudaStreamSynchronize(st));
  cudaGraph_t g;
  CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  fn();
  CUDA_CHECK(cudaStreamEndCapture(st, &g));
  std::size_t n = 0;
  CUDA_CHECK(cudaGraphGetNodes(g, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  if (n) CUDA_CHECK(cudaGraphGetNodes(g, nodes.data(), &n));
  std::string out;
  for (auto node : nodes) {
    cudaGraphNodeType t{};
    CUDA_CHECK(cudaGraphNodeGetType(node, &t));
    std::string nm = "?";
    if (t != cudaGraphNodeTypeKernel) nm = "<node type " + std::to_string(int(t)) + ">";
    else if (get_params) {
      CUDA_KERNEL_NODE_PARAMS_v2 kp{};
      if (get_params(reinterpret_cast<CUgraphNode>(node), &kp) == CUDA_SUCCESS) {
        const char* s = nullptr;
        if (kp.func && func_name) func_name(&s, kp.func);
        else if (kp.kern && kern_name) kern_name(&s, kp.kern);
        if (s) nm = s;
      }
    }
    out += (out.empty() ? "" : " + ") + nm;
  }
  CUDA_CHECK(cudaGraphDestroy(g));
  return out;
}

void ClockSampler::start() {
  stop_ = false;
  th_ = std::thread([this] {
    while (!stop_) {
      const std::string line =
          shell("nvidia-smi -i 0 --query-gpu=clocks.sm,power.draw --format=csv,noheader,nounits 2>/dev/null");
      double c = 0, w = 0;
      if (std::sscanf(line.c_str(), "%lf, %lf", &c, &w) >= 1 && c > 0) {
        mhz.push_back(c);
        if (w > 0) watts.push_back(w);
      }
      for (int i = 0; i < 4 && !stop_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
}

void ClockSampler::stop() {
  stop_ = true;
  if (th_.joinable()) th_.join();
}

}  // namespace mfusim::probe
