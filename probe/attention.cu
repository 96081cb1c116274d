// Attention family (families.h): materialised-softmax attention.
#include <cuda_bf16.h>

#include <cmath>
#include <cstdio>

#include "families.h"
#include "gemm.h"

namespace mfusim::probe {

namespace {
// Scores for one kv group are one GEMM: Q of the group's g heads is stored
// contiguously ((g*s) x d), so S = Q K^T is (g*s) x s; batch = b * kv_heads.
__global__ void softmax_fwd(const __nv_bfloat16* __restrict__ S, __nv_bfloat16* __restrict__ P, long long rows,
                            int s, float scale, bool causal) {
  long long row = blockIdx.x;
  if (row >= rows) return;
  int q = int(row % s);  // query position within its sequence
  const __nv_bfloat16* x = S + row * s;
  __nv_bfloat16* y = P + row * s;
  int lim = causal ? q + 1 : s;
  __shared__ float red[32];
  float mx = -INFINITY;
  for (int j = threadIdx.x; j < lim; j += blockDim.x) mx = fmaxf(mx, __bfloat162float(x[j]) * scale);
  for (int o = 16; o; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, o));
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = mx;
  __syncthreads();
  if (threadIdx.x < 32) {
    float v = threadIdx.x < blockDim.x / 32 ? red[threadIdx.x] : -INFINITY;
    for (int o = 16; o; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, o));
    if (threadIdx.x == 0) red[0] = v;
  }
  __syncthreads();
  mx = red[0];
  __syncthreads();
  float sum = 0;
  for (int j = threadIdx.x; j < lim; j += blockDim.x) sum += __expf(__bfloat162float(x[j]) * scale - mx);
  for (int o = 16; o; o >>= 1) sum += __shfl_xor_sync(0xffffffff, sum, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = sum;
  __syncthreads();
  if (threadIdx.x < 32) {
    float v = threadIdx.x < blockDim.x / 32 ? red[threadIdx.x] : 0.f;
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
    if (threadIdx.x == 0) red[0] = v;
  }
  __syncthreads();
  float inv = 1.f / red[0];
  for (int j = threadIdx.x; j < s; j += blockDim.x)
    y[j] = __float2bfloat16(j < lim ? __expf(__bfloat162float(x[j]) * scale - mx) * inv : 0.f);
}

// dS = P * (dP - sum_j P dP) * scale, in place over dP.
__global__ void softmax_bwd(const __nv_bfloat16* __restrict__ P, __nv_bfloat16* __restrict__ dP, long long rows,
                            int s, float scale) {
  long long row = blockIdx.x;
  if (row >= rows) return;
  const __nv_bfloat16* p = P + row * s;
  __nv_bfloat16* g = dP + row * s;
  __shared__ float red[32];
  float acc = 0;
  for (int j = threadIdx.x; j < s; j += blockDim.x) acc += __bfloat162float(p[j]) * __bfloat162float(g[j]);
  for (int o = 16; o; o >>= 1) acc += __shfl_xor_sync(0xffffffff, acc, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x < 32) {
    float v = threadIdx.x < blockDim.x / 32 ? red[threadIdx.x] : 0.f;
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
    if (threadIdx.x == 0) red[0] = v;
  }
  __syncthreads();
  float dot = red[0];
  for (int j = threadIdx.x; j < s; j += blockDim.x) {
    float pv = __bfloat162float(p[j]);
    g[j] = __float2bfloat16(pv * (__bfloat162float(g[j]) - dot) * scale);
  }
}
}  // namespace

void attention_materialized(Ctx& c, const AttnCfg& a) {
  const long long b = a.batch, H = a.heads, Hk = a.kv_heads, s = a.seq, d = a.head_dim, g = H / Hk;
  const long long nb = b * Hk;  // one GEMM per (sequence, kv head)
  const std::size_t ss = std::size_t(b) * H * s * s;  // score elements
  const std::size_t qsz = std::size_t(b) * H * s * d, kvsz = std::size_t(b) * Hk * s * d;
  std::size_t free_b = 0, total_b = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  std::size_t need = 2 * ss * 2 + (3 * qsz + 4 * kvsz) * 2 + (1ull << 30);
  if (need > free_b) {
    c.out.table("skipped");
    c.out.kv("family", "attention_materialized");
    c.out.kv("batch", b); c.out.kv("heads", H); c.out.kv("kv_heads", Hk); c.out.kv("seq", s); c.out.kv("head_dim", d);
    c.out.kv("why", "score matrices do not fit in free device memory");
    return;
  }
  DevBuf Q(qsz * 2), K(kvsz * 2), V(kvsz * 2), O(qsz * 2), dO(qsz * 2), dQ(qsz * 2), dK(kvsz * 2), dV(kvsz * 2);
  DevBuf S(ss * 2), P(ss * 2);
  random_bf16(Q.p, qsz); random_bf16(K.p, kvsz); random_bf16(V.p, kvsz); random_bf16(dO.p, qsz);
  const float scale = 1.0f / std::sqrt(float(d));
  const long long M = g * s;  // query rows of one kv group
  // Column-major formulation on row-major storage: a row-major X[r,c] is X^T col-major (c x r).
  // S[M,s] = Q[M,d] K[s,d]^T : col-major S^T(s x M) = K(col d x s)^T-op · Q^T(d x M)
  GemmPlan qk, pv, dpv, dvp, dqk, dkq;
  bool ok = make_plan(*c.lt, qk, false, s, M, d, int(nb), s * d, M * d, M * s, true, false);
  // O[M,d] = P[M,s] V[s,d]: col-major O^T(d x M) = V^T(d x s) · P^T(s x M)  (V stored col-major d x s: op N)
  ok = ok && make_plan(*c.lt, pv, false, d, M, s, int(nb), s * d, M * s, M * d, false, false);
  // dP[M,s] = dO[M,d] V[s,d]^T: col-major dP^T(s x M) = V(d x s)^T-op · dO^T(d x M)
  ok = ok && make_plan(*c.lt, dpv, false, s, M, d, int(nb), s * d, M * d, M * s, true, false);
  // dV[s,d] = P[M,s]^T dO[M,d]: col-major dV^T(d x s) = dO^T(d x M) · P(M x s)... P^T col-major is (s x M): op T
  ok = ok && make_plan(*c.lt, dvp, false, d, s, M, int(nb), M * d, M * s, s * d, false, true);
  // dQ[M,d] = dS[M,s] K[s,d]: col-major dQ^T(d x M) = K^T(d x s) · dS^T(s x M)
  ok = ok && make_plan(*c.lt, dqk, false, d, M, s, int(nb), s * d, M * s, M * d, false, false);
  // dK[s,d] = dS[M,s]^T Q[M,d]: col-major dK^T(d x s) = Q^T(d x M) · dS(M x s) (op T of dS^T)
  ok = ok && make_plan(*c.lt, dkq, false, d, s, M, int(nb), M * d, M * s, s * d, false, true);
  if (!ok) die("no cuBLASLt algorithm for materialised attention GEMMs");
  const long long rows = b * H * s;
  const int threads = s >= 4096 ? 1024 : 256;
  auto fwd = [&](int) {
    run_plan(*c.lt, qk, K.p, Q.p, S.p, c.st);
    softmax_fwd<<<unsigned(rows), threads, 0, c.st>>>((const __nv_bfloat16*)S.p, (__nv_bfloat16*)P.p, rows, int(s), scale, true);
    LAUNCH_CHECK();
    run_plan(*c.lt, pv, V.p, P.p, O.p, c.st);
  };
  auto bwd = [&](int) {
    run_plan(*c.lt, dpv, V.p, dO.p, S.p, c.st);  // dP into S
    run_plan(*c.lt, dvp, dO.p, P.p, dV.p, c.st);
    softmax_bwd<<<unsigned(rows), threads, 0, c.st>>>((const __nv_bfloat16*)P.p, (__nv_bfloat16*)S.p, rows, int(s), scale);
    LAUNCH_CHECK();
    run_plan(*c.lt, dqk, K.p, S.p, dQ.p, c.st);
    run_plan(*c.lt, dkq, Q.p, S.p, dK.p, c.st);
  };
  auto softmax_only = [&](int) {
    softmax_fwd<<<unsigned(rows), threads, 0, c.st>>>((const __nv_bfloat16*)S.p, (__nv_bfloat16*)P.p, rows, int(s), scale, true);
    LAUNCH_CHECK();
  };
  fwd(0);
  CUDA_CHECK(cudaStreamSynchronize(c.st));
  int reps = c.quick ? 3 : 5;
  Timing tf = time_it(fwd, c.st, reps, 1e-3, 64);
  Timing tb = time_it(bwd, c.st, reps, 1e-3, 64);
  Timing tsm = time_it(softmax_only, c.st, reps, 1e-3, 64);
  const double score_flops = 2.0 * 2.0 * b * H * s * s * d;  // QK^T and PV, no causal skipping
  const double sbytes = double(ss) * 2;
  auto emit = [&](const char* pass, const Timing& t, double flops, double bytes) {
    c.out.table("attention");
    c.out.kv("impl", "materialized");
    c.out.kv("source", "probe (cuBLASLt strided-batched GEMMs + probe softmax kernels)");
    c.out.kv("pass", pass);
    c.out.kv("batch", b); c.out.kv("heads", H); c.out.kv("kv_heads", Hk); c.out.kv("seq", s); c.out.kv("head_dim", d);
    c.out.kv("causal", true);
    c.out.kvf("seconds", t.median_s);
    c.out.kvf("min_seconds", t.min_s);
    c.out.kvf("flops", flops);
    c.out.kvf("score_bytes", bytes);
    std::printf("attn materialized %-8s b=%lld H=%lld Hkv=%lld s=%6lld  %9.3f ms\n", pass, b, H, Hk, s, t.median_s * 1e3);
  };
  emit("fwd", tf, score_flops, 2 * sbytes);           // softmax reads S, writes P
  emit("bwd", tb, 2 * score_flops, 3 * sbytes + 2 * sbytes);  // softmax bwd reads P,dP writes dS; GEMMs read
  emit("softmax_fwd", tsm, 0, 2 * sbytes);
}

}  // namespace mfusim::probe
