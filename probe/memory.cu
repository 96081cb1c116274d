// Memory-bound kernels and launch overhead (families.h).
#include <cuda_bf16.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "families.h"

namespace mfusim::probe {

namespace {
__global__ void copy_kernel(const uint4* __restrict__ x, uint4* __restrict__ y, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    y[i] = x[i];
}
// SwiGLU activation, unfused-framework style: out = silu(gate) * up (bf16, 8 per thread)
__global__ void swiglu_kernel(const uint4* __restrict__ gate, const uint4* __restrict__ up, uint4* __restrict__ out,
                              std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    uint4 a = gate[i], b = up[i], r;
    const __nv_bfloat162* ga = reinterpret_cast<const __nv_bfloat162*>(&a);
    const __nv_bfloat162* ub = reinterpret_cast<const __nv_bfloat162*>(&b);
    __nv_bfloat162* rr = reinterpret_cast<__nv_bfloat162*>(&r);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      float2 gf = __bfloat1622float2(ga[j]), uf = __bfloat1622float2(ub[j]);
      gf.x = gf.x / (1.f + __expf(-gf.x)) * uf.x;
      gf.y = gf.y / (1.f + __expf(-gf.y)) * uf.y;
      rr[j] = __float22bfloat162_rn(gf);
    }
    out[i] = r;
  }
}
// RMSNorm over rows of `hidden` bf16 (hidden % 8 == 0, hidden/8 <= 1024*4); one block per row.
__global__ void rmsnorm_kernel(const uint4* __restrict__ x, const uint4* __restrict__ w, uint4* __restrict__ y,
                               int vec_per_row, float eps) {
  const uint4* xr = x + std::size_t(blockIdx.x) * vec_per_row;
  uint4* yr = y + std::size_t(blockIdx.x) * vec_per_row;
  float ss = 0;
  for (int i = threadIdx.x; i < vec_per_row; i += blockDim.x) {
    uint4 a = xr[i];
    const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&a);
#pragma unroll
    for (int j = 0; j < 4; ++j) { float2 f = __bfloat1622float2(h[j]); ss += f.x * f.x + f.y * f.y; }
  }
  __shared__ float red[32];
  for (int o = 16; o; o >>= 1) ss += __shfl_xor_sync(0xffffffff, ss, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = ss;
  __syncthreads();
  if (threadIdx.x < 32) {
    float v = threadIdx.x < blockDim.x / 32 ? red[threadIdx.x] : 0.f;
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
    if (threadIdx.x == 0) red[0] = v;
  }
  __syncthreads();
  float inv = rsqrtf(red[0] / (vec_per_row * 8) + eps);
  for (int i = threadIdx.x; i < vec_per_row; i += blockDim.x) {
    uint4 a = xr[i], ww = w[i], r;
    const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&a);
    const __nv_bfloat162* wh = reinterpret_cast<const __nv_bfloat162*>(&ww);
    __nv_bfloat162* rr = reinterpret_cast<__nv_bfloat162*>(&r);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      float2 f = __bfloat1622float2(h[j]), g = __bfloat1622float2(wh[j]);
      rr[j] = __float22bfloat162_rn(make_float2(f.x * inv * g.x, f.y * inv * g.y));
    }
    yr[i] = r;
  }
}
__global__ void empty_kernel() {}
}  // namespace

void memory_family(Ctx& c, int sms) {
  std::vector<std::size_t> sizes;  // bytes of one operand
  for (std::size_t b = 1ull << 20; b <= (c.quick ? 256ull << 20 : 2048ull << 20); b *= 4) sizes.push_back(b);
  for (std::size_t bytes : sizes) {
    // rotate over enough copies to defeat L2 for the small sizes
    const int sets = int(std::clamp<std::size_t>(4 * c.l2 / bytes, 1, 1024));
    DevBuf pool(3 * bytes * sets);
    random_bf16(pool.p, 3 * bytes * sets / 2);
    struct View { void* p; };
    std::vector<View> X, Y, Z;
    for (int i = 0; i < sets; ++i) {
      char* base = static_cast<char*>(pool.p) + 3 * bytes * std::size_t(i);
      X.push_back({base}); Y.push_back({base + bytes}); Z.push_back({base + 2 * bytes});
    }
    std::size_t nvec = bytes / 16;
    unsigned grid = unsigned(std::min<std::size_t>((nvec + 255) / 256, std::size_t(sms) * 16));
    auto emit = [&](const char* kind, const Timing& t, double moved) {
      c.out.table("memory");
      c.out.kv("kind", kind);
      c.out.kv("bytes", (long long)moved);
      c.out.kvf("seconds", t.median_s);
      c.out.kvf("bandwidth_gbs", moved / t.median_s * 1e-9);
      c.out.kv("buffer_sets", sets);
      std::printf("mem %-12s %10.1f MiB moved  %9.4f ms  %7.0f GB/s\n", kind, moved / 1048576.0, t.median_s * 1e3,
                  moved / t.median_s * 1e-9);
    };
    emit("copy_kernel", time_it([&](int i) {
           int j = i % sets;
           copy_kernel<<<grid, 256, 0, c.st>>>((const uint4*)X[j].p, (uint4*)Y[j].p, nvec);
           LAUNCH_CHECK();
         }, c.st), 2.0 * bytes);
    emit("memcpy_d2d", time_it([&](int i) {
           int j = i % sets;
           CUDA_CHECK(cudaMemcpyAsync(Y[j].p, X[j].p, bytes, cudaMemcpyDeviceToDevice, c.st));
         }, c.st), 2.0 * bytes);
    emit("swiglu", time_it([&](int i) {
           int j = i % sets;
           swiglu_kernel<<<grid, 256, 0, c.st>>>((const uint4*)X[j].p, (const uint4*)Y[j].p, (uint4*)Z[j].p, nvec);
           LAUNCH_CHECK();
         }, c.st), 3.0 * bytes);
    for (int hidden : {4096, 8192}) {
      int vpr = hidden / 8;
      std::size_t rows = bytes / (std::size_t(hidden) * 2);
      if (rows == 0) continue;
      DevBuf W(std::size_t(hidden) * 2);
      random_bf16(W.p, hidden);
      int threads = std::min(1024, std::max(128, vpr / 2));
      Timing t = time_it([&](int i) {
        int j = i % sets;
        rmsnorm_kernel<<<unsigned(rows), threads, 0, c.st>>>((const uint4*)X[j].p, (const uint4*)W.p, (uint4*)Z[j].p, vpr, 1e-5f);
        LAUNCH_CHECK();
      }, c.st);
      emit(hidden == 4096 ? "rmsnorm_h4096" : "rmsnorm_h8192", t, 2.0 * rows * hidden * 2);
    }
  }
  // launch overhead: back-to-back empty kernels, then the same under CUDA graph replay
  const int n = 2000;
  cudaEvent_t a, b;
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  std::vector<double> plain, graph;
  for (int i = 0; i < 100; ++i) { empty_kernel<<<1, 32, 0, c.st>>>(); LAUNCH_CHECK(); }
  for (int r = 0; r < 9; ++r) {
    CUDA_CHECK(cudaEventRecord(a, c.st));
    for (int i = 0; i < n; ++i) { empty_kernel<<<1, 32, 0, c.st>>>(); }
    LAUNCH_CHECK();
    CUDA_CHECK(cudaEventRecord(b, c.st));
    CUDA_CHECK(cudaEventSynchronize(b));
    float ms;
    CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    plain.push_back(ms * 1e-3 / n);
  }
  cudaGraph_t gph;
  cudaGraphExec_t exec;
  CUDA_CHECK(cudaStreamBeginCapture(c.st, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < n; ++i) empty_kernel<<<1, 32, 0, c.st>>>();
  CUDA_CHECK(cudaStreamEndCapture(c.st, &gph));
  CUDA_CHECK(cudaGraphInstantiate(&exec, gph, 0));
  CUDA_CHECK(cudaGraphLaunch(exec, c.st));
  CUDA_CHECK(cudaStreamSynchronize(c.st));
  for (int r = 0; r < 9; ++r) {
    CUDA_CHECK(cudaEventRecord(a, c.st));
    CUDA_CHECK(cudaGraphLaunch(exec, c.st));
    CUDA_CHECK(cudaEventRecord(b, c.st));
    CUDA_CHECK(cudaEventSynchronize(b));
    float ms;
    CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    graph.push_back(ms * 1e-3 / n);
  }
  // host-side cost of one launch call (what the CPU thread pays)
  auto h0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) empty_kernel<<<1, 32, 0, c.st>>>();
  auto h1 = std::chrono::steady_clock::now();
  CUDA_CHECK(cudaStreamSynchronize(c.st));
  double host = std::chrono::duration<double>(h1 - h0).count() / n;
  CUDA_CHECK(cudaGraphExecDestroy(exec));
  CUDA_CHECK(cudaGraphDestroy(gph));
  CUDA_CHECK(cudaEventDestroy(a));
  CUDA_CHECK(cudaEventDestroy(b));
  std::sort(plain.begin(), plain.end());
  std::sort(graph.begin(), graph.end());
  auto emit_l = [&](const char* kind, double v) {
    c.out.table("launch");
    c.out.kv("kind", kind);
    c.out.kv("kernels", n);
    c.out.kvf("seconds_per_kernel", v);
    std::printf("launch %-22s %.3f us/kernel\n", kind, v * 1e6);
  };
  emit_l("stream_back_to_back", plain[plain.size() / 2]);
  emit_l("graph_replay", graph[graph.size() / 2]);
  emit_l("host_launch_call", host);
}

}  // namespace mfusim::probe
