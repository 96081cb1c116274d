// Side kernels for the interference measurement (run 14), compiled at run time by CuPy (NVRTC).
// Each block takes one SM: it asks for SMEM_BYTES of dynamic shared memory (set by the caller), more
// than half of an SM's 228 KB, so no two side blocks and no cuBLAS GEMM CTA (which needs most of an
// SM's shared memory) share its SM -- as an NCCL channel's block beside a GEMM.
// Every kernel runs until *flag (device memory; the host releases it with a 4-byte host-to-device
// cudaMemcpyAsync on its own stream, done by a copy engine, no SM needed) is non-zero, or max_ns of
// %globaltimer have passed (a guard against a hang). (Run 14a polled a flag in mapped host memory
// instead: side_hold's poll every 2 us over PCIe from k >= 16 blocks slowed the GEMMs beside it by
// up to 15x, an artefact of the polling, not of SM occupancy.) Block b writes started[b] = 1 (host
// memory) when it runs, and out[3b..3b+2] = {bytes moved, start ns, end ns} at exit.
typedef unsigned long long ull;

__device__ __forceinline__ ull gtimer() {
  ull t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ unsigned should_stop(volatile unsigned* flag, ull t0, ull max_ns) {
  __shared__ unsigned s_stop;
  if (threadIdx.x == 0) s_stop = (*flag != 0u) || (gtimer() - t0 > max_ns);
  __syncthreads();
  unsigned stop = s_stop;
  __syncthreads();
  return stop;
}

__device__ __forceinline__ void mark_started(ull started_, ull* t0) {
  *t0 = gtimer();
  if (threadIdx.x == 0) {
    ((volatile unsigned*)started_)[blockIdx.x] = 1u;
    __threadfence_system();
  }
}

// Streams HBM: block b copies 1 MiB chunks b, b+k, b+2k, ... of src to dst (wrapping), 8 x 16 B
// loads in flight per thread (512 threads: 64 KiB per block), as an NCCL channel streams its buffer.
#define CHUNK_V 65536  // uint4 per chunk (1 MiB)
extern "C" __global__ void __launch_bounds__(512) side_copy(ull src_, ull dst_, ull nchunks, ull flag_,
                                                            ull started_, ull out_, ull max_ns) {
  const uint4* src = (const uint4*)src_;
  uint4* dst = (uint4*)dst_;
  volatile unsigned* flag = (volatile unsigned*)flag_;
  ull t0;
  mark_started(started_, &t0);
  ull c = blockIdx.x % nchunks, moved = 0;
  for (;;) {
    if (should_stop(flag, t0, max_ns)) break;
    const uint4* s = src + c * CHUNK_V;
    uint4* d = dst + c * CHUNK_V;
#pragma unroll 1
    for (int base = threadIdx.x; base < CHUNK_V; base += 512 * 8) {
      uint4 r[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) r[u] = s[base + u * 512];
#pragma unroll
      for (int u = 0; u < 8; ++u) d[base + u * 512] = r[u];
    }
    moved += 2ull * CHUNK_V * 16ull;  // bytes read + written
    c = (c + gridDim.x) % nchunks;
  }
  if (threadIdx.x == 0) {
    ull* out = (ull*)out_;
    out[3 * blockIdx.x] = moved;
    out[3 * blockIdx.x + 1] = t0;
    out[3 * blockIdx.x + 2] = gtimer();
  }
}

// Holds every thread slot of the SMs it runs on (launched with 1024 threads, two blocks per SM and no
// shared memory): nothing else can start there. Used to ask whether a copy needs SMs.
extern "C" __global__ void __launch_bounds__(1024) side_hold_full(ull src_, ull dst_, ull nchunks, ull flag_,
                                                                  ull started_, ull out_, ull max_ns) {
  volatile unsigned* flag = (volatile unsigned*)flag_;
  ull t0;
  mark_started(started_, &t0);
  for (;;) {
    if (should_stop(flag, t0, max_ns)) break;
    __nanosleep(2000);
  }
  if (threadIdx.x == 0) {
    ull* out = (ull*)out_;
    out[3 * blockIdx.x] = 0;
    out[3 * blockIdx.x + 1] = t0;
    out[3 * blockIdx.x + 2] = gtimer();
  }
}

// Holds the SM and does nothing: __nanosleep between flag checks (occupancy alone, no memory traffic,
// next to no power).
extern "C" __global__ void __launch_bounds__(512) side_hold(ull src_, ull dst_, ull nchunks, ull flag_,
                                                            ull started_, ull out_, ull max_ns) {
  volatile unsigned* flag = (volatile unsigned*)flag_;
  ull t0;
  mark_started(started_, &t0);
  for (;;) {
    if (should_stop(flag, t0, max_ns)) break;
    __nanosleep(2000);
  }
  if (threadIdx.x == 0) {
    ull* out = (ull*)out_;
    out[3 * blockIdx.x] = 0;
    out[3 * blockIdx.x + 1] = t0;
    out[3 * blockIdx.x + 2] = gtimer();
  }
}

// Holds the SM and keeps its fp32 pipes busy (register FMA chains, no memory traffic): occupancy plus
// the power a busy SM draws.
extern "C" __global__ void __launch_bounds__(512) side_fma(ull src_, ull dst_, ull nchunks, ull flag_,
                                                           ull started_, ull out_, ull max_ns) {
  volatile unsigned* flag = (volatile unsigned*)flag_;
  ull t0;
  mark_started(started_, &t0);
  float a0 = threadIdx.x * 1e-3f, a1 = a0 + 1.f, a2 = a0 + 2.f, a3 = a0 + 3.f;
  const float m = 0.999f, p = 1e-3f;
  ull iters = 0;
  for (;;) {
    if (should_stop(flag, t0, max_ns)) break;
#pragma unroll 16
    for (int i = 0; i < 2048; ++i) {
      a0 = fmaf(a0, m, p); a1 = fmaf(a1, m, p); a2 = fmaf(a2, m, p); a3 = fmaf(a3, m, p);
    }
    ++iters;
  }
  if (threadIdx.x == 0) {
    ull* out = (ull*)out_;
    out[3 * blockIdx.x] = 0;
    out[3 * blockIdx.x + 1] = t0;
    out[3 * blockIdx.x + 2] = gtimer();
  }
  if (a0 + a1 + a2 + a3 == 12345.678f) ((ull*)out_)[3 * blockIdx.x] = iters;  // keeps the chains alive
}
