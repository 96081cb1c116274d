#pragma once
// The probe's shared harness: error checks, the TOML writer (Out) and the output file with its
// provenance, random inputs, device buffers, and the timers every measurement family uses
// (CUDA events around batches of launches; CUDA graph capture and replay; the kernel names of
// a captured call).
//
// Timing: CUDA events around batches of back-to-back launches, warm-up first,
// median over repeats; inputs random (never zeros); small shapes rotate over
// enough buffer sets to exceed twice the L2.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include <atomic>

namespace mfusim::probe {

// ---------------------------------------------------------------- checks
[[noreturn]] void die(const std::string& what);
#define CUDA_CHECK(x)                                                                            \
  do {                                                                                           \
    cudaError_t e_ = (x);                                                                        \
    if (e_ != cudaSuccess) ::mfusim::probe::die(std::string(#x) + " -> " + cudaGetErrorString(e_) + \
                                                " at " + __FILE__ + ":" + std::to_string(__LINE__)); \
  } while (0)
#define CUBLAS_CHECK(x)                                                                          \
  do {                                                                                           \
    cublasStatus_t s_ = (x);                                                                     \
    if (s_ != CUBLAS_STATUS_SUCCESS) ::mfusim::probe::die(std::string(#x) + " -> cublas status " + \
                                                          std::to_string(int(s_)) + " at " + __FILE__ + \
                                                          ":" + std::to_string(__LINE__));        \
  } while (0)
#define LAUNCH_CHECK() CUDA_CHECK(cudaGetLastError())

// ---------------------------------------------------------------- output
std::string esc(const std::string& s);
std::string num(double v);
struct Out {
  std::ostringstream body;
  void table(const char* name) { body << "\n[[" << name << "]]\n"; }
  void kv(const char* k, const std::string& v) { body << k << " = \"" << esc(v) << "\"\n"; }
  void kv(const char* k, const char* v) { kv(k, std::string(v)); }
  void kv(const char* k, long long v) { body << k << " = " << v << "\n"; }
  void kv(const char* k, int v) { body << k << " = " << v << "\n"; }
  void kv(const char* k, bool v) { body << k << " = " << (v ? "true" : "false") << "\n"; }
  void kvf(const char* k, double v) { body << k << " = " << num(v) << "\n"; }
};

// What the output file's [provenance] says about the machine and the run (queried by main
// before the measurements).
struct Provenance {
  cudaDeviceProp prop;
  int ngpu = 0, drv = 0, rt = 0, clock_khz = 0, mem_clock_khz = 0;
  std::string cmdline;
  // SM clock (MHz) and board power (W) sampled while the GEMMs ran (ClockSampler): the clock
  // state the GEMM fit is measured at (a power-capped H200 runs 1450-1750 MHz, not its 1980 max).
  std::vector<double> gemm_sm_mhz, gemm_power_w;
};
// Samples GPU 0's SM clock and board power through nvidia-smi every ~200 ms on a background
// thread between start() and stop(); no samples where nvidia-smi is missing.
class ClockSampler {
 public:
  void start();
  void stop();
  std::vector<double> mhz, watts;
 private:
  std::thread th_;
  std::atomic<bool> stop_{false};
};
// Writes the probe's TOML file: format, [provenance] (with nvidia-smi's clocks and driver at
// the end of the run, the date, the phases' seconds, the timing and GEMM conventions), then
// every sample in `out`.
void write_output(const std::string& out_path, const Provenance& pv, double t_gemm, double t_attn, double t_all,
                  const Out& out);
// The output of a shell command, trailing newlines and spaces removed ("" if it cannot run).
std::string shell(const char* cmd);

// ---------------------------------------------------------------- random data
// Uniform in [-1, 1) (x scale), a new seed per call; on the default stream.
void random_bf16(void* p, std::size_t n, float scale = 1.0f);
void random_fp8(void* p, std::size_t n);
// The same fill of n bf16 values with an explicit seed, on `st` (the library's entry point).
void fill_bf16_on(void* p, std::size_t n, std::uint32_t seed, float scale, cudaStream_t st);

struct DevBuf {
  void* p = nullptr;
  std::size_t bytes = 0;
  explicit DevBuf(std::size_t b) : bytes(b) { CUDA_CHECK(cudaMalloc(&p, std::max<std::size_t>(b, 256))); }
  ~DevBuf() { if (p) cudaFree(p); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
};

// ---------------------------------------------------------------- timing
struct Timing { double median_s, min_s, max_s; int repeats, inner; };

// Times fn(i) (i = launch index, used to rotate buffers): warm-up, choose a batch
// size so one batch runs >= target_s, then `repeats` batches; per-call median.
Timing time_it(const std::function<void(int)>& fn, cudaStream_t st, int repeats = 9,
               double target_s = 2e-3, int max_inner = 4096);

// --sustained MS: the power state training steps run in. A training step's GEMMs run back to back
// with their neighbours, the board at its power limit and the SM clock capped (run 15: 1455 MHz at
// 692 W on the H200), while isolated batches after an idle moment start at the boost clock. With
// a heater set, time_it runs `ms` milliseconds of the heater (a large bf16 GEMM on its own buffers)
// on the same stream before each timed batch, so every batch starts in the sustained state.
void set_heater(std::function<void()> heat_once, double ms);
double heater_ms();   // 0 when no heater is set
void heat(cudaStream_t st, double ms);

// A batch of `inner` calls captured once into a CUDA graph (warm-up first; `inner` chosen so
// one replay runs >= target_s), replayed by replay_seconds: GPU time without the host's
// per-launch cost (what a framework under CUDA graphs, or torch timed the same way, sees).
struct GraphBatch {
  cudaGraph_t graph{};
  cudaGraphExec_t exec{};
  cudaEvent_t a{}, b{};
  int inner = 1;
  GraphBatch() = default;
  GraphBatch(const GraphBatch&) = delete;
  GraphBatch& operator=(const GraphBatch&) = delete;
  ~GraphBatch() {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    if (a) cudaEventDestroy(a);
    if (b) cudaEventDestroy(b);
  }
};

void make_batch(GraphBatch& g, const std::function<void(int)>& fn, cudaStream_t st, double target_s = 2e-3,
                int max_inner = 4096);

// One replay between two events: seconds per call.
double replay_seconds(GraphBatch& g, cudaStream_t st);

// Same as time_it under CUDA graph replay: make_batch, then `repeats` replays; per-call median.
Timing time_graph(const std::function<void(int)>& fn, cudaStream_t st, int repeats = 9,
                  double target_s = 2e-3, int max_inner = 4096);

// Names of the kernels one call launches: the call is captured into a CUDA graph and
// its kernel nodes are read back through the driver API (cuGraphKernelNodeGetParams,
// cuFuncGetName / cuKernelGetName, fetched with cudaGetDriverEntryPointByVersion, so no
// -lcuda). This names the algorithm cuBLAS(Lt) really ran, for either API, and is the
// same string torch's profiler shows for its own call. "?" where the driver cannot tell.
std::string kernel_names(const std::function<void()>& fn, cudaStream_t st);

// ---------------------------------------------------------------- the measurement context
struct Lt;   // gemm.h
struct Ctx {
  Out out;
  cudaStream_t st{};
  Lt* lt = nullptr;
  std::size_t l2 = 0;
  bool quick = false;
  int gemm_count = 0;
  bool graph = false;        // --graph: also time every GEMM under CUDA graph replay
  bool eager = true;         // --serve --graph-only: skip the eager timing (reported as 0)
  bool gemmex = false;       // --serve request api "gemmex": cublasGemmEx instead of cuBLASLt
  bool name_only = false;    // --serve request mode "name": kernel names only, no timing
  double last_eager_s = 0, last_graph_s = 0;   // of the last gemm_sample (for --serve)
  std::string last_kernels, last_algo;         // of the last gemm_sample (for --serve)
};

}  // namespace mfusim::probe
