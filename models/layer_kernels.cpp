// Kernels of one layer, the embedding and the head for one micro-batch on one rank, built
// from kernel_builders.h. Conventions: models/conventions.h; formulas and their sources:
// docs/accounting.md.
#include "models/layer_kernels.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>

#include "models/conventions.h"
#include "models/kernel_builders.h"

namespace mfusim::models {

using namespace detail;
using hardware::Kernel;

namespace {
// Megatron's gradient-accumulation fusion (RankShape::wgrad_accumulate_bytes): every weight-gradient
// GEMM of a Transformer Engine linear accumulates into main_grad; the MoE router is a torch linear
// (its gradient reaches main_grad through the DDP hook, not the GEMM's epilogue).
void tag_wgrad_accumulation(LayerKernels& lk, const RankShape& r) {
  for (Kernel& k : lk.w)
    if (k.kind == hardware::KernelKind::gemm && std::string_view(k.name) != "router_wgrad")
      k.accumulate_bytes = r.wgrad_accumulate_bytes;
}

// A linear layer in the rank's fp8 recipe: Transformer Engine's per-tensor cast-transpose
// (linear with fp8), or DeepSeek-V3's blockwise quantisation (linear_blockwise) with the
// operands' sources `io`; bf16 without fp8.
void fp8_linear(const RankShape& r, const char* name, const char* dname, const char* wname, double tokens, double in,
                double out, int e, LayerKernels& lk, int count, const Fp8Operands& io) {
  if (r.fp8 && r.fp8_blockwise()) linear_blockwise(name, dname, wname, tokens, in, out, e, lk, count, io);
  else if (r.fp8) {
    // Transformer Engine's sequence-parallel gathers and LayerNormLinear fusion (Fp8Cast): Megatron's TE layers
    // only (torchtitan's fp8 is torchao's).
    const bool te = !r.torchtitan;
    const double g = te && r.sequence_parallel && r.tp > 1 ? r.tp : 1;
    Fp8Cast x{r.fp8_recipe, r.fp8_any_layout}, dy{r.fp8_recipe, r.fp8_any_layout};
    if (io.x_sp_gathered) x.gather = g;
    if (io.dy_sp_gathered) dy.gather = g;
    // the norm kernel just before (a fused norm: one kernel) quantises in its pass
    if (r.te_per_tensor_fp8() && io.x_from_norm && !lk.f.empty() &&
        (std::string_view(lk.f.back().name) == "rmsnorm" || std::string_view(lk.f.back().name) == "layernorm")) {
      x.norm_fused = true;
      // delayed scaling: the norm writes its output in fp8 (1 byte) instead of bf16
      if (r.fp8_recipe == config::Fp8Recipe::tensorwise) lk.f.back().bytes -= (e - 1.0) * tokens / x.gather * in;
    }
    linear(name, dname, wname, tokens, in, out, e, lk, count, &x, &dy);
  } else {
    linear(name, dname, wname, tokens, in, out, e, lk, count);
  }
}

// The operands of a linear whose input is kept for its weight gradient: the forward's fp8 copy
// under moe.fp8_activation_cache (DeepSeek-V3 §3.3.3), else the bf16 input.
Fp8Operands kept_input(const RankShape& r, int e) {
  Fp8Operands io;
  io.x_saved_bytes = r.fp8_activation_cache ? kFp8TileBytes : e;
  return io;
}
// Megatron's TE column-parallel LayerNormLinear (TELayerNormColumnParallelLinear: the dense QKV and MLP up
// projections): x is its norm's output, all-gathered under sequence parallelism.
Fp8Operands layernorm_linear(Fp8Operands io) {
  io.x_from_norm = true;
  io.x_sp_gathered = true;
  return io;
}
// A row-parallel linear (the attention output and MLP down projections): its output gradient is
// all-gathered under sequence parallelism before the dgrad.
Fp8Operands row_parallel(Fp8Operands io) {
  io.dy_sp_gathered = true;
  return io;
}
// An input recomputed in the backward (moe.recompute_norm_up_proj) or dequantised there: bf16.
Fp8Operands bf16_input(int e) {
  Fp8Operands io;
  io.x_saved_bytes = e;
  return io;
}

// moe.fp8_activation_cache (DeepSeek-V3 §3.3.3, "Low-Precision Storage"): the SwiGLU input (the
// gate and up GEMM's output, `rows` x 2 `width`) is kept in fp8 1x128 tiles and the SwiGLU output
// recomputed in the backward, as models/memory.cpp keeps it. Forward: the quantisation of the cache
// (profile-data train.json: per_token_cast_to_fp8 of the expert GEMM's output after it); backward:
// its dequantisation (cast_back_impl) and the SwiGLU backward also writing the recomputed output
// (swiglu_forward_backward_with_weight), which the down projection's weight gradient reads. Call
// after activation_kernels, with the index of its first forward kernel.
void swiglu_fp8_cache(const ModelSpec& m, const RankShape& r, double rows, double width, int e, LayerKernels& lk,
                      std::size_t act_f) {
  if (!r.fp8_activation_cache || m.activation != Activation::swiglu) return;
  const double x = rows * width;
  lk.f.insert(lk.f.begin() + static_cast<std::ptrdiff_t>(act_f), fp8_quantise("fp8_cache_swiglu_in", rows, 2 * width, e));
  lk.b.back().bytes += e * x;   // the SwiGLU backward writes the recomputed output too
  // pushed after the SwiGLU backward in forward order: runs before it
  lk.b.push_back(memk("fp8_cache_swiglu_in_dequant", kFp8TileBytes * 2 * x, e * 2 * x, 2 * x));
}

// Blockwise recipe: the SwiGLU writes its output in fp8 1x128 tiles, the down projection's
// input (profile-data train.json: swiglu_forward_with_weight_and_per_token_cast_to_fp8), so
// that projection quantises nothing in the forward.
bool fused_swiglu_quant(const ModelSpec& m, const RankShape& r, double rows, double width, int e,
                        std::vector<Kernel>& f) {
  if (!(r.fp8 && r.fp8_blockwise()) || m.activation != Activation::swiglu) return false;
  f.back().bytes -= (e - kFp8TileBytes) * rows * width;
  return true;
}

// The activation between an MLP's two linears (`rows` x `width` out) with what the fp8 recipe adds
// around it (fused_swiglu_quant, swiglu_fp8_cache); true when the second linear's input arrives
// quantised.
bool mlp_activation(const ModelSpec& m, const RankShape& r, double rows, double width, int e, bool fused,
                    LayerKernels& lk) {
  const std::size_t act = lk.f.size();
  activation_kernels(m, rows, width, e, fused, lk.f, lk.b);
  const bool quantised = fused_swiglu_quant(m, r, rows, width, e, lk.f);
  swiglu_fp8_cache(m, r, rows, width, e, lk, act);
  return quantised;
}

// An input that arrives in fp8 1x128 tiles (the copy quantised before DeepEP's dispatch) and is kept so.
void arrives_quantised(Fp8Operands& io) {
  io.x_quantised = true;
  io.x_saved_bytes = kFp8TileBytes;
}
}  // namespace

LayerKernels layer_kernels(const ModelSpec& m, int layer, const RankShape& r) {
  LayerKernels lk;
  const int e = r.bytes_per_element, tp = r.tp;
  const bool fused = r.fused_kernels;
  const double h = static_cast<double>(m.hidden);
  const double T = static_cast<double>(r.micro_batch) * static_cast<double>(r.seq_len) / r.cp;   // GEMM tokens
  const double Tn = r.sequence_parallel ? T / tp : T;   // tokens of norms and residual adds
  const double heads = static_cast<double>(m.heads) / tp;
  const double kv = m.mla ? heads : kv_heads_per_rank(m.kv_heads, tp);
  const double dqk = qk_head_dim(m), dv = v_head_dim(m);

  const bool f32 = r.fp32_autocast;   // fp32 residual stream (fp32_norm_kernels)
  // torchtitan's block run eagerly (eager_recipe.cpp). Under torch.compile (fused_kernels: torchtitan
  // compiles each TransformerBlock) Inductor fuses every pointwise op and reduction between two
  // extern kernels (mm, SDPA) into Triton kernels: RMSNorm with its x.float() / type_as casts is one
  // kernel (the fused norm below), RoPE's casts and complex multiply one per tensor (the fused rope),
  // the sums of the linears' input gradients go into the norm backward's loads. What it cannot
  // fuse away is repeat_kv: SDPA is an extern kernel that reads dense K and V buffers, so the
  // expanded view is realised into one (a copy of the repeated size, and its reduction in
  // backward) compiled or not. SDPA's transposes are no copies in either mode: q / k / v
  // .transpose(1, 2) are views, the flash and cuDNN backends read [b, s, h, d] by strides and
  // write their output in that layout, so output.transpose(1, 2).contiguous() is a no-op (run 23's
  // trace: no copy between SDPA and wo).
  const bool tt_eager = r.torchtitan && !fused;
  // Autograd sums the gradient of a tensor that several modules read (input_grad_sum) unless
  // torch.compile fuses the sum into the norm backward's loads (torchtitan compiled, above).
  const bool autograd_sums = !(r.torchtitan && fused);
  auto block_norm = [&](std::vector<Kernel>& f, std::vector<Kernel>& b) {
    const char* tag = has_layernorm(m) ? "layernorm" : "rmsnorm";
    const char* tag_bwd = has_layernorm(m) ? "layernorm_bwd" : "rmsnorm_bwd";
    if (tt_eager) torchtitan_rmsnorm_kernels(Tn, h, f, b);
    else if (f32) fp32_norm_kernels(m, Tn, h, fused, true, tag, tag_bwd, f, b);
    else norm_kernels(m, Tn, h, e, fused, tag, tag_bwd, f, b);
  };
  auto block_residual = [&](std::vector<Kernel>& f, std::vector<Kernel>& b) {
    if (f32 && !has_dropout(m)) fp32_residual_kernels(Tn, h, f, b);
    else residual_kernels(m, Tn, h, e, fused, f, b);
  };

  // The norm outputs that feed the block's first linears: recomputed in the backward under
  // moe.recompute_norm_up_proj (bf16), else kept (in fp8 under moe.fp8_activation_cache).
  const Fp8Operands norm_in = r.recompute_norm_up_proj ? bf16_input(e) : kept_input(r, e);

  // --- attention block ---
  block_norm(lk.f, lk.b);
  if (m.mla) {
    const auto& l = *m.mla;
    const double rope = static_cast<double>(l.qk_rope_head_dim);
    // The down projections are duplicated over tp (Megatron-Core's MLA: TELinear with parallel_mode
    // "duplicated", every rank the whole weight) and read the rank's own tokens: under sequence
    // parallelism the shard (q_compressed: [s / TP, b, q_lora_rank], multi_latent_attention.py), so
    // they, their norms and the sum below run over Tn tokens; the up projections (column-parallel)
    // gather their inputs and run over T.
    // The norm's output feeds two linears (the query's down or whole projection, and kv_down):
    // their input gradients are summed before the norm's backward (profile-data train.json: one
    // bf16 add over [4096, 7168] after the two down projections' dgrad GEMMs, before ln_bwd).
    if (autograd_sums) lk.b.push_back(input_grad_sum("mla_norm_dx_sum", Tn, h, e, 2));
    if (l.q_lora_rank > 0) {
      const double ql = static_cast<double>(l.q_lora_rank);
      fp8_linear(r, "q_down", "q_down_dgrad", "q_down_wgrad", Tn, h, ql, e, lk, 1, norm_in);
      norm_kernels(m, Tn, ql, e, fused, "q_norm", "q_norm_bwd", lk.f, lk.b);
      fp8_linear(r, "q_up", "q_up_dgrad", "q_up_wgrad", T, ql, heads * dqk, e, lk, 1, norm_in);
    } else {
      fp8_linear(r, "q_proj", "q_proj_dgrad", "q_proj_wgrad", T, h, heads * dqk, e, lk, 1, norm_in);
    }
    const double kvl = static_cast<double>(l.kv_lora_rank);
    fp8_linear(r, "kv_down", "kv_down_dgrad", "kv_down_wgrad", Tn, h, kvl + rope, e, lk, 1, norm_in);
    norm_kernels(m, Tn, kvl, e, fused, "kv_norm", "kv_norm_bwd", lk.f, lk.b);
    fp8_linear(r, "kv_up", "kv_up_dgrad", "kv_up_wgrad", T, kvl, heads * (l.qk_nope_head_dim + l.v_head_dim), e, lk, 1,
               norm_in);
    rope_kernels(T, heads * rope, e, fused, "rope_q", "rope_q_bwd", lk.f, lk.b);
    rope_kernels(T, rope, e, fused, "rope_k", "rope_k_bwd", lk.f, lk.b);
    // The attention core reads dense Q, K and V: K = [k_nope | k_pe] per head with the one rotary
    // k_pe broadcast over the heads, V copied out of kv_up's output, where it interleaves with
    // k_nope per head; the backward splits dK (k_pe's gradient summed over the heads) and copies dV
    // back (profile-data train.json, RopeLoraFlashAttnVarlenFunc: _copy_tensor_kernel and
    // direct_copy between the rotary kernels and the flash forward, two copies after the flash
    // backward).
    const double nope = static_cast<double>(l.qk_nope_head_dim), vd = static_cast<double>(l.v_head_dim);
    lk.f.push_back(memk("mla_k_concat", e * T * (heads * nope + rope), e * T * heads * (nope + rope), 0));
    lk.f.push_back(memk("mla_v_copy", e * T * heads * vd, e * T * heads * vd, 0));
    lk.b.push_back(memk("mla_k_concat_bwd", e * T * heads * (nope + rope), e * T * (heads * nope + rope), T * heads * rope));
    lk.b.push_back(memk("mla_v_copy_bwd", e * T * heads * vd, e * T * heads * vd, 0));
  } else {
    if (tt_eager) lk.b.push_back(input_grad_sum("qkv_dx_sum", T, h, e, 3));   // wq, wk, wv
    fp8_linear(r, "qkv", "qkv_dgrad", "qkv_wgrad", T, h, (heads + 2 * kv) * dqk, e, lk, 1, layernorm_linear(norm_in));
    // Plain PyTorch splits the one QKV output into q, k, v views; autograd's SplitBackward
    // concatenates dq, dk, dv into one gradient before the dgrad (run 8 trace: one
    // CatArrayBatchedCopy per layer, 15-16 us at s1.3b seq 4096, fused 0 and 1).
    if (r.fp32_autocast) lk.b.push_back(memk("qkv_split_bwd", e * T * (heads + 2 * kv) * dqk, e * T * (heads + 2 * kv) * dqk, 0));
    if (tt_eager) {
      torchtitan_rope_kernels(T, heads * dqk, dqk, "q", lk.f, lk.b);
      torchtitan_rope_kernels(T, kv * dqk, dqk, "k", lk.f, lk.b);
    } else if (has_rope(m)) {
      rope_kernels(T, heads * dqk, e, fused, "rope_q", "rope_q_bwd", lk.f, lk.b);
      rope_kernels(T, kv * dqk, e, fused, "rope_k", "rope_k_bwd", lk.f, lk.b);
    }
    // torchtitan's repeat_kv before SDPA (GQA: fewer K/V heads than query heads), eager or compiled.
    if (r.torchtitan && kv < heads) {
      torchtitan_repeat_kv(T, kv * dqk, heads / kv, "k", lk.f, lk.b);
      torchtitan_repeat_kv(T, kv * dv, heads / kv, "v", lk.f, lk.b);
    }
  }
  std::size_t core_begin = lk.f.size();
  const std::size_t core_b_begin = lk.b.size();
  const AttnShape as{static_cast<double>(r.micro_batch), heads, kv, static_cast<double>(r.seq_len) / r.cp,
                     static_cast<double>(r.seq_len), dqk, dv};
  attention_kernels(m, as, e, attention_variant(r), lk.f, lk.b);
  std::size_t core_end = lk.f.size();
  // Transformer Engine keeps DotProductAttention in bf16 unless the recipe's fp8_dpa is on
  // (features.fp8_attention; TE's default is off).
  if (r.fp8 && !r.fp8_attention) {
    for (std::size_t i = core_begin; i < core_end; ++i) lk.f[i].keep_bf16 = true;
    for (std::size_t i = core_b_begin; i < lk.b.size(); ++i) lk.b[i].keep_bf16 = true;
  }
  // moe.fp8_activation_cache: the attention output (the output projection's input, which the
  // attention backward reads too) kept in fp8 1x128 tiles (DeepSeek-V3 §3.3.3 keeps it in its E5M6
  // format; models/memory.cpp counts 1 byte + one fp32 scale per 128), quantised after the core and
  // dequantised at the start of the backward (profile-data train.json:
  // per_token_cast_to_fp8_with_fp8_special_fmt after the flash forward,
  // per_token_cast_back_special_fmt in the output projection's backward). The projection's weight
  // gradient then reads the bf16 copy.
  const double o = T * heads * dv;
  if (r.fp8_activation_cache) {
    lk.f.push_back(memk("fp8_cache_attn_out", e * o, kFp8TileBytes * o, 2 * o));
    lk.b.push_back(memk("fp8_cache_attn_out_dequant", kFp8TileBytes * o, e * o, o));
  }
  fp8_linear(r, "attn_out", "attn_out_dgrad", "attn_out_wgrad", T, heads * dv, h, e, lk, 1, row_parallel(bf16_input(e)));
  block_residual(lk.f, lk.b);

  // --- MLP block ---
  lk.f_mlp = lk.f.size();
  lk.w_mlp = lk.w.size();
  const std::size_t b_mlp_fwd = lk.b.size();
  std::size_t bs0 = 0, bs1 = 0;
  std::size_t bx0 = 0, bx1 = 0;
  block_norm(lk.f, lk.b);
  if (m.is_moe_layer(layer)) {
    const auto& mo = *m.moe;
    const double E = mo.experts, k = mo.top_k, fe = static_cast<double>(mo.expert_ffn_hidden);
    const double per_rank = E / r.ep;
    // The norm's output is read by the router, the dispatch and the shared experts: autograd sums
    // their input gradients before the norm's backward (Megatron's MoELayer, whichever dispatcher).
    // With moe.shared_in_combine (DeepSeek's code) one pair fewer and no shared output added in the
    // forward: DeepSeek's profile (profile-data train.json) has one bf16 add over [4096, 7168], after
    // the router's dgrad GEMM, before ln_bwd, and none in the forward; DeepEP's combine takes bias
    // tensors into its reduce (Buffer.combine's `bias`; the dispatch's backward is a combine), where
    // the shared term can join, a reading the profile is consistent with, not one it shows.
    const bool shared = mo.shared_experts > 0, shared_in_combine = shared && r.shared_in_combine;
    const int moe_paths = 2 + (shared && !shared_in_combine ? 1 : 0);
    if (autograd_sums) lk.b.push_back(input_grad_sum("moe_norm_dx_sum", Tn, h, e, moe_paths));
    // Router on the rank's own tokens; top-k; permutation into expert order.
    linear("router", "router_dgrad", "router_wgrad", Tn, h, E, e, lk);
    lk.f.back().keep_bf16 = lk.b.back().keep_bf16 = lk.w.back().keep_bf16 = true;   // a torch linear, not TE fp8
    // The top-k of the fp32 scores (torch.topk: a radix select per row, MemFamily::topk, run 28);
    // under DeepSeek-V3's node-limited gate a first pass over the same scores takes each group's
    // top-2 for the group scores, forward only (only the indices of the groups' ranking are used:
    // no gradient flows back through it); the top-M over the [T, groups] scores is not priced (a
    // launch on a few bytes per token). The backward scatters the k gradients into the zeroed
    // [T, E] scores (TopkBackward, or the gather's backward when only indices are kept).
    if (r.node_limited_routing) {
      hardware::Kernel g = memk("router_group_topk", 4 * Tn * E, 12 * Tn * 2 * r.ep_nodes, Tn * E);
      g.family = hardware::MemFamily::topk;
      lk.f.push_back(g);
    }
    push(lk.f, lk.b, {"router_topk", "router_topk_bwd", 4 * Tn * E, 12 * Tn * k, Tn * E});
    lk.f.back().family = hardware::MemFamily::topk;
    // Blockwise recipe with DeepEP's fp8 dispatch (DeepSeek-V3 §3.3.3: the activation before the
    // MoE up-projections quantised to fp8 for the dispatch): the rank's tokens quantised once in
    // 1x128 tiles before the dispatch; the shared expert's first GEMM reads the same copy
    // (profile-data train.json: one per_token_cast_to_fp8 of [4096, 7168] at the end of attn(F)).
    const bool fp8_moe_in = r.fp8 && r.fp8_blockwise() && r.fp8_dispatch;
    if (fp8_moe_in) lk.f.push_back(fp8_quantise("fp8_quant_dispatch", Tn, h, e));
    push(lk.f, lk.b, {"moe_permute", "moe_unpermute_grad", e * Tn * h, e * Tn * k * h, 0});
    // Tokens one expert sees on this rank: the tp group's T tokens of each of
    // the ep ranks, top_k copies, spread over all experts (balanced routing).
    const double m_e = T * r.ep * k / E;
    const int groups = std::max(1, static_cast<int>(std::lround(per_rank)));
    lk.f_experts = lk.f.size();
    bx0 = lk.b.size();
    // Blockwise: the routed experts' fp8 weights transposed in the forward (profile-data train.json:
    // batched_transpose before each m_grouped GEMM), their scales copied into the GEMM's layout before
    // each of the four grouped GEMMs, the permute's output too (a torch direct_copy of rows x in / 128
    // elements, fp32 by their count: 1.6-2.1 M before fc1 and the fc2 dgrad, 0.5-0.6 M before fc2,
    // 0.9-1.1 M before the fc1 dgrad); with the fp8 dispatch the first GEMM's input arrives quantised and the second's
    // output gradient too (§3.3.3: the gradient before the down projections is sent in fp8).
    Fp8Operands fc1_io = kept_input(r, e), fc2_io = bf16_input(e);
    fc1_io.weight_transpose_in_forward = fc2_io.weight_transpose_in_forward = true;
    if (fp8_moe_in) {
      arrives_quantised(fc1_io);
      fc2_io.dy_quantised = true;
      fc2_io.dy_saved_bytes = kFp8TileBytes;
    }
    fp8_linear(r, "expert_fc1", "expert_fc1_dgrad", "expert_fc1_wgrad", m_e, h, 2 * fe / tp, e, lk, groups, fc1_io);
    fc2_io.x_quantised = mlp_activation(m, r, m_e * groups, fe / tp, e, fused, lk);
    fp8_linear(r, "expert_fc2", "expert_fc2_dgrad", "expert_fc2_wgrad", m_e, fe / tp, h, e, lk, groups, fc2_io);
    lk.f_experts_end = lk.f.size();
    bx1 = lk.b.size();
    // ... and the output gradient quantised before the combine's backward (profile-data train.json:
    // per_token_cast_to_fp8 of [4096, 7168] at the start of combine(B)); runs before the experts'
    // backward (b is reversed).
    if (fp8_moe_in) lk.b.push_back(fp8_quantise("fp8_quant_combine_grad", Tn, h, e));
    push(lk.f, lk.b, {"moe_unpermute", "moe_permute_grad", e * Tn * k * h + 4 * Tn * k, e * Tn * h, Tn * k * h});
    if (mo.shared_experts > 0) {
      const double fs = mo.shared_experts * fe / tp;
      lk.f_shared = lk.f.size();
      bs0 = lk.b.size();
      Fp8Operands s1 = norm_in, s2 = bf16_input(e);
      if (fp8_moe_in) arrives_quantised(s1);   // the dispatch's copy
      fp8_linear(r, "shared_fc1", "shared_fc1_dgrad", "shared_fc1_wgrad", T, h, 2 * fs, e, lk, 1, s1);
      s2.x_quantised = mlp_activation(m, r, T, fs, e, fused, lk);
      fp8_linear(r, "shared_fc2", "shared_fc2_dgrad", "shared_fc2_wgrad", T, fs, h, e, lk, 1, s2);
      lk.f_shared_end = lk.f.size();
      bs1 = lk.b.size();
      // Megatron's MoELayer adds the shared experts' output to the combined routed output
      // (output = output + shared_experts(hidden)); with moe.shared_in_combine DeepEP's combine does (above).
      if (autograd_sums && !shared_in_combine) lk.f.push_back(memk("moe_shared_add", 2.0 * e * Tn * h, e * Tn * h, Tn * h));
    }
  } else {
    const double f = static_cast<double>(m.ffn_hidden) / tp;
    const double up = m.activation == Activation::swiglu ? 2 * f : f;
    if (tt_eager) lk.b.push_back(input_grad_sum("mlp_up_dx_sum", T, h, e, 2));   // w1, w3
    fp8_linear(r, "mlp_up", "mlp_up_dgrad", "mlp_up_wgrad", T, h, up, e, lk, 1, layernorm_linear(norm_in));
    // Gate and up are chunks of one GEMM output: ChunkBackward concatenates their gradients
    // (run 8 trace: 43-45 us per layer at s1.3b seq 4096).
    if (r.fp32_autocast && m.activation == Activation::swiglu)
      lk.b.push_back(memk("mlp_up_chunk_bwd", e * T * up, e * T * up, 0));
    Fp8Operands down = bf16_input(e);
    down.x_quantised = mlp_activation(m, r, T, f, e, fused, lk);
    fp8_linear(r, "mlp_down", "mlp_down_dgrad", "mlp_down_wgrad", T, f, h, e, lk, 1, row_parallel(down));
  }
  block_residual(lk.f, lk.b);

  std::reverse(lk.b.begin(), lk.b.end());   // built in F order; B runs in reverse
  lk.b_attn = lk.b.size() - b_mlp_fwd;
  if (bx1 > bx0) {
    lk.b_experts = lk.b.size() - bx1;
    lk.b_experts_end = lk.b.size() - bx0;
  }
  if (bs1 > bs0) {
    lk.b_shared = lk.b.size() - bs1;
    lk.b_shared_end = lk.b.size() - bs0;
  }

  if (r.fp32_autocast) {
    add_autocast_casts(lk, {&lk.f_mlp, &lk.f_experts, &lk.f_experts_end, &core_begin, &core_end});
    if (fused) {
      mark_compiled(lk.f);
      mark_compiled(lk.b);
    }
    tag_eager_families(lk);
  }

  mark_autograd(lk);
  // torchtitan checkpoints with torch.utils.checkpoint (non-reentrant), whose replay stops once
  // the last tensor the backward needs is recomputed (early stop, PyTorch's default): a dense
  // block's w2 and the residual add after it are not replayed (their outputs are not saved for
  // the backward; run 23's trace). Applied to per-op SAC, whose w2 is saved anyway: the last
  // residual add is not replayed. Under full AC the trace shows w2 not replayed either (34 of the
  // 36 forward kernels again); that is recorded in docs/fsdp.md, not applied here.
  std::size_t f_end = lk.f.size();
  if (r.torchtitan && !m.mla && !m.is_moe_layer(layer))
    for (std::size_t i = lk.f.size(); i-- > lk.f_mlp;)
      if (lk.f[i].kind == hardware::KernelKind::gemm) {
        f_end = i;
        break;
      }
  if (r.recompute == Recompute::full) {
    lk.r = lk.f;
  } else if (r.recompute == Recompute::selective) {
    lk.r.assign(lk.f.begin() + static_cast<std::ptrdiff_t>(core_begin),
                lk.f.begin() + static_cast<std::ptrdiff_t>(core_end));
  } else if (r.recompute == Recompute::selective_op) {
    // torchtitan's per-op SAC (torchtitan/parallelisms/parallelize_llama.py _custom_policy):
    // the checkpointed block's forward is replayed; outputs of SDPA and of the odd-numbered
    // aten.mm calls are saved (MUST_SAVE), every other op runs again. torchtitan's Llama issues
    // its matmuls as wq, wk, wv, wo, w1, w3, w2 (GELU: wq, wk, wv, wo, fc1, fc2), so wk, wo
    // and w3 (GELU: fc2) are recomputed; here wk is the k part of the QKV GEMM and w3 half of
    // the gate/up GEMM. The core attention is not recomputed; every memory-bound kernel is.
    // Other GEMMs (MLA, MoE, the router) by the same rule over their order in the pass.
    int mm = 0;
    for (std::size_t i = 0; i < f_end; ++i) {
      if (i >= core_begin && i < core_end) continue;
      const Kernel& k = lk.f[i];
      if (k.kind != hardware::KernelKind::gemm) {
        lk.r.push_back(k);
        continue;
      }
      const std::string n = k.name;
      Kernel g = k;
      if (n == "qkv") {
        mm += 3;
        g.n = std::llround(kv * dqk);
        g.flops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
        g.bytes = k.bytes * static_cast<double>(g.n) / static_cast<double>(std::max<std::int64_t>(1, k.n));
        lk.r.push_back(g);
      } else if (n == "mlp_up" && m.activation == Activation::swiglu) {
        mm += 2;
        g.n = k.n / 2;
        g.flops = k.flops / 2;
        g.bytes = k.bytes / 2;
        lk.r.push_back(g);
      } else if (++mm % 2 == 0) {
        lk.r.push_back(g);
      }
    }
  }
  tag_wgrad_accumulation(lk, r);
  return lk;
}

LayerKernels embedding_kernels(const ModelSpec& m, const RankShape& r) {
  LayerKernels lk;
  const int e = r.bytes_per_element;
  const double h = static_cast<double>(m.hidden);
  const double T = static_cast<double>(r.micro_batch) * static_cast<double>(r.seq_len) / r.cp;
  const double Tn = r.sequence_parallel ? T / r.tp : T;
  // Vocab-parallel lookup: gather rows, write [T, h] (reduced over tp). fp32-autocast: the
  // table is fp32 (nn.Embedding is not on autocast's list), so the output and the residual
  // stream's gradient arriving at it are fp32.
  const double ea = r.fp32_autocast ? 4.0 : e;
  lk.f.push_back(memk("embedding_lookup", ea * T * h + 8 * T, ea * T * h, 0));
  if (has_dropout(m)) lk.f.push_back(memk("embedding_dropout", e * Tn * h, e * Tn * h + Tn * h, 2 * Tn * h));
  // Backward: scatter-add the output gradient into the (fp32) embedding gradient.
  lk.w.push_back(memk("embedding_grad", ea * T * h + 8 * T, 4 * T * h, T * h));
  mark_autograd(lk);
  return lk;
}

LayerKernels mtp_kernels(const ModelSpec& m, const RankShape& r) {
  LayerKernels pre;
  const int e = r.bytes_per_element;
  const double h = static_cast<double>(m.hidden);
  const double T = static_cast<double>(r.micro_batch) * static_cast<double>(r.seq_len) / r.cp;
  const double Tn = r.sequence_parallel ? T / r.tp : T;
  norm_kernels(m, Tn, h, e, r.fused_kernels, "mtp_hnorm", "mtp_hnorm_bwd", pre.f, pre.b);
  norm_kernels(m, Tn, h, e, r.fused_kernels, "mtp_enorm", "mtp_enorm_bwd", pre.f, pre.b);
  fp8_linear(r, "mtp_proj", "mtp_proj_dgrad", "mtp_proj_wgrad", T, 2 * h, h / r.tp, e, pre, 1, kept_input(r, e));
  std::reverse(pre.b.begin(), pre.b.end());
  mark_autograd(pre);
  LayerKernels lk = layer_kernels(m, std::max(0, m.layers - 1), r);
  const std::size_t nf = pre.f.size(), nw = pre.w.size();
  lk.f.insert(lk.f.begin(), pre.f.begin(), pre.f.end());
  lk.b.insert(lk.b.end(), pre.b.begin(), pre.b.end());   // after the block's attention backward
  lk.w.insert(lk.w.begin(), pre.w.begin(), pre.w.end());
  for (std::size_t* i : {&lk.f_mlp, &lk.f_experts, &lk.f_experts_end, &lk.f_shared, &lk.f_shared_end}) *i += nf;
  lk.w_mlp += nw;
  if (!lk.r.empty() && lk.r.size() + nf == lk.f.size()) lk.r = lk.f;   // full recompute: the whole module
  tag_wgrad_accumulation(lk, r);
  return lk;
}

LayerKernels head_kernels(const ModelSpec& m, const RankShape& r) {
  LayerKernels lk;
  const int e = r.bytes_per_element, tp = r.tp;
  const double h = static_cast<double>(m.hidden);
  const double T = static_cast<double>(r.micro_batch) * static_cast<double>(r.seq_len) / r.cp;
  const double Tn = r.sequence_parallel ? T / tp : T;
  const double v = static_cast<double>(m.vocab) / tp;
  const bool ln = has_layernorm(m);
  const char* tag = ln ? "final_layernorm" : "final_rmsnorm";
  const char* tag_bwd = ln ? "final_layernorm_bwd" : "final_rmsnorm_bwd";
  if (r.torchtitan && !r.fused_kernels)   // torchtitan's final RMSNorm (the block's class, eager)
    torchtitan_rmsnorm_kernels(Tn, h, lk.f, lk.b);
  else if (r.fp32_autocast)   // the last layer's fp32 output: fp32 norm, cast for the LM head
    fp32_norm_kernels(m, Tn, h, r.fused_kernels, false, tag, tag_bwd, lk.f, lk.b);
  else
    norm_kernels(m, Tn, h, e, r.fused_kernels, tag, tag_bwd, lk.f, lk.b);
  linear("lm_head", "lm_head_dgrad", "lm_head_wgrad", T, h, v, e, lk);
  // The output layer stays bf16 in Megatron/NeMo fp8 recipes (it is not a TE fp8 module):
  // priced at the bf16 peak and fit, no quantise kernels.
  lk.f.back().keep_bf16 = lk.b.back().keep_bf16 = lk.w.back().keep_bf16 = true;
  if (r.compiled_cross_entropy) {
    // torch.compile of F.cross_entropy(logits.float(), targets) (torchtitan's loss with
    // training.compile): Inductor fuses the cast, log_softmax and nll_loss into one looped
    // reduction per row (the row's max, then its sum of exponentials: the logits read twice, not
    // measured) writing the row's loss and log-sum-exp; its backward one kernel reading the logits
    // and writing their gradient in the logits' dtype. Memory: run 34 (models/memory.cpp).
    const double x = T * v;
    lk.f.push_back(memk("cross_entropy_compiled", 2 * e * x, 8 * T, 5 * x));
    lk.b.push_back(memk("cross_entropy_compiled_bwd", e * x + 4 * T, e * x, 3 * x));
    if (r.fp32_autocast) add_autocast_casts(lk, {});
  } else if (r.fp32_autocast || r.fp32_cross_entropy) {
    // torch: F.cross_entropy(logits.float(), targets) over the full [T, V] logits
    // (validation/train_step.py Model.forward): the .float() copy, log_softmax in fp32
    // (a row of V > 12288 fp32 does not fit in shared memory: read three times, written
    // once, softmax_row_reads), nll_loss. Backward: nll_loss_backward fills the [T, V] fp32
    // gradient with zeros and scatters -1/T; log_softmax_backward reads the gradient for the
    // row sum, then gradient and output again, writes; the cast back to bf16.
    const double x = T * v, rd = softmax_row_reads(v);
    lk.f.push_back(memk("logits_to_fp32", e * x, 4 * x, 0));
    lk.f.push_back(memk("log_softmax", rd * 4 * x, 4 * x, 5 * x));
    lk.f.push_back(memk("nll_loss", 12 * T, 4, T));
    lk.b.push_back(memk("logits_to_fp32_bwd", 4 * x, e * x, 0));
    lk.b.push_back(memk("log_softmax_bwd", (rd > 1 ? 12 : 8) * x, 4 * x, 3 * x));
    lk.b.push_back(memk("nll_loss_bwd", 12 * T, 4 * x, T));
    if (r.fp32_autocast) add_autocast_casts(lk, {});
    tag_eager_families(lk);
  } else {
    // Vocab-parallel cross entropy on fp32 logits: max, sum-exp, loss; backward softmax - onehot.
    lk.f.push_back(memk("cross_entropy", e * T * v, 4 * T * v, 5 * T * v));
    lk.b.push_back(memk("cross_entropy_bwd", 4 * T * v, e * T * v, 2 * T * v));
  }
  std::reverse(lk.b.begin(), lk.b.end());   // built in F order; B runs in reverse
  mark_autograd(lk);
  tag_wgrad_accumulation(lk, r);
  return lk;
}

double gemm_duty(const ModelSpec& m, const RankShape& sh, const hardware::CostModel& cost) {
  double gemm = 0, all = 0;
  auto add = [&](int layer, double weight) {
    if (weight <= 0) return;
    const LayerKernels lk = layer_kernels(m, layer, sh);
    for (const auto* v : {&lk.f, &lk.b, &lk.w, &lk.r})
      for (const hardware::Kernel& k : *v) {
        const double t = cost.time(k) - cost.launch_time(k);
        all += weight * t;
        if (k.kind == hardware::KernelKind::gemm) gemm += weight * t;
      }
  };
  const int dense = m.is_moe() ? std::min(m.moe->dense_layers, m.layers) : m.layers;
  add(0, dense);
  if (m.is_moe() && m.layers > dense) add(dense, m.layers - dense);
  return all > 0 ? gemm / all : 1.0;
}

void settle_gemm_duty(const ModelSpec& m, const RankShape& sh, hardware::CostModel& cost) {
  // A few fixed-point steps: the duty moves GEMM times by a few percent at most, so it settles at once.
  if (!cost.has_gemm_clock()) return;   // no measured curve: the duty changes nothing, skip pricing the layers
  double d = 1.0;
  for (int i = 0; i < 4; ++i) {
    cost.set_gemm_duty(d);
    const double next = gemm_duty(m, sh, cost);
    if (std::abs(next - d) < 1e-4) break;
    d = next;
  }
  cost.set_gemm_duty(d);
}

}  // namespace mfusim::models
