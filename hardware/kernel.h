#pragma once
// The cost model's input vocabulary: one GPU kernel (or `count` identical
// ones), as produced by models/ for a layer's F, B, W and recompute.
#include <cstdint>

namespace mfusim::hardware {

enum class KernelKind { gemm, attention_fwd, attention_bwd, memory };

struct Kernel {
  KernelKind kind = KernelKind::memory;
  const char* name = "";        // "qkv", "attn_out", "mlp_up", "rmsnorm", ...
  // gemm: C[m,n] = A[m,k] B[k,n]
  std::int64_t m = 0, n = 0, k = 0;
  // attention (per rank): batch, query heads, kv heads, query/key lengths, head dim
  std::int64_t batch = 0, heads = 0, kv_heads = 0, seq_q = 0, seq_kv = 0, head_dim = 0;
  bool causal = true;
  bool flash = true;            // false: materialised s x s scores (softmax in HBM)
  bool compiled = false;        // issued by one torch.compile'd call (host cost host_compiled_overhead)
  // totals used by the roofline (every kind fills them)
  double flops = 0;             // floating-point operations of one kernel
  double bytes = 0;             // minimum HBM bytes read + written by one kernel
  int count = 1;                // identical kernels launched (e.g. experts, unfused pieces)
};

}  // namespace mfusim::hardware
