#include "study/plan.h"

#include <algorithm>
#include <limits>
#include <cstdio>
#include <chrono>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <utility>

#include "config/loader.h"
#include "hardware/cost_model.h"
#include "layer/pass_cost.h"
#include "models/accounting.h"
#include "step/simulate.h"
#include "step/lower.h"
#include "schedules/schedule.h"
#include "study/parallel_map.h"

namespace mfusim::study {

RankBy parse_rank_by(const std::string& s) {
  if (s == "step") return RankBy::step;
  if (s == "days") return RankBy::days;
  if (s == "cost") return RankBy::cost;
  throw std::invalid_argument("'" + s + "' (expected step, days or cost)");
}

const char* to_string(RankBy r) {
  switch (r) {
    case RankBy::step: return "step";
    case RankBy::days: return "days";
    case RankBy::cost: return "cost";
  }
  return "?";
}

Framework parse_framework(const std::string& s) {
  if (s == "any") return Framework::any;
  if (s == "megatron") return Framework::megatron;
  if (s == "torchtitan") return Framework::torchtitan;
  if (s == "deepspeed") return Framework::deepspeed;
  throw std::invalid_argument("'" + s + "' (expected megatron, torchtitan, deepspeed or any)");
}

const char* to_string(Framework f) {
  switch (f) {
    case Framework::any: return "any";
    case Framework::megatron: return "megatron";
    case Framework::torchtitan: return "torchtitan";
    case Framework::deepspeed: return "deepspeed";
  }
  return "?";
}

// The searched keys, and the --set keys that fix them (a table fixes its members).
const std::vector<std::string>& searched_keys() {
  static const std::vector<std::string> k = {"parallel.tp",  "parallel.cp",          "parallel.pp",
                                             "parallel.dp",  "parallel.ep",          "parallel.vpp",
                                             "training.micro_batch", "schedule.name", "features.recompute",
                                             "parallel.sequence_parallel", "moe.fb_rearrange",
                                             "moe.overlap_ep_comm", "features.recompute_num_layers"};
  return k;
}

namespace {

// What each framework ships (docs/plan.md "Frameworks", with sources).
struct FrameworkSpace {
  std::vector<config::ScheduleKind> schedules;
  std::vector<config::Recompute> recompute;
  bool context_parallel = true;
};
FrameworkSpace framework_space(Framework f) {
  using K = config::ScheduleKind;
  using R = config::Recompute;
  switch (f) {
    case Framework::megatron:
      // Megatron-Core pipeline_parallel/schedules.py: forward_backward_no_pipelining,
      // _pipelining_without_interleaving (1F1B), _pipelining_with_interleaving.
      return {{K::one_f_one_b, K::interleaved_1f1b}, {R::none, R::selective, R::full}, true};
    case Framework::torchtitan:
      // torch.distributed.pipelining: ScheduleGPipe, Schedule1F1B, ScheduleInterleaved1F1B,
      // ScheduleZBVZeroBubble, ScheduleDualPipeV; torchtitan activation_checkpoint mode none|selective|full,
      // its selective being per-op SAC (selective_ac_option = "op" in its Llama 3 train configs) or full
      // AC every N-th block (an integer option: features.recompute_every, not searched); docs/fsdp.md.
      return {{K::gpipe, K::one_f_one_b, K::interleaved_1f1b, K::zb_v, K::dualpipev}, {R::none, R::selective_op, R::full}, true};
    case Framework::deepspeed:
      // deepspeed.runtime.pipe.schedule.TrainSchedule (1F1B); activation checkpointing of
      // whole layers; DeepSpeed-Ulysses is all-to-all sequence parallelism, not ring CP.
      return {{K::one_f_one_b}, {R::none, R::full}, false};
    case Framework::any: break;
  }
  return {config::all_schedules(), {R::none, R::selective, R::full}, true};
}

template <class T>
bool has(const std::vector<T>& v, const T& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// The recompute levels of one pipeline shape, each with its block count (features.recompute_num_layers): the
// space's levels, and with SearchSpace::recompute_num_layers full recompute of every layer (N = 0) or of the
// first N of each of the `chunks` chunks' layers, N a quarter, a half and three quarters of the mean chunk's
// (ceil(layers / chunks)) and the scenario's own N (distinct, 1 <= N < the mean chunk's). -1: the scenario's own
// N stays.
std::vector<std::pair<config::Recompute, int>> recompute_choices(const SearchSpace& sp, int base_n, int layers, int chunks) {
  std::vector<std::pair<config::Recompute, int>> out;
  for (auto rc : sp.recompute) {
    if (rc != config::Recompute::full) {
      out.emplace_back(rc, 0);
      continue;
    }
    if (!sp.recompute_num_layers) {
      out.emplace_back(rc, sp.keep_recompute_num_layers ? -1 : 0);
      continue;
    }
    out.emplace_back(rc, 0);
    const int per_chunk = (layers + std::max(1, chunks) - 1) / std::max(1, chunks);
    std::vector<int> ns;
    for (int n : {per_chunk / 4, per_chunk / 2, per_chunk * 3 / 4, base_n})
      if (n >= 1 && n < per_chunk && !has(ns, n)) ns.push_back(n);
    for (int n : ns) out.emplace_back(rc, n);
  }
  return out;
}

}  // namespace

std::set<std::string> fixed_keys(const std::vector<std::string>& overrides) {
  std::set<std::string> out;
  for (const auto& o : overrides) {
    std::string k = o.substr(0, o.find('='));
    while (!k.empty() && k.back() == ' ') k.pop_back();
    while (!k.empty() && k.front() == ' ') k.erase(k.begin());
    for (const auto& s : searched_keys())
      if (k == s || (s.size() > k.size() && s.compare(0, k.size(), k) == 0 && s[k.size()] == '.')) out.insert(s);
    if (k == "schedule") out.insert("schedule.name");
  }
  return out;
}

SearchSpace search_space(const config::Scenario& base, int gpus, const SearchConstraints& c) {
  SearchSpace sp;
  const auto& m = base.model;
  const auto fw = framework_space(c.framework);
  sp.framework = c.framework;
  auto held = [&](const char* k) { return c.fixed.count(k) > 0; };
  for (const auto& k : c.fixed) sp.fixed.push_back(k);
  for (int t = 1; t <= std::min(base.hardware.gpus_per_node, 16); t *= 2) sp.tp.push_back(t);
  sp.cp = fw.context_parallel ? std::vector<int>{1, 2, 4} : std::vector<int>{1};
  for (int p = 1; p <= std::min(m.layers, 64); p *= 2) sp.pp.push_back(p);
  sp.ep = {1};
  if (m.is_moe())
    for (int e = 2; e <= m.moe->experts; e *= 2) sp.ep.push_back(e);
  sp.micro_batch = {1, 2, 4, 8, 16};
  sp.vpp = {2, 3, 4, 5, 6, 8, 10};
  sp.schedules = fw.schedules;
  sp.recompute = fw.recompute;
  const auto& p = base.parallel;
  if (held("parallel.tp")) sp.tp = {p.tp};
  if (held("parallel.cp")) sp.cp = {p.cp};
  if (held("parallel.pp")) sp.pp = {p.pp};
  if (held("parallel.ep")) sp.ep = {p.ep};
  if (held("parallel.vpp")) sp.vpp = {p.vpp};
  if (held("training.micro_batch")) sp.micro_batch = {base.training.micro_batch};
  if (held("schedule.name")) sp.schedules = {base.schedule.name};
  if (held("features.recompute")) sp.recompute = {base.features.recompute};
  if (held("parallel.dp")) sp.dp = p.dp;
  if (held("parallel.sequence_parallel")) sp.sequence_parallel = p.sequence_parallel ? 1 : 0;
  // DualPipe's F&B pair changes with its arrangement only where the pair carries EP transfers
  // (step/op_items.cpp): an MoE model with ep > 1 under DualPipe or DualPipeV (a ZeRO-2/3 base
  // searches its sharding instead, enumerate_layouts).
  const bool ep_searched = std::any_of(sp.ep.begin(), sp.ep.end(), [](int e) { return e > 1; });
  if (m.is_moe() && ep_searched && p.zero() < 2 &&
      (has(sp.schedules, config::ScheduleKind::dualpipe) || has(sp.schedules, config::ScheduleKind::dualpipev)))
    sp.fb_rearrange = held("moe.fb_rearrange") ? std::vector<int>{base.moe.fb_rearrange ? 1 : 0} : std::vector<int>{1, 0};
  sp.overlap_ep_comm = m.is_moe() && ep_searched && !held("moe.overlap_ep_comm") &&
                       (has(sp.schedules, config::ScheduleKind::interleaved_1f1b) ||
                        (has(sp.schedules, config::ScheduleKind::one_f_one_b) && has(sp.pp, 1)));
  const bool block_method = c.framework == Framework::megatron || c.framework == Framework::any;
  const bool block_held = held("features.recompute") || held("features.recompute_num_layers");
  // Holding N > 0 holds full recompute too: the block method is a form of it.
  if (held("features.recompute_num_layers") && base.features.recompute_num_layers > 0) sp.recompute = {config::Recompute::full};
  sp.recompute_num_layers = block_method && has(sp.recompute, config::Recompute::full) && !block_held &&
                            base.features.model_code == config::ModelCode::megatron &&
                            base.features.recompute_every <= 1 && !m.is_moe();
  sp.keep_recompute_num_layers = block_held || block_method;
  (void)gpus;
  return sp;
}

std::string describe(const SearchSpace& sp) {
  auto ints = [](const char* name, const std::vector<int>& v) {
    std::string s = name;
    for (std::size_t i = 0; i < v.size(); ++i) {
      s += i ? "," : " ";   // two appends: GCC 12's -Wrestrict misfires on "literal" + std::string&& here
      s += std::to_string(v[i]);
    }
    return s;
  };
  std::string s = ints("tp", sp.tp) + " | " + ints("cp", sp.cp) + " | " + ints("pp", sp.pp) + " | " +
                  (sp.dp > 0 ? "dp " + std::to_string(sp.dp) : std::string("dp = gpus / (tp cp pp)")) + " | " +
                  ints("ep", sp.ep) + " | " + ints("mb", sp.micro_batch) + " | schedules";
  for (std::size_t i = 0; i < sp.schedules.size(); ++i) {
    s += i ? "," : " ";
    s += config::to_string(sp.schedules[i]);
  }
  if (has(sp.schedules, config::ScheduleKind::interleaved_1f1b)) s += " (" + ints("vpp", sp.vpp) + ")";
  if (!sp.fb_rearrange.empty()) {   // MoE with EP under dualpipe / dualpipev
    s += " (moe.fb_rearrange";
    for (std::size_t i = 0; i < sp.fb_rearrange.size(); ++i) {
      s += i ? "," : " ";
      s += sp.fb_rearrange[i] ? "true" : "false";
    }
    s += ")";
  }
  if (sp.overlap_ep_comm) s += " (moe.overlap_ep_comm true,false)";
  s += " | recompute";
  for (std::size_t i = 0; i < sp.recompute.size(); ++i) s += (i ? "," : " ") + std::string(config::to_string(sp.recompute[i]));
  if (sp.recompute_num_layers) s += " (full: every layer, or the first 1/4, 1/2, 3/4 of each chunk's)";
  s += " | framework " + std::string(to_string(sp.framework));
  if (!sp.fixed.empty()) {
    s += " | held by --set:";
    for (const auto& k : sp.fixed) s += " " + k;
  }
  return s;
}

std::vector<config::Scenario> enumerate_layouts(const config::Scenario& base, int gpus, const SearchConstraints& c) {
  std::vector<config::Scenario> out;
  const auto& m = base.model;
  const SearchSpace sp = search_space(base, gpus, c);
  const bool schedule_held = c.fixed.count("schedule.name") > 0;
  const bool held_overlap = c.fixed.count("moe.overlap_ep_comm") > 0;
  for (int tp : sp.tp)
    for (int cp : sp.cp)
      for (int pp : sp.pp) {
        if (gpus % (tp * cp * pp) != 0) continue;
        const int dp = gpus / (tp * cp * pp);
        if (sp.dp > 0 && dp != sp.dp) continue;
        for (int ep : sp.ep) {
          if (ep > 1 && dp % ep != 0) continue;
          for (int mb : sp.micro_batch)
            for (auto kind : sp.schedules) {
              const bool interleaved = kind == config::ScheduleKind::interleaved_1f1b;
              // No pipeline: one schedule (unless the user holds one).
              if (pp == 1 && !schedule_held && kind != config::ScheduleKind::one_f_one_b) continue;
              const std::vector<int> vs = interleaved ? sp.vpp : std::vector<int>{1};
              for (int v : vs) {
                bool full_valid = true;   // the shape rules do not read N: a block variant of an invalid layout is left out
                for (const auto& [rc, block] : recompute_choices(sp, base.features.recompute_num_layers, m.layers, pp * schedules::chunks_for(config::to_string(kind), v))) {
                  if (rc == config::Recompute::full && block > 0 && sp.recompute_num_layers && !full_valid) continue;
                  config::Scenario s = base;
                  s.gpus = gpus;
                  s.parallel.tp = tp;
                  s.parallel.cp = cp;
                  s.parallel.pp = pp;
                  s.parallel.dp = dp;
                  s.parallel.ep = ep;
                  s.parallel.vpp = v;
                  s.parallel.first_stage_layers = 0;
                  s.parallel.last_stage_layers = 0;
                  s.parallel.stage_layers.clear();
                  const int vstages = pp * schedules::chunks_for(config::to_string(kind), v);
                  if (pp > 1 && pp == base.parallel.pp && kind == base.schedule.name && v == base.parallel.vpp) {
                    // The scenario's own pipeline: its own split too (the user's, e.g. the DeepSeek-V3
                    // report's 15 stages of 4 layers and a last stage of 1).
                    s.parallel.first_stage_layers = base.parallel.first_stage_layers;
                    s.parallel.last_stage_layers = base.parallel.last_stage_layers;
                    s.parallel.stage_layers = base.parallel.stage_layers;
                  } else if (pp > 1 && m.layers % vstages != 0 && (m.layers + 2) % vstages == 0 &&
                             (m.layers + 2) / vstages >= 2) {
                    // Layers that do not split evenly: one layer fewer on the first and the
                    // last stage when that makes the rest even (the Llama 3 paper, §3.3.2,
                    // balances embedding and LM head this way: 126 = 3 + 30 x 4 + 3).
                    s.parallel.first_stage_layers = (m.layers + 2) / vstages - 1;
                    s.parallel.last_stage_layers = s.parallel.first_stage_layers;
                  }
                  s.parallel.sequence_parallel = sp.sequence_parallel >= 0 ? sp.sequence_parallel == 1 : tp > 1;
                  s.training.micro_batch = mb;
                  s.schedule.name = kind;
                  s.schedule.costs.reset();
                  s.features.recompute = rc;
                  if (rc != config::Recompute::full) {   // only full recompute skips blocks or checkpoints a layer count
                    s.features.recompute_every = 1;
                    s.features.recompute_num_layers = 0;
                  } else if (block >= 0) {
                    s.features.recompute_num_layers = block;
                  }
                  if (rc == config::Recompute::full && block == 0 && sp.recompute_num_layers)
                    full_valid = config::validate(s).empty();
                  // Megatron's combined 1F1B (moe.overlap_ep_comm) exists for an MoE model with ep > 1 under
                  // interleaved-1f1b (or 1f1b without a pipeline) and no full recompute.
                  const bool combinable = step::overlap_ep_comm_applies(s);
                  if (!combinable) s.moe.overlap_ep_comm = false;
                  if (base.parallel.zero() >= 2) {
                    // An FSDP/ZeRO scenario (docs/fsdp.md): the ZeRO stage and the HSDP shard degree
                    // too: full sharding, or shard within one NVLink domain and replicate across.
                    std::vector<int> shards = {0};
                    const int in_node = base.hardware.gpus_per_node / std::max(1, tp * cp);
                    if (in_node > 1 && in_node < dp && dp % in_node == 0) shards.push_back(in_node);
                    for (int zs : {1, 2, 3})
                      for (int sd : shards) {
                        config::Scenario z = s;
                        z.parallel.zero_stage = zs;
                        z.parallel.distributed_optimizer = true;
                        z.parallel.shard_degree = sd;
                        if (zs < 3 && z.features.offload == config::Offload::params) z.features.offload = config::Offload::none;
                        // ZeRO-3 as the base runs it (its ZeRO-1/2 variants never Megatron-FSDP, which needs stage 3).
                        z.features.megatron_fsdp = zs == 3 && zero3_as_megatron_fsdp(base);
                        out.push_back(std::move(z));
                      }
                    continue;
                  }
                  // MoE with EP (docs/moe-dualpipe.md): also Megatron's all-to-all vs DeepEP's
                  // dispatch, and DeepSeek-V3's memory measures with no full recompute.
                  if (m.is_moe() && ep > 1) {
                    std::vector<config::Scenario> vs2{s};
                    config::Scenario d = s;
                    d.moe.dispatcher = s.moe.dispatcher == config::MoeDispatcher::deepep ? config::MoeDispatcher::alltoall
                                                                                          : config::MoeDispatcher::deepep;
                    vs2.push_back(d);
                    if (rc == config::Recompute::none && !(s.moe.recompute_norm_up_proj && s.moe.fp8_activation_cache))
                      for (std::size_t i = 0, n0 = vs2.size(); i < n0; ++i) {
                        config::Scenario mm = vs2[i];
                        mm.moe.recompute_norm_up_proj = true;
                        mm.moe.fp8_activation_cache = true;
                        vs2.push_back(mm);
                      }
                    // Megatron's EP all-to-all overlap, on and off, unless the user holds it.
                    if (combinable && !held_overlap)
                      for (std::size_t i = 0, n0 = vs2.size(); i < n0; ++i) {
                        config::Scenario o = vs2[i];
                        o.moe.overlap_ep_comm = !o.moe.overlap_ep_comm;
                        vs2.push_back(o);
                      }
                    // DualPipe / DualPipeV: the F&B pair as the report's Figure 4 or alternated.
                    const bool dual = kind == config::ScheduleKind::dualpipe || kind == config::ScheduleKind::dualpipev;
                    if (dual && !sp.fb_rearrange.empty()) {
                      for (const auto& x : vs2)
                        for (int fb : sp.fb_rearrange) {
                          config::Scenario y = x;
                          y.moe.fb_rearrange = fb == 1;
                          out.push_back(std::move(y));
                        }
                      continue;
                    }
                    for (auto& x : vs2) out.push_back(std::move(x));
                    continue;
                  }
                  // Optimizer post-validation changes the step only where one step's ranks finish at
                  // different times and the next step can start early: ZB-H2 and ZB-V (Qi et al. 2024 §4).
                  const bool post_validation_matters =
                      pp > 1 && (kind == config::ScheduleKind::zb_h2 || kind == config::ScheduleKind::zb_v);
                  if (post_validation_matters && !s.features.optimizer_post_validation) {
                    config::Scenario pv = s;
                    pv.features.optimizer_post_validation = true;
                    out.push_back(std::move(s));
                    out.push_back(std::move(pv));
                  } else {
                    out.push_back(std::move(s));
                  }
                }
              }
            }
        }
      }
  return out;
}

double memory_lower_bound(const config::Scenario& s) {
  // The lowering allocates a (micro-batch, stage)'s activations when its
  // forward starts and frees them when its backward ends (W stashes later),
  // in the order of the rank's compute stream. So right after any plain
  // forward, a rank holds at least the activations of every (micro-batch,
  // stage) whose plain forward it has run and whose backward it has not
  // started. DualPipe's F&B halves are left out (their net change lands at
  // the op's end), which only lowers the count.
  const std::string name = config::to_string(s.schedule.name);
  const auto sched = schedules::generate(
      name, step::pipeline_shape(s));
  const int S = sched.stages;
  const auto layers = step::split_layers(s, S);
  const bool autocast = s.training.master_weights == config::MasterWeights::fp32_autocast;
  const models::RankShape sh = models::rank_shape(s);
  // Activation bytes of one micro-batch through each stage, truncated per
  // layer as the lowering does.
  std::vector<std::int64_t> act(S, 0);
  {
    std::int64_t dense = -1, moe = -1, dense_kept = -1, moe_kept = -1;
    for (int st = 0; st < S; ++st) {
      if (st == 0) act[st] += static_cast<std::int64_t>(models::embedding_activation_bytes(s.model, sh));
      for (int l : layers[st]) {
        std::int64_t& c = !models::checkpointed(sh, l) && sh.recompute != config::Recompute::none
                              ? (s.model.is_moe_layer(l) ? moe_kept : dense_kept)   // features.recompute_every
                              : (s.model.is_moe_layer(l) ? moe : dense);
        if (c < 0) c = static_cast<std::int64_t>(models::activation_bytes(s.model, l, sh));
        act[st] += c;
      }
      if (st == S - 1) act[st] += static_cast<std::int64_t>(models::head_activation_bytes(s.model, sh));
    }
  }
  // The loss's transients on the last stage (models::HeadMemory), on top of what is held while its
  // head's forward / backward runs, as the lowering's head passes hold them.
  const auto loss_mem = models::head_memory(s.model, sh);
  double best = 0;
  std::vector<char> inflight;
  const int m = s.microbatches();
  for (const auto& ops : sched.order) {
    std::vector<int> stages;   // the rank's, in the order its ops first name them
    std::vector<char> seen(S, 0);
    auto hold = [&](int st) {
      if (st < 0 || seen[st]) return;
      seen[st] = 1;
      stages.push_back(st);
    };
    inflight.assign(static_cast<std::size_t>(m) * S, 0);
    std::int64_t cur = 0, peak = 0;
    for (const auto& op : ops) {
      hold(op.stage);
      hold(op.stage_b);
      auto release = [&](int mb, int st) {
        char& f = inflight[static_cast<std::size_t>(mb) * S + st];
        if (f) { f = 0; cur -= act[st]; }
      };
      auto transient = [&](int st, double bytes) {
        if (st == S - 1) peak = std::max(peak, cur + static_cast<std::int64_t>(bytes));
      };
      if (op.kind == schedules::OpKind::F) {
        inflight[static_cast<std::size_t>(op.microbatch) * S + op.stage] = 1;
        cur += act[op.stage];
        peak = std::max(peak, cur);
        transient(op.stage, loss_mem.forward_bytes());
      } else if (op.kind == schedules::OpKind::B) {
        transient(op.stage, loss_mem.backward_bytes());
        release(op.microbatch, op.stage);
      } else if (op.kind == schedules::OpKind::FB) {
        transient(op.stage_b, loss_mem.backward_bytes());
        release(op.microbatch_b, op.stage_b);
      }
    }
    step::HeldLayers held = step::held_layers(layers, stages);
    std::sort(held.layers.begin(), held.layers.end());
    const auto st = models::rank_static_memory(s, held.layers, held.embedding, held.head, autocast);   // as the step
    // Gradients the backward allocates (zero_grad(set_to_none): the plain PyTorch recipe, PyTorch FSDP;
    // step/builder.cpp) are not held at the activations' peak: left out of the bound. DDP's buckets (the plain
    // recipe with data parallelism) stay.
    const bool lazy = models::grads_only_in_backward(s);
    best = std::max(best, st.params + (lazy ? 0.0 : st.grads) + st.optimizer + static_cast<double>(peak) +
                              step::kRuntimeReserveBytes);
  }
  return best;
}

bool zero3_as_megatron_fsdp(const config::Scenario& base) {
  return base.features.megatron_fsdp ||
         (base.parallel.zero() < 3 && base.features.model_code == config::ModelCode::megatron);
}

double step_time_lower_bound(const config::Scenario& s) {
  const std::string name = config::to_string(s.schedule.name);
  const auto sched = schedules::generate(
      name, step::pipeline_shape(s));
  const int S = sched.stages;
  const auto layers = step::split_layers(s, S);
  hardware::CostModel cost(s.hardware, s.training.precision, s.calibration ? &*s.calibration : nullptr,
                           s.features.cuda_graphs);
  const models::RankShape sh = models::rank_shape(s);
  layer::configure_cost_model(s, sh, cost);   // the lowering's GEMM clock and group pace (LayerCosts::place)
  // Per stage, one micro-batch: all compute (fw, bw, weight grad, recompute),
  // and the part on the dependency chain (forward; recompute + backward).
  struct Cost { double all = 0, chain = 0; };
  // GPU execution time only: the lowering times a run of kernels as
  // max(execution + gaps, host issue) (CostModel::stream_time), never below
  // the execution alone; launch overhead may hide behind it.
  auto exec = [&](const hardware::Kernel& k) { return cost.time(k) - cost.launch_time(k); };
  auto seconds = [&](const models::LayerKernels& ks) {
    Cost c;
    for (const auto* v : {&ks.f, &ks.b, &ks.r})
      for (const auto& k : *v) c.chain += exec(k);
    c.all = c.chain;
    for (const auto& k : ks.w) c.all += exec(k);
    return c;
  };
  // Per kind of layer (dense / MoE) and whether it is checkpointed (models::layer_shape), as
  // layer::LayerCosts::layer_cost.
  Cost cached[2][2] = {{{-1, -1}, {-1, -1}}, {{-1, -1}, {-1, -1}}};
  std::vector<Cost> per_stage(S);
  auto add = [](Cost& a, const Cost& b) { a.all += b.all; a.chain += b.chain; };
  for (int st = 0; st < S; ++st) {
    if (st == 0) add(per_stage[st], seconds(models::embedding_kernels(s.model, sh)));
    for (int l : layers[st]) {
      const bool ckpt = models::checkpointed(sh, l);
      Cost& c = cached[s.model.is_moe_layer(l) ? 1 : 0][ckpt ? 1 : 0];
      if (c.all < 0) c = seconds(models::layer_kernels(s.model, l, models::layer_shape(sh, l)));
      add(per_stage[st], c);
    }
    if (st == S - 1) add(per_stage[st], seconds(models::head_kernels(s.model, sh)));
  }
  // (1) Per rank: every (micro-batch, stage) it runs a forward of, once each,
  // on one compute stream. (2) One micro-batch's forward through every stage
  // and its backward back: a chain of dependencies.
  double best = 0;
  for (const auto& ops : sched.order) {
    double t = 0;
    for (const auto& op : ops)
      if (op.kind == schedules::OpKind::F || op.kind == schedules::OpKind::FB) t += per_stage[op.stage].all;
    best = std::max(best, t);
  }
  // (2) holds for one step's makespan; with optimizer post-validation the steady-state period may be
  // shorter than one micro-batch's round trip (the next step's forwards fill its wait).
  double chain = 0;
  for (const auto& c : per_stage) chain += c.chain;
  if (!s.features.optimizer_post_validation) best = std::max(best, chain);
  // The lowering rounds each segment to whole nanoseconds: stay below.
  return best * (1 - 1e-9) - 1e-6;
}

std::string layout_label(const config::Scenario& s) {
  const auto& p = s.parallel;
  std::string l = "tp" + std::to_string(p.tp) + " pp" + std::to_string(p.pp) + " dp" + std::to_string(p.dp);
  if (p.cp > 1) l += " cp" + std::to_string(p.cp);
  if (p.ep > 1) l += " ep" + std::to_string(p.ep);
  if (p.ep > 1 && s.moe.dispatcher == config::MoeDispatcher::deepep) l += " deepep";
  if (s.moe.recompute_norm_up_proj && s.moe.fp8_activation_cache) l += " ds-mem";
  if (p.ep > 1 && s.model.is_moe() && !s.moe.fb_rearrange &&
      (s.schedule.name == config::ScheduleKind::dualpipe || s.schedule.name == config::ScheduleKind::dualpipev))
    l += " fb-alternated";   // the F&B pair's segments alternated, not as the report's Figure 4
  if (s.moe.overlap_ep_comm) l += " a2a-overlap";   // Megatron's combined 1F1B
  if (p.vpp > 1) l += " vpp" + std::to_string(p.vpp);
  l += " mb" + std::to_string(s.training.micro_batch);
  if (p.zero() >= 2) l += " zero" + std::to_string(p.zero());   // ZeRO-2/3 (docs/fsdp.md)
  if (p.shard_degree > 0 && p.shard_degree != p.dp) l += " shard" + std::to_string(p.shard_degree);
  if (p.first_stage_layers > 0 || p.last_stage_layers > 0)
    l += " (first/last " + std::to_string(p.first_stage_layers) + "/" + std::to_string(p.last_stage_layers) + ")";
  if (s.features.optimizer_post_validation) l += " post-val";
  // Megatron's block recompute: full recompute of the first N layers of each chunk only.
  if (s.features.recompute == config::Recompute::full && s.features.recompute_num_layers > 0)
    l += " rc-layers" + std::to_string(s.features.recompute_num_layers);
  return l;
}

Objectives objectives(const step::StepResult& r) {
  Objectives o;
  o.gpus = r.scenario.gpus;
  const double tokens = r.scenario.training.tokens_to_train;
  // With a token budget, the run's wall clock (interruptions, restarts and saves included:
  // step/training_run.h), which grows with the GPU count at the same step; else seconds per token.
  // A run that does not finish ranks last on both.
  if (tokens > 0 && !r.run.sim.finishes) {
    o.time_s = o.cost = std::numeric_limits<double>::infinity();
    return o;
  }
  o.time_s = tokens > 0 && r.days_to_train > 0 ? r.days_to_train * 86400.0
             : r.tokens_per_s > 0             ? (tokens > 0 ? tokens : 1.0) / r.tokens_per_s
                                              : 0;
  o.cost = r.cost_usd > 0 ? r.cost_usd : o.gpus * o.time_s;
  return o;
}

double rank_key(const step::StepResult& r, RankBy by) {
  switch (by) {
    case RankBy::step: return r.step_time_s;
    case RankBy::days: return objectives(r).time_s;
    case RankBy::cost: return objectives(r).cost;
  }
  return r.step_time_s;
}

std::vector<bool> pareto_front(const std::vector<Objectives>& pts) {
  std::vector<bool> front(pts.size(), true);
  for (std::size_t i = 0; i < pts.size(); ++i)
    for (std::size_t j = 0; j < pts.size() && front[i]; ++j) {
      if (i == j) continue;
      const auto& a = pts[j];
      const auto& b = pts[i];
      const bool no_worse = a.time_s <= b.time_s && a.gpus <= b.gpus && a.cost <= b.cost;
      const bool better = a.time_s < b.time_s || a.gpus < b.gpus || a.cost < b.cost;
      if (no_worse && better) front[i] = false;
    }
  return front;
}

// Above step::kMaxStepTasks (docs/scenario.md, "Limits on work and output"): simulate
// refuses the point in constant time; nothing may play its schedule before.
static bool over_work_cap(const config::Scenario& s, bool per_layer) {
  return step::estimate_work(s, per_layer).tasks > step::kMaxStepTasks;
}

PlanResult plan(const config::Scenario& base, int gpus, const PlanOptions& opt, const Progress& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  PlanResult res;
  res.gpus = gpus;
  res.hardware = base.hardware_ref.empty() ? base.hardware.name : base.hardware_ref;
  auto cands = enumerate_layouts(base, gpus, opt.constraints);
  res.searched = describe(search_space(base, gpus, opt.constraints));
  if (opt.shard.active()) {   // the K-th contiguous block of the enumeration (parts merge by `mfusim merge`)
    const auto [b, e] = shard_range(cands.size(), opt.shard);
    cands = std::vector<config::Scenario>(std::make_move_iterator(cands.begin() + static_cast<std::ptrdiff_t>(b)),
                                          std::make_move_iterator(cands.begin() + static_cast<std::ptrdiff_t>(e)));
  }
  res.considered = cands.size();
  // Shape rules and the memory bound in parallel too: at 16k GPUs the bound
  // plays long schedules.
  std::vector<char> verdict(cands.size(), 0);   // 0 simulate, 1 invalid, 2 pruned
  parallel_for(
      cands.size(),
      [&](std::size_t i) {
        if (!config::validate(cands[i]).empty()) verdict[i] = 1;
      },
      {}, opt.threads);
  // The whole search's work, before any bound plays a schedule (docs/scenario.md, "Limits on
  // work and output"): each point is capped by simulate, the sum here at 10 x that cap.
  double total_tasks = 0;
  std::size_t valid_points = 0;
  for (std::size_t i = 0; i < cands.size(); ++i)
    if (verdict[i] == 0) {
      ++valid_points;
      total_tasks += std::min(step::estimate_work(cands[i], opt.per_layer).tasks, step::kMaxStepTasks);
    }
  if (total_tasks > 10 * step::kMaxStepTasks) {
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "mfusim: error: the plan is too large to simulate: %zu layouts of at least %.3g tasks in all, "
                  "above the limit of %.3g (docs/scenario.md, \"Limits on work and output\"); use fewer "
                  "micro-batches per step (a smaller training.global_batch or a larger training.micro_batch)",
                  valid_points, total_tasks, 10 * step::kMaxStepTasks);
    throw step::WorkLimitError(buf);
  }
  parallel_for(
      cands.size(),
      [&](std::size_t i) {
        // A point above the work cap goes straight to simulate, which refuses it at once
        // with its reason (the bound plays the whole schedule: not at that size).
        if (verdict[i] != 0 || over_work_cap(cands[i], opt.per_layer)) return;
        if (opt.prune && memory_lower_bound(cands[i]) + opt.headroom_bytes > cands[i].hardware.hbm_bytes) verdict[i] = 2;
      },
      {}, opt.threads);
  std::vector<config::Scenario> todo;
  for (std::size_t i = 0; i < cands.size(); ++i) {
    if (verdict[i] == 1) ++res.invalid;
    else if (verdict[i] == 2) ++res.pruned;
    else todo.push_back(std::move(cands[i]));
  }
  cands.clear();
  std::vector<PlanPoint> pts(todo.size());
  std::vector<char> ok(todo.size(), 0);
  std::vector<std::string> why(todo.size());   // the error of a failed point
  // Fits with the headroom: the simulated peak plus the memory to keep free.
  auto fits = [&](const step::StepResult& r) {
    if (!r.memory.fits) return false;
    return opt.headroom_bytes <= 0 ||
           r.memory.peak_gib * 1024.0 * 1024 * 1024 + opt.headroom_bytes <= r.scenario.hardware.hbm_bytes;
  };
  auto simulate_one = [&](std::size_t i) {
    step::SimulateOptions so;
    so.keep_timeline = false;
    so.per_layer = opt.per_layer;
    // The ranking needs the step time and the idle fraction, not its split into bubble and imbalance
    // (a second simulation per layout): plan's reports keep the idle time in `bubble`.
    so.split_imbalance = false;
    so.reserved_memory = false;   // ranked by the allocated peak
    try {
      pts[i].result = step::simulate(todo[i], so);
      pts[i].scenario = std::move(todo[i]);
      ok[i] = 1;
    } catch (const std::exception& e) {
      ok[i] = 0;
      why[i] = e.what();
      if (why[i].empty()) why[i] = "unknown error";
    }
  };
  if (opt.keep == 0 || !opt.bound_time) {
    res.simulated = todo.size();
    parallel_for(todo.size(), simulate_one, progress, opt.threads);
  } else {
    // Branch and bound: simulate in order of the step-time lower bound, in
    // batches; stop when the next bound exceeds the keep-th best fitting step.
    std::vector<double> lb(todo.size(), 0);
    parallel_for(
        todo.size(),
        [&](std::size_t i) { lb[i] = over_work_cap(todo[i], opt.per_layer) ? 0.0 : step_time_lower_bound(todo[i]); },
        {}, opt.threads);
    std::vector<std::size_t> order(todo.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return lb[a] < lb[b]; });
    std::vector<double> best;   // fitting step times so far, ascending, at most keep
    const std::size_t batch = 64;
    std::size_t next = 0;
    while (next < order.size()) {
      if (best.size() >= opt.keep && lb[order[next]] > best.back()) break;
      const std::size_t end = std::min(order.size(), next + batch);
      const std::size_t done_before = next;
      parallel_for(
          end - next, [&](std::size_t k) { simulate_one(order[next + k]); },
          progress ? Progress([&](std::size_t d, std::size_t) { progress(done_before + d, order.size()); }) : Progress{},
          opt.threads);
      for (std::size_t k = next; k < end; ++k) {
        const std::size_t i = order[k];
        if (!ok[i] || !fits(pts[i].result)) continue;
        best.insert(std::upper_bound(best.begin(), best.end(), pts[i].result.step_time_s), pts[i].result.step_time_s);
        if (best.size() > opt.keep) best.pop_back();
      }
      next = end;
    }
    res.simulated = next;
    res.skipped = order.size() - next;
    if (progress && res.skipped > 0) progress(order.size(), order.size());
    // Drop the unsimulated points (they hold no result).
    // Keep enumeration order so that ties rank as without the bound.
    std::vector<std::size_t> ran(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(next));
    std::sort(ran.begin(), ran.end());
    std::vector<PlanPoint> kept;
    std::vector<char> kept_ok;
    std::vector<std::string> kept_why;
    for (std::size_t i : ran) {
      kept.push_back(std::move(pts[i]));
      kept_ok.push_back(ok[i]);
      kept_why.push_back(std::move(why[i]));
    }
    pts = std::move(kept);
    ok = std::move(kept_ok);
    why = std::move(kept_why);
  }
  for (std::size_t i = 0; i < pts.size(); ++i) {
    if (!ok[i]) {
      ++res.failed;
      ++res.failures[why[i]];
      continue;
    }
    if (!fits(pts[i].result)) continue;
    ++res.fitting;
    res.ranked.push_back(std::move(pts[i]));
  }
  std::stable_sort(res.ranked.begin(), res.ranked.end(), [](const PlanPoint& a, const PlanPoint& b) {
    return a.result.step_time_s < b.result.step_time_s;
  });
  if (opt.keep > 0 && res.ranked.size() > opt.keep) res.ranked.resize(opt.keep);
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

}  // namespace mfusim::study
