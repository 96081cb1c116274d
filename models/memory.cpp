// Memory accounting per rank: weights, gradients and optimizer state; activations kept from
// F to B, what W still needs after B, and the first and last stages' extras. Formulas and
// their sources: docs/accounting.md.
#include "models/memory.h"

#include <algorithm>

#include "models/conventions.h"
#include "models/params.h"

namespace mfusim::models {

using namespace detail;

double linear_weights(const ModelSpec& m, const std::vector<int>& layers, bool has_head, int tp, int ep) {
  double n = 0;
  for (int i : layers) {
    const ParamParts p = layer_parts(m, i);
    n += p.tp_sharded / tp + p.experts / (static_cast<double>(tp) * ep);
  }
  if (has_head && m.mtp_depth > 0) {
    const ParamParts p = detail::mtp_parts(m);
    n += p.tp_sharded / tp + p.experts / (static_cast<double>(tp) * ep);
  }
  return n;
}

StaticMemory static_memory(const ModelSpec& m, const std::vector<int>& layers, bool has_embedding, bool has_head,
                           int tp, int ep, int dp, bool distributed_optimizer, bool fp32_autocast, bool fp8) {
  double dense = 0, expert = 0;
  for (int i : layers) {
    const ParamParts p = layer_parts(m, i);
    dense += p.tp_sharded / tp + p.replicated;
    expert += p.experts / (static_cast<double>(tp) * ep);
  }
  const ParamCount c = count_params(m);
  if (has_embedding) dense += c.embedding / tp;
  if (has_head && m.mtp_depth > 0) {   // the MTP modules live on the last stage (DeepSeek-V3 §2.2)
    const ParamParts p = detail::mtp_parts(m);
    dense += p.tp_sharded / tp + p.replicated;
    expert += p.experts / (static_cast<double>(tp) * ep);
  }
  const double fp8_linear = fp8 ? linear_weights(m, layers, has_head, tp, ep) : 0.0;
  if (has_head) {
    dense += c.final_norm;
    if (!m.tied_embeddings) dense += c.lm_head / tp;
    else if (!has_embedding) dense += c.embedding / tp;   // Megatron keeps a tied copy on the last stage
  }
  StaticMemory s;
  s.params = param_bytes(fp32_autocast) * (dense + expert) + (fp8 ? 2.0 * fp8_linear : 0.0);
  s.grads = 4 * (dense + expert);
  const double expert_dp = std::max(1.0, static_cast<double>(dp) / ep);
  const double state = fp32_autocast ? 8 : 12;   // m, v (+ fp32 master copy for bf16 params)
  s.optimizer = distributed_optimizer ? state * (dense / dp + expert / expert_dp) : state * (dense + expert);
  return s;
}

StaticMemory sharded_static_memory(const ModelSpec& m, const std::vector<int>& layers, bool has_embedding,
                                   bool has_head, int tp, int ep, const ZeroLayout& z, bool fp32_autocast) {
  const int shard = std::max(1, z.shard);
  StaticMemory s = static_memory(m, layers, has_embedding, has_head, tp, ep, shard, z.stage >= 1, fp32_autocast);
  if (z.stage >= 2) {
    // The unsharded split of the rank's states into dense and expert parts (the same sums as static_memory).
    const StaticMemory dense_only = static_memory(m, layers, has_embedding, has_head, tp, ep, 1, false, fp32_autocast);
    double expert = 0;
    for (int i : layers) expert += layer_parts(m, i).experts / (static_cast<double>(tp) * ep);
    // The MTP modules' routed experts (on the last stage, with the head) are experts too: sharded over the
    // expert-data-parallel part of the shard group, as the layers' (static_memory counts them so).
    if (has_head && m.mtp_depth > 0) expert += detail::mtp_parts(m).experts / (static_cast<double>(tp) * ep);
    const double total = dense_only.grads / 4;          // parameters held, dense + expert
    const double dense = total - expert;
    const double expert_shard = std::max(1.0, static_cast<double>(shard) / ep);
    const double held = dense / shard + expert / expert_shard;
    s.grads = 4 * held;                                 // fp32 gradient shard
    if (z.stage >= 3) s.params = param_bytes(fp32_autocast) * held;
  }
  if (z.offload_optimizer || z.offload_params) s.optimizer = 0;
  if (z.offload_params) s.params = s.grads = 0;
  return s;
}

bool zero_sharded(const config::Scenario& s) {
  const auto& P = s.parallel;
  return P.zero() >= 2 || (P.shard_degree > 0 && P.shard_degree != P.dp) || s.features.offload != config::Offload::none;
}

bool backward_allocates_grads(const config::Scenario& s) {
  const bool autocast = s.training.master_weights == config::MasterWeights::fp32_autocast;
  return (autocast || zero_sharded(s)) && s.features.offload == config::Offload::none;
}

bool torch_fsdp(const config::Scenario& s) { return s.parallel.zero() >= 3 && !s.features.megatron_fsdp; }

bool torch_fsdp_fp32_shards(const config::Scenario& s) {
  return torch_fsdp(s) && s.features.offload == config::Offload::none &&
         s.training.master_weights != config::MasterWeights::fp32_autocast && !s.features.fp8_params;
}

bool grads_only_in_backward(const config::Scenario& s) {
  return backward_allocates_grads(s) && (zero_sharded(s) || s.parallel.dp * s.parallel.cp <= 1);
}

StaticMemory rank_static_memory(const config::Scenario& s, const std::vector<int>& layers, bool has_embedding,
                                bool has_head, bool fp32_autocast) {
  const auto& P = s.parallel;
  StaticMemory sm;
  if (zero_sharded(s)) {   // ZeRO-2/3, HSDP, offload (docs/fsdp.md)
    ZeroLayout z;
    z.stage = P.zero();
    z.shard = P.shard() * P.cp;
    z.offload_optimizer = s.features.offload != config::Offload::none;
    z.offload_params = s.features.offload == config::Offload::params;
    sm = sharded_static_memory(s.model, layers, has_embedding, has_head, P.tp, P.ep, z, fp32_autocast);
    if (torch_fsdp_fp32_shards(s)) {   // the fp32 shard is the master: 4 bytes held, Adam's m and v beside it
      const double held = sm.params / param_bytes(false);
      sm.params = 4.0 * held;
      sm.optimizer -= 4.0 * held;
    }
  } else {
    // The distributed optimizer shards over the data-parallel group with context parallelism (dp x cp:
    // Megatron's get_data_parallel_group(with_context_parallel=True), the group the step's gradient
    // reduce-scatter and parameter gather use, step/data_parallel.cpp).
    sm = static_memory(s.model, layers, has_embedding, has_head, P.tp, P.ep, P.dp * P.cp, P.distributed_optimizer,
                       fp32_autocast);
  }
  // fp8: Transformer Engine's cached fp8 weight copies (the weight and its transpose, 2 bytes per linear
  // weight), on the ranks that hold whole layers (not under ZeRO-3, where parameters are gathered per unit).
  const double linear = linear_weights(s.model, layers, has_head, P.tp, P.ep);   // unsharded
  if (s.training.precision == config::Precision::fp8 && P.zero() < 3) sm.params += 2.0 * linear;
  // features.fp8_params (Megatron's --fp8-param-gather): the linear weights are the fp8 tensors
  // themselves, so no bf16 copy of them is held: ZeRO-0..2 keep the fp8 weight and its transpose (the
  // 2 bytes counted above) instead of bf16 + fp8 copies; under ZeRO-3 the held shard is fp8 (1 byte
  // instead of 2), the fp32 master and the optimizer state unchanged.
  if (s.features.fp8_params && s.training.precision == config::Precision::fp8 && sm.params > 0) {
    if (P.zero() < 3) {
      sm.params -= 2.0 * linear;
    } else {
      const double all = static_memory(s.model, layers, has_embedding, has_head, P.tp, P.ep, 1, false, fp32_autocast)
                             .params / param_bytes(fp32_autocast);
      const double held = sm.params / param_bytes(fp32_autocast);
      sm.params -= all > 0 ? linear * held / all : 0.0;
    }
  }
  // The accounting above counts fp32 gradients; a bf16 gradient buffer (features.reduce_dtype) holds half.
  sm.grads *= grad_bytes(s.features.reduce_fp32, fp32_autocast) / 4.0;
  return sm;
}

double activation_bytes(const ModelSpec& m, int layer, const RankShape& r) {
  const double t = r.tp;
  const double e = r.bytes_per_element;
  const double h = static_cast<double>(m.hidden);
  const double s = static_cast<double>(r.seq_len);
  const double T = static_cast<double>(r.micro_batch) * s / r.cp;
  const double rep = r.sequence_parallel ? 1.0 / t : 1.0;   // tensors outside the TP region
  const double shard = 1.0 / t;
  // features.recompute_every: a block that is not checkpointed keeps everything.
  const Recompute rc = checkpointed(r, layer) ? r.recompute : Recompute::none;
  if (rc == Recompute::full) return e * T * h * rep;   // the layer input only

  const double heads = m.heads;
  const double dqk = qk_head_dim(m), dv = v_head_dim(m), kvh = core_kv_heads(m);
  if (rc == Recompute::selective_op && !m.mla && !m.is_moe_layer(layer)) {
    // torchtitan's per-op SAC (layer_kernels.cpp): the block's input, the saved matmul outputs
    // (wq, wv, w1 and w2; GELU: wq, wv, fc1), SDPA's output and its log-sum-exp (fp32).
    double pt = e * h * rep + e * (heads * dqk + kvh * dv) * shard + e * heads * dv * shard + 4 * heads * shard;
    pt += e * static_cast<double>(m.ffn_hidden) * shard;
    if (m.activation == Activation::swiglu) pt += e * h * rep;
    return T * pt;
  }
  const double drop = has_dropout(m) ? 1.0 : 0.0;
  double per_token = 0;
  // attention block (Korthikanti: 11sbh + 5as^2b for GPT)
  // DeepSeek-V3's measures: norm outputs and MLA up-projection outputs recomputed in backward
  // (rn), Linear inputs cached in fp8 with one fp32 scale per 128 elements (el).
  const bool rn = r.recompute_norm_up_proj;
  const double el = r.fp8_activation_cache ? 1.0 + 4.0 / 128.0 : e;
  // Transformer Engine's fp8 linears (training.precision = "fp8" in Megatron's code) keep the input
  // their weight gradient needs as its quantised copy, column-wise only, 1 byte per element (plus
  // the 1x128 tiles' scales in the blockwise recipe); the bf16 tensor is not kept unless another op
  // saves it (transformer_engine/pytorch/module/linear.py @d0067d0, "Discard unneeded data in input
  // tensor"; TE 1.x kept the fp8 transpose, the same bytes). DeepSeek-V3's own cache (el) is its recipe.
  const bool te8 = r.fp8 && !r.torchtitan && !r.fp32_autocast && !r.fp8_activation_cache;
  const double eq = te8 ? 1.0 + (r.fp8_blockwise() ? 4.0 / 128.0 : 0.0) : el;   // a linear's saved input
  per_token += e * h * rep;                                   // norm input
  if (!rn) per_token += eq * h * rep;                         // QKV GEMM input (norm output)
  if (m.mla) {
    const auto& l = *m.mla;
    // the latents: q down output (norm input) and q norm output, same for kv, over the rank's own tokens
    // (the down projections are duplicated over tp and read the sequence-parallel shard; the up
    // projections keep their local input, as column-parallel linears); the rope key gathered
    per_token += (rn ? 1 : 2) * e * (l.q_lora_rank + l.kv_lora_rank) * rep + e * l.qk_rope_head_dim;
  }
  if (!(rn && m.mla)) {
    per_token += e * (heads * dqk + kvh * dqk) * shard;       // Q and K for QK^T
    per_token += e * kvh * dv * shard;                        // V
  }
  // attention output = out-projection input (with TE fp8: attention keeps it in bf16 for its
  // backward, the out-projection its fp8 copy)
  per_token += (te8 ? e + eq : el) * heads * dv * shard;
  if (rc == Recompute::none) {
    if (r.flash_attention) {
      per_token += 4 * heads * shard;                         // softmax log-sum-exp (fp32)
    } else {
      // over s keys per head: the probabilities attn*V reads (e), the softmax output
      // its backward reads (the same tensor when fused; fp32, 4 bytes, unfused),
      // dropout mask (1) and dropout output (e). Per variant (run 14 measured the saved
      // bytes per score: hf_eager 6.1, sdpa_math 4.4, Megatron's bf16 stand-in 2.2):
      // Megatron's fused softmax saves its bf16 output only; HF eager and Megatron's fp32
      // softmax keep the fp32 softmax output and the bf16 probabilities; the SDPA math
      // backend keeps one fp32 tensor (the softmax's output is what attn*V reads).
      using config::Attention;
      const Attention att = attention_variant(r);
      double saved = e + (r.fused_kernels ? 0.0 : 4.0);   // torch_eager (the plain PyTorch chain)
      if (att == Attention::megatron_unfused) saved = e;
      else if (att == Attention::megatron_unfused_fp32 || att == Attention::hf_eager) saved = e + 4.0;
      else if (att == Attention::sdpa_math) saved = 4.0;
      per_token += (saved + drop * (1 + e)) * heads * s * shard;
    }
  }
  per_token += drop * h * rep;                                // dropout mask after out-projection
  // MLP block (Korthikanti: 19sbh for GPT)
  per_token += e * h * rep;                                   // norm input
  auto mlp = [&](double width) {   // activations of one (dense-width) MLP; the activation's output is fc2's input
    return m.activation == Activation::swiglu ? (e * 2 + eq) * width * shard   // gate+up output, SwiGLU output
                                              : (e + eq) * width * shard;      // GELU input, GELU output
  };
  // fp8 cache (DeepSeek-V3 §3.3.2): the SwiGLU input (gate+up output) cached in fp8, its
  // output recomputed in backward; the expert/shared-expert inputs in fp8.
  auto mlp_cached = [&](double width) {
    if (!r.fp8_activation_cache || m.activation != Activation::swiglu) return mlp(width);
    return el * 2 * width * shard;
  };
  if (m.is_moe_layer(layer)) {
    const auto& mo = *m.moe;
    const double fe = static_cast<double>(mo.expert_ffn_hidden);
    if (!rn) per_token += (te8 ? e : el) * h * rep;           // router input (norm output; the router is bf16)
    per_token += 4 * mo.experts * rep;                        // router probabilities (fp32)
    per_token += mo.top_k * (eq * h * rep + mlp_cached(fe));  // permuted expert inputs and expert internals
    per_token += mo.shared_experts * mlp_cached(fe);
  } else {
    if (!rn) per_token += eq * h * rep;                       // fc1 input (norm output)
    per_token += mlp_cached(static_cast<double>(m.ffn_hidden));
  }
  per_token += drop * h * rep;                                // dropout mask after MLP
  // fp32-autocast: each GEMM saves its bf16 weight copy (the autocast cast) for its input
  // gradient, per micro-batch, until the layer's backward.
  double weight_copies = 0;
  if (r.fp32_autocast) {
    const ParamParts p = layer_parts(m, layer);
    weight_copies = e * (p.tp_sharded / t + p.experts / (t * r.ep));
  }
  return T * per_token + weight_copies;
}

double w_stash_bytes(const ModelSpec& m, int layer, const RankShape& r) {
  // Each weight GEMM keeps its input x and output gradient dy until W: dW = x^T dy.
  const double t = r.tp;
  const double e = r.bytes_per_element;
  const double h = static_cast<double>(m.hidden);
  const double T = static_cast<double>(r.micro_batch) * static_cast<double>(r.seq_len) / r.cp;
  const double rep = r.sequence_parallel ? 1.0 / t : 1.0;
  const double heads = m.heads;
  double per_token = 0;
  auto column = [&](double in, double out) { per_token += e * (in * rep + out / t); };   // in: the full width
  auto row = [&](double in, double out) { per_token += e * (in / t + out * rep); };
  // duplicated over tp, on the rank's own (sequence-parallel) tokens: MLA's down projections
  auto dup = [&](double in, double out) { per_token += e * (in + out) * rep; };
  if (m.mla) {
    const auto& l = *m.mla;
    const double qk = qk_head_dim(m);
    if (l.q_lora_rank > 0) {
      dup(h, static_cast<double>(l.q_lora_rank));
      column(static_cast<double>(l.q_lora_rank), heads * qk);
    } else {
      column(h, heads * qk);
    }
    dup(h, static_cast<double>(l.kv_lora_rank + l.qk_rope_head_dim));
    column(static_cast<double>(l.kv_lora_rank), heads * (l.qk_nope_head_dim + l.v_head_dim));
  } else {
    column(h, (heads + 2.0 * m.kv_heads) * head_dim(m));
  }
  row(heads * v_head_dim(m), h);
  if (m.is_moe_layer(layer)) {
    const auto& mo = *m.moe;
    const double fe = static_cast<double>(mo.expert_ffn_hidden);
    per_token += e * (h + mo.experts) * rep;                  // router
    const double copies = mo.top_k + mo.shared_experts;
    per_token += copies * e * (h * rep + 2 * fe / t);         // fc1
    per_token += copies * e * (fe / t + h * rep);             // fc2
  } else {
    const double f = static_cast<double>(m.ffn_hidden);
    column(h, m.activation == Activation::swiglu ? 2 * f : f);
    row(f, h);
  }
  return T * per_token;
}

double embedding_activation_bytes(const ModelSpec& m, const RankShape& r) {
  const double T = static_cast<double>(r.micro_batch) * static_cast<double>(r.seq_len) / r.cp;
  const double rep = r.sequence_parallel ? 1.0 / r.tp : 1.0;
  return has_dropout(m) ? T * static_cast<double>(m.hidden) * rep : 0.0;   // dropout mask (1 byte)
}

double head_activation_bytes(const ModelSpec& m, const RankShape& r) {
  // head_memory's inputs + saved, written as one product (the bytes the lowering has always used).
  const double T = static_cast<double>(r.micro_batch) * static_cast<double>(r.seq_len) / r.cp;
  const double rep = r.sequence_parallel ? 1.0 / r.tp : 1.0;
  const double h = static_cast<double>(m.hidden);
  const double per_logit = r.compiled_cross_entropy ? r.bytes_per_element : 4.0;
  return T * (2.0 * r.bytes_per_element * h * rep + per_logit * static_cast<double>(m.vocab) / r.tp);
}

HeadMemory head_memory(const ModelSpec& m, const RankShape& r) {
  const double T = static_cast<double>(r.micro_batch) * static_cast<double>(r.seq_len) / r.cp;
  const double rep = r.sequence_parallel ? 1.0 / r.tp : 1.0;
  const double h = static_cast<double>(m.hidden);
  const double x = T * static_cast<double>(m.vocab) / r.tp;   // logits on this rank
  const double e = r.bytes_per_element;
  HeadMemory hm;
  hm.inputs = T * 2.0 * e * h * rep;   // final norm input, LM-head input (Korthikanti: 2sbh/t each)
  if (r.compiled_cross_entropy) {
    // torch.compile of F.cross_entropy(logits.float()): the graph keeps its input, the logits (e
    // bytes per logit); its backward kernel writes their gradient beside them. Run 34: 2 / 2 / 4
    // bytes per logit at the forward's peak / after it / at the backward's peak.
    hm.saved = e * x;
    hm.backward = {e * x};
  } else if (r.fp32_cross_entropy || r.fp32_autocast) {
    // Eager F.cross_entropy(logits.float()) (under fp32 autocast too: the LM head runs in bf16).
    // Kept: log_softmax's fp32 output alone (derivatives.yaml: _to_copy saves nothing, nll_loss
    // its input = that output). Forward: the head's logits and their fp32 copy live until the loss
    // returns and the step drops the logits. Backward: nll_loss's fp32 gradient and
    // log_softmax's beside the saved output. Run 34: 10 / 4 / 12 bytes per logit at the
    // forward's peak / after it / at the backward's peak, at three shapes.
    hm.saved = 4.0 * x;
    hm.forward = {e * x, 4.0 * x};
    hm.backward = {4.0 * x, 4.0 * x};
  } else {
    hm.saved = 4.0 * x;   // fp32 logits 4sbv/t (a fused vocab-parallel loss)
  }
  return hm;
}

double mtp_extra_activation_bytes(const ModelSpec& m, const RankShape& r) {
  // One MTP module beyond its block's own activations: the inputs of its two RMSNorms (the
  // main model's last hidden state, the next tokens' embeddings) and of its projection
  // ([RMSNorm(h); RMSNorm(emb)], 2 hidden).
  const double T = static_cast<double>(r.micro_batch) * static_cast<double>(r.seq_len) / r.cp;
  const double rep = r.sequence_parallel ? 1.0 / r.tp : 1.0;
  const double h = static_cast<double>(m.hidden);
  return T * r.bytes_per_element * (2.0 * h * rep + 2.0 * h);
}

}  // namespace mfusim::models
