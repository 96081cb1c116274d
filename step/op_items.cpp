// An op's items: the segments of its layers' passes (embedding, layers, head)
// in execution order, with the memory each allocates or frees and which one
// finishes a layer's weight gradient; memoised per (pass, stage, split W).
// And the work estimate of the per-layer emission.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "schedules/schedule.h"
#include "sim/time.h"
#include "step/builder.h"
#include "models/rank_shape.h"
#include "step/simulate.h"

namespace mfusim::step {

using layer::LayerCost;
using layer::PassCost;
using layer::Seg;

// Per-tensor delayed scaling's amax reduction (config::Fp8AmaxReduction; docs/cost-model.md 2b). From
// Transformer Engine 1.6, FP8GlobalStateManager.reduce_and_update_fp8_tensors runs when a chunk's
// fp8_autocast region (Megatron-Core's TransformerBlock: its layers, not the embedding, final norm or head)
// exits after its forward, and in the backward of the region's first module, the chunk's last layer work
// (the LayerNormLinear of its first layer): one all-reduce (MAX) over the amax reduction group, issued with
// async_op=False, so the compute stream waits for it (transformer_engine/pytorch/fp8.py,
// reduce_tensor_across_group_op_max, v1.6 to v2.4). Every module of the rank adds its amaxes to one buffer per
// direction (get_key_in_buffer, v1.6), so each reduction carries the amaxes of all the rank's chunks. Its
// bytes: 4 per amax, three per GEMM forward (input, weight, output) and two backward (the gradients), four
// GEMMs per layer; the call is latency-bound (80 layers' forward buffer is 3.8 KB), so an MoE layer's expert
// GEMMs are not counted apart. "tp" is Transformer Engine 1.5 and earlier with NVTE_DP_AMAX_REDUCE_INTERVAL=0
// and NVTE_ASYNC_AMAX_REDUCTION=1, as NVIDIA's launchers set both: a tensor-parallel reduction of the
// region's own amaxes (its buffer keyed per autocast region, fp8.py @bfe21c3d6), the forward's issued at the
// next fp8_autocast entry and waited at that forward's first module (priced here, at the chunk's end), the
// backward's waited at the start of the next fp8 module's backward, so hidden behind what runs before that
// (not priced; exposed only where backwards run back to back). Not priced either: the fused
// amax-and-scale update kernel after each reduction (over the amax histories, 80 KB per layer at NeMo's
// fp8_amax_history_len of 1024, 48 forward and 32 backward: MB for a model, microseconds of HBM), the host's
// concatenation of the buffers, and a full recompute's forward (whose reductions depend on Transformer
// Engine's version).
double Builder::amax_seconds(bool forward, double layers) const {
  const auto mode = s_.features.fp8_amax_reduction;
  if (models::fp8_amax_group_ranks(s_) <= 0 || layers <= 0) return 0;
  if (!forward && mode == config::Fp8AmaxReduction::tp) return 0;   // hidden behind the next backward's start
  const auto& pl = layers_.placement();
  const hardware::Group& g = mode == config::Fp8AmaxReduction::tp_dp_cp ? pl.tp_dp_cp
                             : mode == config::Fp8AmaxReduction::tp_cp  ? pl.tp_cp
                                                                        : pl.tp;
  const double amaxes_per_gemm = forward ? 3.0 : 2.0;
  return layers_.coll(hardware::Collective::all_reduce, 4.0 * amaxes_per_gemm * 4.0 * layers, g);
}

std::vector<double> Builder::amax_layers() const {
  // Per stage: the layers whose amaxes one reduction carries (the stage's own under "tp"; else the most any
  // rank that runs the stage holds, over its stages in the schedule's order).
  std::vector<double> out(static_cast<std::size_t>(S_), 0.0);
  for (int st = 0; st < S_; ++st) out[static_cast<std::size_t>(st)] = static_cast<double>(out_.stage_layers[static_cast<std::size_t>(st)].size());
  if (s_.features.fp8_amax_reduction == config::Fp8AmaxReduction::tp) return out;
  std::vector<double> rank_layers(out.size(), 0.0);
  for (const auto& ops : out_.schedule.order) {
    std::vector<char> held(out.size(), 0);
    for (const Op& op : ops) {
      for (int st : {op.stage, op.stage_b})
        if (st >= 0 && st < S_) held[static_cast<std::size_t>(st)] = 1;
    }
    double sum = 0;
    for (std::size_t st = 0; st < held.size(); ++st) sum += held[st] ? out[st] : 0.0;
    for (std::size_t st = 0; st < held.size(); ++st)
      if (held[st]) rank_layers[st] = std::max(rank_layers[st], sum);
  }
  return rank_layers;
}

void Builder::plan_amax_reduction() {
  amax_f_.clear();
  amax_b_.clear();
  if (models::fp8_amax_group_ranks(s_) <= 0) return;
  amax_cat_ = models::fp8_amax_over_dp(s_) ? Category::dp_comm
              : s_.parallel.tp <= 1      ? Category::cp_comm   // (tp_cp at tp 1: the context-parallel ranks)
                                         : Category::tp_comm;
  amax_f_.assign(static_cast<std::size_t>(S_), Seg{});
  amax_b_.assign(static_cast<std::size_t>(S_), Seg{});
  const auto layers = amax_layers();
  for (int st = 0; st < S_; ++st) {
    if (out_.stage_layers[static_cast<std::size_t>(st)].empty()) continue;   // the embedding or head alone: no fp8 module
    auto fill = [&](Seg& sg, double seconds) {
      sg.ns = sim::checked_ns(seconds, "the fp8 amax all-reduce");
      sg.wait = sg.ns > 0;
    };
    const double n = layers[static_cast<std::size_t>(st)];
    fill(amax_f_[static_cast<std::size_t>(st)], amax_seconds(true, n));
    fill(amax_b_[static_cast<std::size_t>(st)], amax_seconds(false, n));
  }
}

std::size_t Builder::items_key(const Op& op, bool forward_half) const {
  const bool fb = op.kind == OpKind::FB;
  const OpKind kind = fb ? (forward_half ? OpKind::F : OpKind::B) : op.kind;
  const int stage = fb && !forward_half ? op.stage_b : op.stage;
  const bool split = fb && forward_half ? false : op.split_w;
  const int k = kind == OpKind::F ? 0 : kind == OpKind::B ? 1 : 2;
  // The halves of an F&B pair have lists of their own (LayerCost::fb_f / fb_b), after the others.
  return (static_cast<std::size_t>(stage) * 3 + k) * 2 + (split ? 1 : 0) + (fb ? static_cast<std::size_t>(S_) * 6 : 0);
}

const std::vector<Item>& Builder::items_of(int rank, const Op& op, bool forward_half) {
  const std::size_t key = items_key(op, forward_half);
  const int stage = op.kind == OpKind::FB && !forward_half ? op.stage_b : op.stage;
  if (items_cache_.empty()) {   // sized once: references handed out stay valid
    items_cache_.resize(static_cast<std::size_t>(S_) * 12);
    items_cached_.assign(items_cache_.size(), 0);
  }
  if (key >= items_cache_.size()) throw std::logic_error("lowering: stage " + std::to_string(stage) + " out of range");
  if (!items_cached_[key]) {
    items_cache_[key] = op_items(rank, op, forward_half);
    items_cached_[key] = 1;
  }
  return items_cache_[key];
}

std::vector<Item> Builder::op_items(int rank, const Op& op, bool forward_half) {
  std::vector<Item> items;
  const OpKind kind = op.kind == OpKind::FB ? (forward_half ? OpKind::F : OpKind::B) : op.kind;
  const int stage = op.kind == OpKind::FB && !forward_half ? op.stage_b : op.stage;
  const bool has_emb = stage == 0, has_head = stage == S_ - 1;
  const auto& layers = out_.stage_layers[stage];
  const bool recompute = s_.features.recompute != config::Recompute::none;
  const bool split = op.kind == OpKind::FB ? (forward_half ? false : op.split_w) : op.split_w;
  // MoE layers take their F&B cut (LayerCost::fb) in a rearranged pair (moe.fb_rearrange).
  const bool pair = op.kind == OpKind::FB && s_.moe.fb_rearrange;
  auto add_pass = [&](const PassCost& pc, Category cat, char k, std::int64_t mem_first, std::int64_t mem_last,
                      int layer, bool grad_final) {
    for (std::size_t i = 0; i < pc.segs.size(); ++i) {
      const bool first = i == 0, last = i + 1 == pc.segs.size();
      std::int64_t mem = 0;
      if (first) mem += mem_first;
      if (last) mem += mem_last;
      items.push_back(Item{&pc.segs[i], cat, k, mem, layer, last && grad_final});
    }
    if (pc.segs.empty() && (mem_first != 0 || mem_last != 0 || grad_final)) {
      static const Seg empty{};
      items.push_back(Item{&empty, cat, k, mem_first + mem_last, layer, grad_final});
    }
  };
  // The head's passes. With the loss's blocks (Builder::head_mem_blocks) each is one
  // segment that allocates its blocks at its start and frees its transients at its end (the
  // backward also what the forward kept); otherwise the forward allocates the head's activations
  // and the backward frees them.
  const auto head_act = static_cast<std::int64_t>(head_cost_.act_bytes);
  auto blocks_pass = [&](const PassCost& pc, Category cat, char k, int index) {
    const MemBlocks& b = out_.mem_blocks[static_cast<std::size_t>(index)];
    std::int64_t alloc = 0, freed = 0;
    for (auto x : b.at_start) alloc += x;
    for (auto x : b.at_end) freed += x;
    Item it{&pc.segs[0], cat, k, alloc, -1, false};
    it.release = freed;
    it.blocks = index;
    items.push_back(it);
  };
  const bool head_blocks = out_.mem_blocks.size() == 2;
  if (head_blocks && (head_cost_.f.segs.size() != 1 || head_cost_.b.segs.size() != 1))
    throw std::logic_error("lowering: the head's loss blocks need one segment per pass");
  auto head_forward = [&] {
    if (head_blocks) blocks_pass(head_cost_.f, Category::forward, 'F', 0);
    else add_pass(head_cost_.f, Category::forward, 'F', head_act, 0, -1, false);
  };
  auto head_backward = [&] {
    if (head_blocks) blocks_pass(head_cost_.b, Category::backward, 'B', 1);
    else add_pass(head_cost_.b, Category::backward, 'B', 0, -head_act, -1, false);
  };
  if (kind == OpKind::F) {
    if (has_emb) add_pass(emb_cost_.f, Category::forward, 'F', static_cast<std::int64_t>(emb_cost_.act_bytes), 0, -1, false);
    for (int l : layers) {
      const LayerCost& lc = layers_.layer_cost(l);
      add_pass(pair && lc.fb ? lc.fb_f : lc.f, Category::forward, 'F', static_cast<std::int64_t>(lc.act_bytes), 0, l, false);
    }
    if (!amax_f_.empty() && amax_f_[static_cast<std::size_t>(stage)].wait)
      items.push_back(Item{&amax_f_[static_cast<std::size_t>(stage)], amax_cat_, 'F', 0, -1, false});
    if (has_head) head_forward();
    // MTP modules (DeepSeek-V3 §2.2) after the main head: each its norms, projection and block
    // on the main model's last hidden state, then the shared head and its loss once more.
    for (int d = 0; has_head && d < s_.model.mtp_depth; ++d) {
      add_pass(pair && mtp_cost_.fb ? mtp_cost_.fb_f : mtp_cost_.f, Category::forward, 'F',
               static_cast<std::int64_t>(mtp_cost_.act_bytes), 0, -1, false);
      head_forward();
    }
  } else if (kind == OpKind::B) {
    for (int d = 0; has_head && d < s_.model.mtp_depth; ++d) {   // the MTP modules' backward first, last one first
      head_backward();
      if (!split) add_pass(head_cost_.w, Category::backward, 'B', 0, 0, -1, false);
      if (recompute) add_pass(mtp_cost_.r, Category::recompute, 'R', static_cast<std::int64_t>(mtp_cost_.recompute_bytes), 0, -1, false);
      const std::int64_t freed =
          static_cast<std::int64_t>(mtp_cost_.act_bytes + mtp_cost_.recompute_bytes - (split ? mtp_cost_.stash_bytes : 0));
      if (pair && mtp_cost_.fb && !split) {
        for (std::size_t i = 0; i < mtp_cost_.fb_b.segs.size(); ++i)
          items.push_back(Item{&mtp_cost_.fb_b.segs[i], Category::backward, 'B', i == mtp_cost_.fb_b_free ? -freed : 0, -1, false});
      } else {
        add_pass(mtp_cost_.b, Category::backward, 'B', 0, -freed, -1, false);
        if (!split) add_pass(mtp_cost_.w, Category::backward, 'B', 0, 0, -1, false);
      }
    }
    if (has_head) {
      head_backward();
      if (!split) add_pass(head_cost_.w, Category::backward, 'B', 0, 0, -1, false);
    }
    for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
      const LayerCost& lc = layers_.layer_cost(*it);
      if (recompute) add_pass(lc.r, Category::recompute, 'R', static_cast<std::int64_t>(lc.recompute_bytes), 0, *it, false);
      const std::int64_t freed = static_cast<std::int64_t>(lc.act_bytes + lc.recompute_bytes - (split ? lc.stash_bytes : 0));
      if (pair && lc.fb && !split) {   // backward and weight gradients in one cut; freed after the attention's backward
        for (std::size_t i = 0; i < lc.fb_b.segs.size(); ++i)
          items.push_back(Item{&lc.fb_b.segs[i], Category::backward, 'B', i == lc.fb_b_free ? -freed : 0, *it, false});
        continue;
      }
      add_pass(lc.b, Category::backward, 'B', 0, -freed, *it, !split);
      if (!split) add_pass(lc.w, Category::backward, 'B', 0, 0, *it, false);
    }
    if (!amax_b_.empty() && amax_b_[static_cast<std::size_t>(stage)].wait)
      items.push_back(Item{&amax_b_[static_cast<std::size_t>(stage)], amax_cat_, 'B', 0, -1, false});
    if (has_emb) {
      add_pass(emb_cost_.b, Category::backward, 'B', 0, -static_cast<std::int64_t>(emb_cost_.act_bytes), -1, false);
      if (!split) add_pass(emb_cost_.w, Category::backward, 'B', 0, 0, -1, false);
    }
    // Without a split, the last pass of each layer finishes its weight gradient:
    // mark the W pass (or B when W is empty) as grad-final.
    if (!split) {
      for (auto& it : items) it.grad_final = false;
      int prev_layer = -2;
      for (std::size_t i = items.size(); i-- > 0;) {
        if (items[i].layer >= 0 && items[i].layer != prev_layer) {
          items[i].grad_final = true;
          prev_layer = items[i].layer;
        }
      }
    }
  } else if (kind == OpKind::W) {
    for (int d = 0; has_head && d < s_.model.mtp_depth; ++d) {
      add_pass(head_cost_.w, Category::weight_grad, 'W', 0, 0, -1, false);
      add_pass(mtp_cost_.w, Category::weight_grad, 'W', 0, -static_cast<std::int64_t>(mtp_cost_.stash_bytes), -1, false);
    }
    if (has_head) add_pass(head_cost_.w, Category::weight_grad, 'W', 0, 0, -1, false);
    for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
      const LayerCost& lc = layers_.layer_cost(*it);
      add_pass(lc.w, Category::weight_grad, 'W', 0, -static_cast<std::int64_t>(lc.stash_bytes), *it, true);
    }
    if (has_emb) add_pass(emb_cost_.w, Category::weight_grad, 'W', 0, 0, -1, false);
  }
  (void)rank;
  return items;
}

std::size_t Builder::estimate_tasks() {
  std::size_t n = 0;
  const bool overlap = s_.features.tp_comm_overlap;
  std::vector<std::size_t> per_list;   // per items_key: tasks of one item list (0: not counted yet)
  for (int r = 0; r < p_; ++r)
    for (const Op& op : out_.schedule.order[r]) {
      n += 3;   // stage-to-stage sends, data loading, GC
      for (bool half : {true, false}) {
        if (!half && op.kind != OpKind::FB) break;
        const std::size_t key = items_key(op, half);
        if (per_list.size() <= key) per_list.resize(key + 1, 0);
        if (per_list[key] == 0) {
          std::size_t k = 1;   // counted from 1 so that an empty list is not counted again
          for (const Item& it : items_of(r, op, half))
            k += 1 + (it.seg->comm_ns > 0 ? 1 : 0) + (overlap && it.seg->comm_overlappable && it.seg->ns > 0 ? 1 : 0);
          per_list[key] = k;
        }
        n += per_list[key] - 1;
      }
    }
  return n + static_cast<std::size_t>(4 * p_);
}

// The work estimate before anything is built: O(1) in the number of micro-batches, so
// that a million micro-batches are refused at once (simulate calls it first). Counts
// as Builder::estimate_tasks does, from below: every op's layers, 3 tasks per op for
// sends, data loading and GC; W ops of split-backward schedules and TP collectives
// come on top.
WorkEstimate estimate_work(const config::Scenario& s, bool per_layer) {
  const double P = std::max(1, s.parallel.pp);
  const double m = std::max(1, s.microbatches());
  const std::string name = config::to_string(s.schedule.name);
  const double v = std::max(1, schedules::chunks_for(name, std::max(1, s.parallel.vpp)));
  WorkEstimate w;
  const double passes = schedules::splits_w(name) ? 3 : 2;   // F, B (and W)
  w.ops = passes * P * m * v;   // every micro-batch's passes on every virtual stage
  const double layers = std::max(0, s.model.layers);
  const double per_op = per_layer ? 3 : 1;   // coarse: the op itself (its sends etc. merge)
  // Per-layer: each op of a virtual stage holds layers / (P v) layers, one task each at least.
  w.tasks = w.ops * per_op + (per_layer ? 2 * m * layers : 0) + 4 * P;
  w.bytes = w.tasks * (per_layer ? kBytesPerTaskPerLayer : kBytesPerTaskCoarse);
  return w;
}

}  // namespace mfusim::step
