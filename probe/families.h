#pragma once
// The measurement families besides GEMM (gemm.h), each over the shared harness:
// attention.cu, memory.cu (memory-bound kernels and launch overhead), collectives.cu (NCCL).
#include "harness.h"

namespace mfusim::probe {

// ---- attention.cu: materialised-softmax attention (cuBLASLt batched GEMMs + the probe's
// softmax kernels), forward and backward, causal.
struct AttnCfg { long long batch, heads, kv_heads, seq, head_dim; };
void attention_materialized(Ctx& c, const AttnCfg& a);

// ---- memory.cu: copy, SwiGLU and RMSNorm kernels over sizes from 1 MiB, then kernel launch
// overhead (back to back, CUDA graph replay, host cost of one launch call).
void memory_family(Ctx& c, int sms);

// ---- collectives.cu: NCCL all-reduce, all-gather, reduce-scatter, all-to-all and send/recv
// over the node's GPUs (a smoke test on one GPU; a note when built without NCCL).
void collectives(Ctx& c, int ngpu, bool quick);

}  // namespace mfusim::probe
