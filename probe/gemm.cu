// GEMM family (gemm.h): the cuBLASLt plan and call, the algorithm's description, and one
// sample per shape.
#include "gemm.h"

#include <algorithm>
#include <cstdio>

namespace mfusim::probe {

bool make_plan(Lt& lt, GemmPlan& p, bool fp8, long long M, long long N, long long K, int batch,
               long long sa, long long sb, long long sc, bool a_trans,
               bool b_trans, int sm_target) {
  cudaDataType_t tin = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t ta = a_trans ? CUBLAS_OP_T : CUBLAS_OP_N, tb = b_trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  // The SMs the kernel may use (--power: GEMMs confined to fewer SMs draw less power); 0 = all.
  if (sm_target > 0)
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &sm_target, sizeof sm_target));
  // stored shapes
  long long ar = a_trans ? K : M, ac = a_trans ? M : K;
  long long br = b_trans ? N : K, bc = b_trans ? K : N;
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.la, tin, ar, ac, ar));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.lb, tin, br, bc, br));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.lc, CUDA_R_16BF, M, N, M));
  if (batch > 1) {
    auto setb = [&](cublasLtMatrixLayout_t l, long long stride) {
      CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch));
      CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
    };
    setb(p.la, sa);
    setb(p.lb, sb);
    setb(p.lc, sc);
  }
  cublasLtMatmulPreference_t pref;
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &lt.ws_bytes, sizeof lt.ws_bytes));
  cublasLtMatmulHeuristicResult_t res[1];
  int found = 0;
  cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(lt.h, p.op, p.la, p.lb, p.lc, p.lc, pref, 1, res, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (s != CUBLAS_STATUS_SUCCESS || found == 0) return false;
  p.algo = res[0].algo;
  p.ok = true;
  return true;
}

void run_plan(Lt& lt, const GemmPlan& p, const void* A, const void* B, void* C, cudaStream_t st) {
  const float alpha = 1.0f, beta = 0.0f;
  CUBLAS_CHECK(cublasLtMatmul(lt.h, p.op, &alpha, A, p.la, B, p.lb, &beta, C, p.lc, C, p.lc, &p.algo,
                              lt.ws, lt.ws_bytes, st));
}

std::string algo_desc(const cublasLtMatmulAlgo_t& a) {
  int32_t id = 0, splitk = 0;
  uint32_t tile = 0, stages = 0, red = 0, swz = 0, custom = 0;
  uint16_t cluster = 0;
  std::size_t w = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof red, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swz, sizeof swz, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &custom, sizeof custom, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof cluster, &w);
  char b[160];
  std::snprintf(b, sizeof b, "id=%d tile=%u stages=%u splitk=%d red=%u swizzle=%u custom=%u cluster=%u", id, tile,
                stages, splitk, red, swz, custom, unsigned(cluster));
  return b;
}

void gemm_sample(Ctx& c, const Shape& s, bool fp8) {
  const std::size_t eb = fp8 ? 1 : 2;
  const std::size_t a_b = std::size_t(s.m) * s.k * eb, b_b = std::size_t(s.k) * s.n * eb,
                    c_b = std::size_t(s.m) * s.n * 2;
  auto al = [](std::size_t x) { return (x + 255) / 256 * 256; };
  const std::size_t per_set = al(a_b) + al(b_b) + al(c_b);
  const int sets = int(std::clamp<std::size_t>((4 * c.l2 + per_set - 1) / per_set, 1, 4096));
  DevBuf pool(per_set * sets);
  if (fp8) random_fp8(pool.p, per_set * sets);
  else random_bf16(pool.p, per_set * sets / 2);
  std::vector<char*> A, B, C;
  for (int i = 0; i < sets; ++i) {
    char* base = static_cast<char*>(pool.p) + std::size_t(i) * per_set;
    A.push_back(base);
    B.push_back(base + al(a_b));
    C.push_back(base + al(a_b) + al(b_b));
  }
  GemmPlan p;
  // column-major D(n x m) = W^T-op(A: stored k x n) · X(k x m)
  if (c.gemmex && fp8) {   // cublasGemmEx has no fp8 path (torch's fp8 GEMM, _scaled_mm, is cuBLASLt)
    std::fprintf(stderr, "probe: gemmex has no fp8; %s skipped\n", s.label.c_str());
    return;
  }
  if (c.gemmex) c.lt->init_blas(c.st);
  if (!c.gemmex && !make_plan(*c.lt, p, fp8, s.n, s.m, s.k)) {
    std::fprintf(stderr, "probe: no cuBLASLt algorithm for %s %lldx%lldx%lld (%s); skipped\n",
                 s.label.c_str(), s.m, s.n, s.k, fp8 ? "fp8" : "bf16");
    c.out.table("skipped");
    c.out.kv("family", "gemm");
    c.out.kv("label", s.label);
    c.out.kv("dtype", fp8 ? "fp8_e4m3" : "bf16");
    c.out.kv("m", s.m); c.out.kv("n", s.n); c.out.kv("k", s.k);
    c.out.kv("why", "cublasLtMatmulAlgoGetHeuristic found no algorithm");
    return;
  }
  Lt& lt = *c.lt;
  auto call = [&](int i) {
    int j = i % sets;
    if (c.gemmex) {   // same operands and layout as run_plan: D(n x m) = W(k x n)^T X(k x m)
      const float alpha = 1.0f, beta = 0.0f;
      CUBLAS_CHECK(cublasGemmEx(lt.blas, CUBLAS_OP_T, CUBLAS_OP_N, int(s.n), int(s.m), int(s.k), &alpha, B[j],
                                CUDA_R_16BF, int(s.k), A[j], CUDA_R_16BF, int(s.k), &beta, C[j], CUDA_R_16BF,
                                int(s.n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP));
    } else {
      run_plan(lt, p, B[j], A[j], C[j], c.st);
    }
  };
  c.last_kernels = kernel_names([&] { call(0); }, c.st);
  c.last_algo = c.gemmex ? "cublasGemmEx" : algo_desc(p.algo);
  if (c.name_only) {
    CUDA_CHECK(cudaStreamSynchronize(c.st));
    c.last_eager_s = c.last_graph_s = 0;
    ++c.gemm_count;
    return;
  }
  Timing t{0, 0, 0, 0, 0};
  if (c.eager) t = time_it(call, c.st, c.quick ? 5 : 9);
  Timing tg{0, 0, 0, 0, 0};
  if (c.graph) tg = time_graph(call, c.st, c.quick ? 5 : 9);
  c.last_eager_s = t.median_s;
  c.last_graph_s = tg.median_s;
  if (!c.eager) {   // --serve --graph-only: the graph time is the sample
    t = tg;
  }
  double flops = 2.0 * s.m * s.n * s.k;
  c.out.table("gemm");
  c.out.kv("label", s.label);
  c.out.kv("dtype", fp8 ? "fp8_e4m3" : "bf16");
  c.out.kv("m", s.m); c.out.kv("n", s.n); c.out.kv("k", s.k);
  c.out.kvf("seconds", t.median_s);
  c.out.kvf("min_seconds", t.min_s);
  c.out.kvf("max_seconds", t.max_s);
  c.out.kvf("tflops", flops / t.median_s * 1e-12);
  c.out.kv("repeats", t.repeats);
  c.out.kv("calls_per_repeat", t.inner);
  c.out.kv("buffer_sets", sets);
  c.out.kv("api", c.gemmex ? "cublasGemmEx" : "cublasLtMatmul");
  c.out.kv("workspace_bytes", (long long)(c.gemmex ? lt.blas_ws_bytes : lt.ws_bytes));
  c.out.kv("algo", c.last_algo);
  c.out.kv("kernels", c.last_kernels);
  if (c.graph) {
    c.out.kvf("graph_seconds", tg.median_s);
    c.out.kv("graph_calls_per_replay", tg.inner);
  }
  std::printf("gemm %-5s %-28s m=%6lld n=%6lld k=%6lld  %9.4f ms  %7.1f TFLOP/s", fp8 ? "fp8" : "bf16",
              s.label.c_str(), s.m, s.n, s.k, t.median_s * 1e3, flops / t.median_s * 1e-12);
  if (c.graph) std::printf("  graph %7.1f TFLOP/s", flops / tg.median_s * 1e-12);
  std::printf("\n");
  ++c.gemm_count;
}

std::vector<Shape> gemm_grid(bool quick) {
  std::vector<Shape> g;
  std::vector<long long> cubes = quick ? std::vector<long long>{512, 2048, 8192}
                                       : std::vector<long long>{256, 512, 1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384};
  for (long long x : cubes) g.push_back({"grid", x, x, x});
  std::vector<long long> ms = quick ? std::vector<long long>{1024, 8192} : std::vector<long long>{256, 1024, 4096, 16384};
  std::vector<std::pair<long long, long long>> nk = {{4096, 4096}, {12288, 4096}, {4096, 12288},
                                                     {28672, 8192}, {8192, 28672}, {1024, 8192},
                                                     {8192, 1024}};
  if (quick) nk.resize(3);
  for (long long m : ms)
    for (auto [n, k] : nk) g.push_back({"grid", m, n, k});
  return g;
}

}  // namespace mfusim::probe
