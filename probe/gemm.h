#pragma once
// GEMM family: dense GEMMs through cuBLASLt (bf16, fp8 e4m3) or cublasGemmEx (torch.matmul's
// default path), each sample timed eagerly and, with --graph, under CUDA graph replay.
#include <cublasLt.h>
#include <cublas_v2.h>

#include <cstddef>
#include <string>
#include <vector>

#include "harness.h"

namespace mfusim::probe {

// Problem: C[m,n] = A[m,k] · B[k,n] as a framework's Linear does it: weights
// stored [n,k] ("TN" in column-major cuBLAS terms: D(n x m) = W^T... see below).
// Column-major call: D(M=n, N=m) = op(A)=W^T? We call it with the layout that
// cuBLASLt requires for fp8 on Hopper (A transposed, B not): Acol = W (k x n, lda=k,
// op T), Bcol = X (k x m, ldb=k, op N), D (n x m, ldd=n). Same as torch's
// x @ W.t(). Output bf16 for both input precisions, fp32 accumulation.
struct Lt {
  cublasLtHandle_t h{};
  void* ws = nullptr;
  static constexpr std::size_t ws_cap = 64ull << 20;   // allocated once
  std::size_t ws_bytes = ws_cap;                      // offered to the heuristic and the call
  // cublasGemmEx path (--serve request api "gemmex"): the call torch.matmul makes by default
  // (at::cuda::blas gemm_internal_cublas_bfloat16_helper: cublasGemmEx, CUBLAS_DEFAULT_MATH,
  // CUBLAS_GEMM_DEFAULT_TENSOR_OP, fp32 compute), with a cublasSetWorkspace of blas_ws_bytes
  // (torch's default on sm90: 4096 KiB x 8 = 32 MiB, CublasHandlePool.cpp parseChosenWorkspaceSize).
  cublasHandle_t blas{};
  void* blas_ws = nullptr;
  std::size_t blas_ws_bytes = 32ull << 20;
  Lt() {
    CUBLAS_CHECK(cublasLtCreate(&h));
    CUDA_CHECK(cudaMalloc(&ws, ws_cap));
  }
  void init_blas(cudaStream_t st) {
    if (blas) return;
    CUBLAS_CHECK(cublasCreate(&blas));
    CUDA_CHECK(cudaMalloc(&blas_ws, blas_ws_bytes));
    CUBLAS_CHECK(cublasSetStream(blas, st));
    CUBLAS_CHECK(cublasSetWorkspace(blas, blas_ws, blas_ws_bytes));
    CUBLAS_CHECK(cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH));
  }
  ~Lt() {
    if (blas) { cublasDestroy(blas); cudaFree(blas_ws); }
    cudaFree(ws);
    cublasLtDestroy(h);
  }
};

struct GemmPlan {
  cublasLtMatmulDesc_t op{};
  cublasLtMatrixLayout_t la{}, lb{}, lc{};
  cublasLtMatmulAlgo_t algo{};
  bool ok = false;
  ~GemmPlan() {
    if (op) cublasLtMatmulDescDestroy(op);
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (lc) cublasLtMatrixLayoutDestroy(lc);
  }
};

// Column-major: D(M x N) = op(A)(M x K) · B(K x N), A stored K x M (op T), batched.
bool make_plan(Lt& lt, GemmPlan& p, bool fp8, long long M, long long N, long long K, int batch = 1,
               long long sa = 0, long long sb = 0, long long sc = 0, bool a_trans = true,
               bool b_trans = false, int sm_target = 0);
void run_plan(Lt& lt, const GemmPlan& p, const void* A, const void* B, void* C, cudaStream_t st);

// The cuBLASLt algorithm a plan holds, as its config attributes (cublasLt.h
// cublasLtMatmulAlgoConfigAttributes_t): id, tile, stages, split-K, reduction, swizzle,
// custom option, cluster shape.
std::string algo_desc(const cublasLtMatmulAlgo_t& a);

struct Shape { std::string label; long long m, n, k; };

// One GEMM sample C[m,n] = A[m,k] B[k,n] (framework convention) in bf16 or fp8.
void gemm_sample(Ctx& c, const Shape& s, bool fp8);
// The shape grid of the GEMM fit (cubes and m x (n, k) pairs); fewer with --quick.
std::vector<Shape> gemm_grid(bool quick);

}  // namespace mfusim::probe
