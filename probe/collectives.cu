// NCCL collectives (families.h). Built with NCCL only when nccl.h is found (MFUSIM_HAVE_NCCL).
#ifdef MFUSIM_HAVE_NCCL
#include <nccl.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "families.h"

#ifdef MFUSIM_HAVE_NCCL
#define NCCL_CHECK(x)                                                                            \
  do {                                                                                           \
    ncclResult_t r_ = (x);                                                                       \
    if (r_ != ncclSuccess) die(std::string(#x) + " -> " + ncclGetErrorString(r_));               \
  } while (0)
#endif

namespace mfusim::probe {

void collectives(Ctx& c, int ngpu, bool quick) {
#ifdef MFUSIM_HAVE_NCCL
  std::vector<int> devs(ngpu);
  for (int i = 0; i < ngpu; ++i) devs[i] = i;
  std::vector<ncclComm_t> comms(ngpu);
  NCCL_CHECK(ncclCommInitAll(comms.data(), ngpu, devs.data()));
  int ver = 0;
  NCCL_CHECK(ncclGetVersion(&ver));
  std::vector<cudaStream_t> sts(ngpu);
  std::size_t maxb = ngpu == 1 ? (64ull << 20) : (quick ? (256ull << 20) : (2048ull << 20));
  std::vector<void*> sb(ngpu), rb(ngpu);
  for (int i = 0; i < ngpu; ++i) {
    CUDA_CHECK(cudaSetDevice(i));
    CUDA_CHECK(cudaStreamCreateWithFlags(&sts[i], cudaStreamNonBlocking));
    CUDA_CHECK(cudaMalloc(&sb[i], maxb));
    CUDA_CHECK(cudaMalloc(&rb[i], maxb));
    random_bf16(sb[i], maxb / 2);
    CUDA_CHECK(cudaDeviceSynchronize());
  }
  const char* ops[] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv"};
  std::vector<std::size_t> sizes;
  for (std::size_t b = ngpu == 1 ? (1ull << 20) : (8ull << 10); b <= maxb; b *= (ngpu == 1 ? 64 : 4)) sizes.push_back(b);
  for (const char* op : ops) {
    for (std::size_t bytes : sizes) {
      std::size_t count = bytes / 2;  // bf16 elements of the full buffer
      if (count % ngpu) continue;
      std::size_t chunk = count / ngpu;
      auto launch = [&]() {
        NCCL_CHECK(ncclGroupStart());
        for (int i = 0; i < ngpu; ++i) {
          std::string o = op;
          if (o == "all_reduce") NCCL_CHECK(ncclAllReduce(sb[i], rb[i], count, ncclBfloat16, ncclSum, comms[i], sts[i]));
          else if (o == "all_gather") NCCL_CHECK(ncclAllGather(sb[i], rb[i], chunk, ncclBfloat16, comms[i], sts[i]));
          else if (o == "reduce_scatter") NCCL_CHECK(ncclReduceScatter(sb[i], rb[i], chunk, ncclBfloat16, ncclSum, comms[i], sts[i]));
          else if (o == "all_to_all") {
            for (int p = 0; p < ngpu; ++p) {
              NCCL_CHECK(ncclSend((char*)sb[i] + p * chunk * 2, chunk, ncclBfloat16, p, comms[i], sts[i]));
              NCCL_CHECK(ncclRecv((char*)rb[i] + p * chunk * 2, chunk, ncclBfloat16, p, comms[i], sts[i]));
            }
          } else {  // ring neighbour send/recv of the whole buffer
            NCCL_CHECK(ncclSend(sb[i], count, ncclBfloat16, (i + 1) % ngpu, comms[i], sts[i]));
            NCCL_CHECK(ncclRecv(rb[i], count, ncclBfloat16, (i + ngpu - 1) % ngpu, comms[i], sts[i]));
          }
        }
        NCCL_CHECK(ncclGroupEnd());
      };
      for (int w = 0; w < 3; ++w) launch();
      for (int i = 0; i < ngpu; ++i) { CUDA_CHECK(cudaSetDevice(i)); CUDA_CHECK(cudaStreamSynchronize(sts[i])); }
      std::vector<double> v;
      int iters = bytes >= (256ull << 20) ? 5 : 20;
      for (int r = 0; r < (quick ? 3 : 7); ++r) {
        auto t0 = std::chrono::steady_clock::now();
        for (int it = 0; it < iters; ++it) launch();
        for (int i = 0; i < ngpu; ++i) { CUDA_CHECK(cudaSetDevice(i)); CUDA_CHECK(cudaStreamSynchronize(sts[i])); }
        v.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters);
      }
      std::sort(v.begin(), v.end());
      double t = v[v.size() / 2];
      // nccl-tests bus bandwidth factors
      std::string o = op;
      double n = ngpu, factor = o == "all_reduce" ? 2 * (n - 1) / n : (o == "send_recv" ? 1.0 : (n - 1) / n);
      double algbw = double(bytes) / t;
      c.out.table("collective");
      c.out.kv("op", op);
      c.out.kv("gpus", ngpu);
      c.out.kv("bytes", (long long)bytes);
      c.out.kvf("seconds", t);
      c.out.kvf("algbw_gbs", algbw * 1e-9);
      c.out.kvf("busbw_gbs", algbw * factor * 1e-9);
      c.out.kv("timer", "host clock around launches + stream sync, per call");
      std::printf("nccl %-15s gpus=%d %10zu B  %9.3f us  busbw %7.1f GB/s\n", op, ngpu, bytes, t * 1e6, algbw * factor * 1e-9);
    }
  }
  for (int i = 0; i < ngpu; ++i) {
    CUDA_CHECK(cudaSetDevice(i));
    CUDA_CHECK(cudaFree(sb[i]));
    CUDA_CHECK(cudaFree(rb[i]));
    CUDA_CHECK(cudaStreamDestroy(sts[i]));
    ncclCommDestroy(comms[i]);
  }
  CUDA_CHECK(cudaSetDevice(0));
  c.out.body << "\n[nccl]\nversion = " << ver << "\n";
  if (ngpu == 1) c.out.body << "note = \"one GPU: collectives ran as a smoke test of the code path; not a bandwidth measurement\"\n";
#else
  (void)quick;
  (void)ngpu;
  c.out.body << "\n[nccl]\nnote = \"probe built without NCCL (nccl.h not found); collectives not measured\"\n";
#endif
}

}  // namespace mfusim::probe
