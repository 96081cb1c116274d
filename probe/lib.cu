// The probe's GEMM path as a shared library (CMake target mfusim_probe_lib, probe/build.sh --lib):
// libmfusim_probe.so, for the same-process honesty check (validation/gemm_inproc.py).
#include <algorithm>
#include <cstdio>
#include <vector>

#include "gemm.h"
#include "harness.h"

using namespace mfusim::probe;

// ---------------------------------------------------------------- in-process entry point
namespace {
Lt& lib_lt() {   // one handle and 64 MiB workspace per process, as in the probe
  static Lt* lt = new Lt();
  return *lt;
}
}  // namespace

// Built as a shared library (probe/build.sh --lib, CMake target mfusim_probe_lib) for the
// same-process honesty check (validation/gemm_inproc.py): torch allocates and fills the
// buffers, and this times the probe's own GEMM path on them -- the cuBLASLt plan of
// make_plan (first heuristic, 64 MiB workspace) run by run_plan, timed by time_graph (CUDA
// graph of >= 2 ms of calls, median of 9 replays) -- on the caller's stream, in the caller's
// process and CUDA context. A[i]: x[m, k], B[i]: w[n, k], C[i]: y[m, n] (y = x w^T), sets
// rotated as gemm_sample rotates its own. Returns the median seconds per call and writes the
// algorithm's config (algo_desc) to algo (algo_len bytes); -1 if cuBLASLt has no algorithm.
// CUDA / cuBLAS errors end the process with a message, as in the probe.
extern "C" double mfusim_probe_gemm_time(int fp8, long long m, long long n, long long k, void* const* A,
                                         void* const* B, void* const* C, int sets, void* stream, char* algo,
                                         int algo_len) {
  Lt* lt = &lib_lt();
  cudaStream_t st = static_cast<cudaStream_t>(stream);
  GemmPlan p;
  if (!make_plan(*lt, p, fp8 != 0, n, m, k)) return -1;
  if (algo && algo_len > 0) std::snprintf(algo, std::size_t(algo_len), "%s", algo_desc(p.algo).c_str());
  auto call = [&](int i) {
    const int j = i % std::max(sets, 1);
    run_plan(*lt, p, B[j], A[j], C[j], st);
  };
  return time_graph(call, st).median_s;
}

// The same batch for an A/B comparison replay by replay (validation/gemm_inproc.py --ab): the
// plan and a GraphBatch of its calls on the caller's buffers, made once; mfusim_probe_ab_replay
// times one replay with the probe's events (seconds per call), so the caller can alternate it
// with its own replays under the same clocks. nullptr if cuBLASLt has no algorithm.
struct AbBatch {
  GemmPlan plan;
  GraphBatch batch;
  std::vector<void*> a, b, c;
};
extern "C" void* mfusim_probe_ab_make(int fp8, long long m, long long n, long long k, void* const* A, void* const* B,
                                      void* const* C, int sets, void* stream) {
  Lt* lt = &lib_lt();
  cudaStream_t st = static_cast<cudaStream_t>(stream);
  auto* ab = new AbBatch;
  if (!make_plan(*lt, ab->plan, fp8 != 0, n, m, k)) { delete ab; return nullptr; }
  sets = std::max(sets, 1);
  ab->a.assign(A, A + sets); ab->b.assign(B, B + sets); ab->c.assign(C, C + sets);
  make_batch(ab->batch, [ab, lt, st, sets](int i) {
    const int j = i % sets;
    run_plan(*lt, ab->plan, ab->b[j], ab->a[j], ab->c[j], st);
  }, st);
  return ab;
}
extern "C" double mfusim_probe_ab_replay(void* ab, void* stream) {
  return replay_seconds(static_cast<AbBatch*>(ab)->batch, static_cast<cudaStream_t>(stream));
}
extern "C" int mfusim_probe_ab_inner(void* ab) { return static_cast<AbBatch*>(ab)->batch.inner; }
extern "C" void mfusim_probe_ab_free(void* ab) { delete static_cast<AbBatch*>(ab); }

// One call of the same plan on the caller's buffers (no timing): for API traces
// (CUBLASLT_LOG_LEVEL) of the probe's call next to torch's. 0 on success, -1 without an algorithm.
extern "C" int mfusim_probe_gemm_once(int fp8, long long m, long long n, long long k, void* A, void* B, void* C,
                                      void* stream) {
  Lt* lt = &lib_lt();
  GemmPlan p;
  if (!make_plan(*lt, p, fp8 != 0, n, m, k)) return -1;
  run_plan(*lt, p, B, A, C, static_cast<cudaStream_t>(stream));
  CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
  return 0;
}

// The probe's random fill (hash_uniform, uniform in [-1, 1)) of n bf16 values, on `stream`.
extern "C" void mfusim_probe_fill_bf16(void* p, unsigned long long n, unsigned seed, void* stream) {
  fill_bf16_on(p, n, seed, 1.0f, static_cast<cudaStream_t>(stream));
}
