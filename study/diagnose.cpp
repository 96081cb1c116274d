#include "study/diagnose.h"

#include <algorithm>
#include <cmath>

#include "layer/moe_dispatch.h"
#include "models/rank_shape.h"
#include "step/lower.h"
#include "step/simulate.h"
#include "study/parallel_map.h"
#include "study/plan.h"

namespace mfusim::study {

namespace {

std::vector<std::pair<const char*, double>> parts(const step::Breakdown& b) {
  return {{"forward", b.forward},
          {"backward", b.backward},
          {"recompute", b.recompute},
          {"optimizer", b.optimizer},
          {"tp_comm_exposed", b.tp_comm_exposed},
          {"pp_comm_exposed", b.pp_comm_exposed},
          {"dp_comm_exposed", b.dp_comm_exposed},
          {"ep_comm_exposed", b.ep_comm_exposed},
          {"cp_comm_exposed", b.cp_comm_exposed},
          {"bubble", b.bubble},
          {"imbalance", b.imbalance},
          {"dataloader", b.dataloader},
          {"gc", b.gc},
          {"launch_overhead", b.launch_overhead}};
}

std::string b2s(bool v) { return v ? "true" : "false"; }

// The breakdown parts each lever acts on (docs/levers.md); "shrinks" reports the
// one of these that shrank most. Pauses and loading on other pipeline ranks reach
// the reported rank as idle time, hence bubble next to gc and dataloader.
std::vector<std::string> targets(const std::string& lever) {
  if (lever == "flash attention") return {"forward", "backward", "recompute"};
  if (lever == "fused kernels") return {"forward", "backward", "launch_overhead"};
  if (lever == "overlap grad reduce" || lever == "overlap param gather") return {"dp_comm_exposed"};
  if (lever == "TP comm overlap") return {"tp_comm_exposed"};
  if (lever == "GC off") return {"gc", "bubble"};
  if (lever == "more dataloader workers") return {"dataloader", "bubble"};
  if (lever == "CUDA graphs") return {"launch_overhead"};
  if (lever == "larger micro-batch") return {"forward", "backward"};
  if (lever.rfind("precision fp8", 0) == 0) return {"forward", "backward", "recompute"};
  if (lever == "selective recompute" || lever == "no recompute" || lever == "per-op selective recompute" ||
      lever == "full recompute every 2nd block")
    return {"recompute"};
  if (lever.rfind("ZeRO", 0) == 0 || lever.rfind("offload", 0) == 0) return {"dp_comm_exposed", "optimizer"};
  if (lever == "fp8 weights (--fp8-param-gather)") return {"dp_comm_exposed"};
  if (lever == "DeepEP dispatcher" || lever == "EP degree" || lever == "F&B pair as DeepSeek-V3 Figure 4")
    return {"ep_comm_exposed"};
  if (lever == "balanced expert load") return {"forward", "backward", "ep_comm_exposed"};
  if (lever.rfind("NCCL", 0) == 0) return {"tp_comm_exposed", "dp_comm_exposed", "pp_comm_exposed", "ep_comm_exposed"};
  if (lever.rfind("power limit", 0) == 0) return {"forward", "backward", "recompute"};
  if (lever == "fused AdamW") return {"optimizer"};
  if (lever == "fp8 amax over tp x cp ranks") return {"forward", "backward", "dp_comm_exposed"};
  return {"bubble", "imbalance"};   // schedules, vpp and optimizer post-validation
}

// A lever's MFU against the base's peak (an fp8 lever's own MFU counts against
// the fp8 peak, which would rank a faster step lower).
double same_convention(const step::StepResult& r, const step::StepResult& base) {
  const double mine = r.scenario.hardware.peak_flops(r.scenario.training.precision);
  const double theirs = base.scenario.hardware.peak_flops(base.scenario.training.precision);
  return theirs > 0 ? r.mfu * mine / theirs : r.mfu;
}

// What one lever (its --set changes) did against the base: the fields a toggle lever and a
// planner lever share.
void fill_outcome(LeverResult& x, const std::vector<std::string>& changes, const step::StepResult& r,
                  const step::StepResult& base) {
  for (const auto& s : changes) x.change += (x.change.empty() ? "" : " ") + s;
  x.mfu_before = base.mfu;
  x.mfu_after = same_convention(r, base);
  x.delta_mfu = x.mfu_after - base.mfu;
  x.step_time_s = r.step_time_s;
  x.fits = r.memory.fits;
}

// The --set keys that turn `base` into the planner's layout `s` (those that differ).
std::vector<std::string> layout_changes(const config::Scenario& base, const config::Scenario& s) {
  std::vector<std::string> out;
  auto num = [&](const char* key, int a, int b) {
    if (a != b) out.push_back(std::string(key) + "=" + std::to_string(b));
  };
  const auto& p = base.parallel;
  const auto& q = s.parallel;
  num("parallel.tp", p.tp, q.tp);
  num("parallel.cp", p.cp, q.cp);
  num("parallel.pp", p.pp, q.pp);
  num("parallel.ep", p.ep, q.ep);
  num("parallel.vpp", p.vpp, q.vpp);
  num("parallel.first_stage_layers", p.first_stage_layers, q.first_stage_layers);
  num("parallel.last_stage_layers", p.last_stage_layers, q.last_stage_layers);
  if (p.sequence_parallel != q.sequence_parallel) out.push_back("parallel.sequence_parallel=" + b2s(q.sequence_parallel));
  num("training.micro_batch", base.training.micro_batch, s.training.micro_batch);
  if (base.schedule.name != s.schedule.name)
    out.push_back(std::string("schedule.name=") + config::to_string(s.schedule.name));
  if (base.features.recompute != s.features.recompute)
    out.push_back(std::string("features.recompute=") + config::to_string(s.features.recompute));
  num("features.recompute_every", base.features.recompute_every, s.features.recompute_every);
  num("features.recompute_num_layers", base.features.recompute_num_layers, s.features.recompute_num_layers);
  // The MoE variants the planner searches with EP (study/plan.cpp enumerate_layouts).
  if (base.moe.dispatcher != s.moe.dispatcher) out.push_back(std::string("moe.dispatcher=") + config::to_string(s.moe.dispatcher));
  if (base.moe.recompute_norm_up_proj != s.moe.recompute_norm_up_proj)
    out.push_back("moe.recompute_norm_up_proj=" + b2s(s.moe.recompute_norm_up_proj));
  if (base.moe.fp8_activation_cache != s.moe.fp8_activation_cache)
    out.push_back("moe.fp8_activation_cache=" + b2s(s.moe.fp8_activation_cache));
  if (base.moe.fb_rearrange != s.moe.fb_rearrange) out.push_back("moe.fb_rearrange=" + b2s(s.moe.fb_rearrange));
  if (base.moe.overlap_ep_comm != s.moe.overlap_ep_comm) out.push_back("moe.overlap_ep_comm=" + b2s(s.moe.overlap_ep_comm));
  return out;
}

// The layout levers, each a planner search with every other searched key held:
// recompute alone, micro-batch alone, and the whole layout (what the user
// did not hold with --set). Each returns its best fitting point, if any.
struct PlannerLever {
  const char* lever;
  std::vector<std::string> free;   // searched keys left free; empty: all but the user's
};

}  // namespace

std::string why_it_helps(const std::string& lever, const std::string& part) {
  if (lever == "layout that fits (planner)") return "the base does not fit in HBM; this is the fastest layout the planner found that does";
  if (lever.rfind("activation offloading", 0) == 0)
    return "frees the offloaded layers' activations from HBM (they cross the host link; time only where a window's compute is shorter than its transfer)";
  if (lever.rfind("power limit", 0) == 0)
    return "the SMs run at the clock the higher board limit leaves (GEMMs and attention; calibration [power], docs/cost-model.md §2e)";
  if (lever == "fp8 amax over tp x cp ranks")
    return "delayed scaling's amax all-reduce at each chunk's forward and backward end spans only the tensor- and "
           "context-parallel ranks (Megatron-Core's tp_only_amax_red): no rank waits for its data-parallel replicas "
           "every micro-batch, so the kernels run at the pace of a smaller group (docs/cost-model.md 2b)";
  if (lever == "fused AdamW")
    return "torch's fused AdamW reads and writes the optimizer states once (28-30 bytes per parameter) where the "
           "foreach implementation makes eight passes (80-82; run 37)";
  if (lever == "balanced expert load")
    return "every EP rank at the mean load instead of the slowest rank's (moe.imbalance): its experts' kernels and "
           "transfers shrink; Megatron buys it by dropping tokens at capacity factor 1 with padding "
           "(--moe-expert-capacity-factor 1 --moe-pad-expert-input-to-capacity), at a cost to quality";
  if (lever.rfind("fp8 weights", 0) == 0 && part != "dp_comm_exposed")
    return "no bf16 copy of the linear weights in HBM (a memory lever)";
  if (part == "bubble") return "fewer or shorter pipeline bubbles: more micro-batches per stage chunk, or a schedule that fills the idle slots";
  if (part == "recompute") return "less recomputed forward work in the backward pass (activations kept instead, where memory allows)";
  if (part == "forward" || part == "backward")
    return lever.rfind("precision fp8", 0) == 0 ? "matmuls run at the fp8 peak (about twice bf16 on Hopper and Blackwell); "
                                      "its MFU here counts against the base's bf16 peak"
                                    : "faster kernels: less memory traffic or larger, more efficient matmuls";
  if (part == "tp_comm_exposed") return "less tensor-parallel all-gather/reduce-scatter on the critical path";
  if (part == "pp_comm_exposed") return "stage-to-stage sends hidden behind compute or fewer of them";
  if (part == "dp_comm_exposed") return "gradient reduce / parameter gather hidden behind the backward pass or smaller";
  if (part == "ep_comm_exposed") return "less expert-parallel all-to-all on the critical path";
  if (part == "cp_comm_exposed") return "less context-parallel key/value exchange on the critical path";
  if (part == "launch_overhead") return "fewer kernel launches or launches hidden behind GPU work";
  if (part == "gc") return "no Python garbage-collector pauses stalling a rank (and, through it, the pipeline)";
  if (part == "dataloader") return "data loading off the training thread";
  if (part == "optimizer") return "a shorter optimizer step (sharded over more data-parallel ranks)";
  return "";
}

std::vector<std::pair<std::string, std::vector<std::string>>> lever_candidates(const config::Scenario& s) {
  std::vector<std::pair<std::string, std::vector<std::string>>> c;
  const auto& f = s.features;
  const auto& p = s.parallel;
  auto flag = [&](const char* lever, const char* key, bool current, bool better) {
    if (current != better) c.push_back({lever, {std::string(key) + "=" + b2s(better)}});
  };
  flag("flash attention", "features.flash_attention", f.flash_attention, true);
  flag("fused kernels", "features.fused_kernels", f.fused_kernels, true);
  if (s.parallel.dp * s.parallel.cp > 1) {
    flag("overlap grad reduce", "features.overlap_grad_reduce", f.overlap_grad_reduce, true);
    if (p.distributed_optimizer)
      flag("overlap param gather", "features.overlap_param_gather", f.overlap_param_gather, true);
  }
  if (p.tp > 1) flag("TP comm overlap", "features.tp_comm_overlap", f.tp_comm_overlap, true);
  if (p.pp > 1) flag("P2P comm overlap", "features.overlap_p2p_comm", f.overlap_p2p_comm, true);
  flag("GC off", "features.python_gc", f.python_gc, false);
  flag("CUDA graphs", "features.cuda_graphs", f.cuda_graphs, true);
  // torch's foreach AdamW (features.optimizer_foreach): AdamW(fused=True) steps in one pass.
  flag("fused AdamW", "features.optimizer_foreach", f.optimizer_foreach, false);
  if (f.dataloader_workers < 8) c.push_back({"more dataloader workers", {"features.dataloader_workers=8"}});
  // A board held below the power limit the calibration was measured at (a site's 500 W on a 700 W part):
  // the clock the measured limit leaves (docs/cost-model.md §2e).
  // (power_time_scale is 1 without a fit that speaks for this GPU, and above 1 only below the fit's limit.)
  if (s.calibration && hardware::power_time_scale(&*s.calibration, s.hardware) > 1.0) {
    char w[32];
    std::snprintf(w, sizeof w, "%.0f", s.calibration->power.limit_w);
    c.push_back({std::string("power limit ") + w + " W", {std::string("hardware.power_limit_w=") + w}});
  }
  // Larger micro-batch: double it when the batch still divides.
  const int mb2 = s.training.micro_batch * 2;
  if (s.training.global_batch % (mb2 * p.dp) == 0)
    c.push_back({"larger micro-batch", {"training.micro_batch=" + std::to_string(mb2)}});
  // Recompute level: one step lighter.
  // (recompute_every > 1 goes with full recompute only: a lever leaving full resets it.)
  auto leaving_full = [&](std::vector<std::string> sets) {
    if (f.recompute_every > 1) sets.push_back("features.recompute_every=1");
    if (f.recompute_num_layers > 0) sets.push_back("features.recompute_num_layers=0");
    return sets;
  };
  if (f.recompute == config::Recompute::full) c.push_back({"selective recompute", leaving_full({"features.recompute=selective"})});
  if (f.recompute != config::Recompute::none) c.push_back({"no recompute", leaving_full({"features.recompute=none"})});
  // FSDP (ZeRO-3) scenarios: torchtitan's lighter checkpointing (docs/fsdp.md).
  if (p.zero() == 3 && f.recompute == config::Recompute::full) {
    c.push_back({"per-op selective recompute", leaving_full({"features.recompute=selective-op"})});
    if (f.recompute_every == 1 && f.recompute_num_layers == 0)
      c.push_back({"full recompute every 2nd block", {"features.recompute_every=2"}});
  }
  // Fewer bubbles: another schedule or more chunks.
  if (p.pp > 1) {
    using K = config::ScheduleKind;
    if (s.schedule.name != K::interleaved_1f1b) {
      for (int v : {2, 4, 5}) c.push_back({"interleaved 1F1B", {"schedule.name=interleaved-1f1b", "parallel.vpp=" + std::to_string(v)}});
    } else {
      c.push_back({"more chunks (vpp)", {"parallel.vpp=" + std::to_string(p.vpp * 2)}});
    }
    for (const char* name : {"zb-h1", "zb-h2", "zb-v", "dualpipev", "zb-auto", "v-half", "v-min"})
      if (std::string(config::to_string(s.schedule.name)) != name) c.push_back({std::string("schedule ") + name, {std::string("schedule.name=") + name, "parallel.vpp=1"}});
    // Zero Bubble §4: ZB-H2 and ZB-V reach their period only when the optimizer's global check is
    // post-validated (the next step's forwards fill the cool-down).
    if (!f.optimizer_post_validation) {
      if (s.schedule.name == K::zb_h2 || s.schedule.name == K::zb_v)
        c.push_back({"optimizer post-validation", {"features.optimizer_post_validation=true"}});
      for (const char* name : {"zb-h2", "zb-v"})
        if (std::string(config::to_string(s.schedule.name)) != name)
          c.push_back({std::string("schedule ") + name + " + optimizer post-validation",
                       {std::string("schedule.name=") + name, "parallel.vpp=1", "features.optimizer_post_validation=true"}});
    }
  }
  // Precision: fp8 matmuls where the GPU has an fp8 peak.
  if (s.training.precision != config::Precision::fp8 && s.hardware.peak_flops_fp8 > 0)
    c.push_back({"precision fp8 (MFU vs bf16 peak)", {"training.precision=fp8"}});
  // Megatron's activation CPU offloading of half the layers, where its conditions hold (config/checks.cpp):
  // a memory lever (docs/cost-model.md 4d).
  if (f.activation_offload_layers == 0 && p.pp == 1 && s.schedule.name == config::ScheduleKind::one_f_one_b &&
      f.recompute == config::Recompute::none && !f.cuda_graphs && s.hardware.pcie_bandwidth > 0 && s.model.layers > 1)
    c.push_back({"activation offloading (half the layers)",
                 {"features.activation_offload_layers=" + std::to_string(s.model.layers / 2)}});
  // fp8 weights (Megatron's --fp8-param-gather) under a Transformer Engine fp8 recipe: no bf16 copy of
  // the linear weights (memory) and the parameter gathers in fp8 (config/checks.cpp's conditions).
  if (s.training.precision == config::Precision::fp8 && f.model_code != config::ModelCode::torchtitan &&
      s.training.master_weights != config::MasterWeights::fp32_autocast)
    flag("fp8 weights (--fp8-param-gather)", "features.fp8_params", f.fp8_params, true);
  // Delayed scaling's amax all-reduce over the data-parallel replicas (Megatron-Core's default): over the
  // tensor- and context-parallel ranks only (tp_only_amax_red).
  if (models::fp8_amax_over_dp(s))
    c.push_back({"fp8 amax over tp x cp ranks", {"features.fp8_amax_reduction=tp_cp"}});
  for (const char* a : {"ring", "tree"})
    if (std::string(config::to_string(f.nccl_algo)) != a) c.push_back({std::string("NCCL ") + a, {std::string("features.nccl_algo=") + a}});
  // MoE (docs/moe-dualpipe.md): DeepEP-style dispatch, DualPipe, the EP degree, DeepSeek's memory measures.
  if (s.model.is_moe() && p.ep > 1) {
    if (s.moe.dispatcher != config::MoeDispatcher::deepep) c.push_back({"DeepEP dispatcher", {"moe.dispatcher=deepep"}});
    if (p.pp > 1 && s.schedule.name != config::ScheduleKind::dualpipe)
      c.push_back({"schedule dualpipe", {"schedule.name=dualpipe", "parallel.vpp=1", "moe.overlap_ep_comm=false"}});
    // Megatron's EP all-to-all overlap (combined 1F1B) where its schedule has one.
    if (step::overlap_ep_comm_applies(s))
      flag("EP all-to-all overlap (combined 1F1B)", "moe.overlap_ep_comm", s.moe.overlap_ep_comm, true);
    for (int ep : {p.ep / 2, p.ep * 2})
      if (ep >= 1 && s.model.moe->experts % ep == 0 && (p.dp * p.cp * p.tp) % ep == 0)
        c.push_back({"EP degree", {"parallel.ep=" + std::to_string(ep)}});
    // What the slowest EP rank's load costs (moe.imbalance above 1): every rank at the mean load.
    if (layer::expert_load_imbalance(s) > 1.0) c.push_back({"balanced expert load", {"moe.imbalance=1.0"}});
    flag("recompute norm + MLA up-proj", "moe.recompute_norm_up_proj", s.moe.recompute_norm_up_proj, true);
    flag("fp8 activation cache", "moe.fp8_activation_cache", s.moe.fp8_activation_cache, true);
    // DualPipe's F&B pair arranged as the report's Figure 4: each transfer of one chain beside a
    // whole compute block of the other (step/emit.cpp fb_order).
    if (p.pp > 1 && (s.schedule.name == config::ScheduleKind::dualpipe || s.schedule.name == config::ScheduleKind::dualpipev))
      flag("F&B pair as DeepSeek-V3 Figure 4", "moe.fb_rearrange", s.moe.fb_rearrange, true);
  }
  return c;
}

Diagnosis diagnose(const std::string& path, const config::LoadOptions& lo, const Progress& progress) {
  Diagnosis d;
  const auto loaded = config::load_scenario(path, lo);
  step::SimulateOptions so;
  so.keep_timeline = false;
  so.reserved_memory = false;   // levers are judged on time and the allocated peak
  d.base = step::simulate(loaded.base, so);
  auto cands = lever_candidates(loaded.base);
  // Memory is the limit: shard more of the states (docs/fsdp.md).
  const auto& bp = loaded.base.parallel;
  if (!d.base.memory.fits && bp.dp * bp.cp > 1) {
    if (bp.zero() < 2) cands.push_back({"ZeRO-2 (shard gradients)", {"parallel.zero_stage=2"}});
    if (bp.zero() < 3) {
      // A Megatron scenario shards as Megatron-FSDP does (its bf16 shard beside the fp32 master, no FSDP2 copies);
      // torchtitan's block as FSDP2.
      std::vector<std::string> z3 = {"parallel.zero_stage=3"};
      if (zero3_as_megatron_fsdp(loaded.base)) z3.push_back("features.megatron_fsdp=true");
      cands.push_back({"ZeRO-3 / FSDP (shard parameters)", z3});
    }
    if (bp.zero() >= 1 && loaded.base.features.offload == config::Offload::none && loaded.base.hardware.pcie_bandwidth > 0)
      cands.push_back({"offload the optimizer", {"features.offload=optimizer"}});
  }
  std::vector<LeverResult> res(cands.size());
  // One byte per candidate, not std::vector<bool>: the workers below set their own entries at once, and
  // vector<bool> packs neighbours into one word (a data race that lost a lever now and then).
  std::vector<char> valid(cands.size(), 0);
  parallel_for(
      cands.size(),
      [&](std::size_t i) {
        const auto& [lever, sets] = cands[i];
        try {
          const auto sc = config::with_overrides(path, sets, lo);
          const auto r = step::simulate(sc, so);
          auto& x = res[i];
          x.lever = lever;
          fill_outcome(x, sets, r, d.base);
          const auto before = parts(d.base.breakdown), after = parts(r.breakdown);
          const auto want = targets(lever);
          for (bool targeted : {true, false}) {   // the lever's own parts first, else any part
            for (std::size_t k = 0; k < before.size(); ++k) {
              const bool is_target = std::find(want.begin(), want.end(), before[k].first) != want.end();
              const double shrink = before[k].second - after[k].second;
              if (is_target == targeted && shrink > x.shrinks_s) {
                x.shrinks_s = shrink;
                x.shrinks = before[k].first;
              }
            }
            if (!x.shrinks.empty()) break;
          }
          valid[i] = 1;
        } catch (const config::ConfigError&) {
          // Not applicable to this scenario (e.g. a schedule's shape rules): not a lever here.
        }
      },
      progress);
  // The layout levers from the planner (recompute, micro-batch, the whole
  // layout), each under the user's held keys; for a base that does not fit,
  // the whole-layout search is what makes it fit.
  {
    const auto user_fixed = fixed_keys(lo.overrides);
    const std::vector<std::string>& all = searched_keys();
    const std::vector<PlannerLever> planner_levers = {
        {"recompute (planner)", {"features.recompute", "features.recompute_num_layers"}},
        {"micro-batch (planner)", {"training.micro_batch"}},
        {d.base.memory.fits ? "layout (planner)" : "layout that fits (planner)", {}},
    };
    for (const auto& pl : planner_levers) {
      PlanOptions po;
      po.keep = 1;
      po.constraints.fixed = user_fixed;
      if (!pl.free.empty())
        for (const auto& k : all)
          if (std::find(pl.free.begin(), pl.free.end(), k) == pl.free.end()) po.constraints.fixed.insert(k);
      PlanResult pr;
      try {
        pr = plan(loaded.base, loaded.base.gpus, po);
      } catch (const std::exception&) {
        continue;
      }
      if (pr.ranked.empty()) continue;
      const auto& best = pr.ranked.front();
      const auto changes = layout_changes(loaded.base, best.scenario);
      if (changes.empty()) continue;   // the base is already the best of this search
      LeverResult x;
      x.lever = pl.lever;
      x.planner = true;
      const auto& r = best.result;
      fill_outcome(x, changes, r, d.base);
      const auto before = parts(d.base.breakdown), after = parts(r.breakdown);
      for (std::size_t k = 0; k < before.size(); ++k) {
        const double shrink = before[k].second - after[k].second;
        if (shrink > x.shrinks_s) {
          x.shrinks_s = shrink;
          x.shrinks = before[k].first;
        }
      }
      if (r.step_time_s < d.base.step_time_s || !d.base.memory.fits) {
        res.push_back(x);
        valid.push_back(1);
      }
    }
  }
  for (auto& x : res) {
    x.why = why_it_helps(x.lever, x.shrinks);
    if (!d.base.memory.fits && x.fits && x.lever != "layout that fits (planner)") {   // what makes a base that does not fit fit
      std::string fit;
      if (x.lever.rfind("recompute", 0) == 0 || x.lever.find("recompute") != std::string::npos)
        fit = "it fits: recomputing activations in the backward pass stores fewer of them";
      else if (x.lever.rfind("micro-batch", 0) == 0)
        fit = "it fits: a smaller micro-batch holds fewer activations per stage";
      else if (x.lever.rfind("precision fp8", 0) == 0)
        fit = "it fits at this precision";
      else
        fit = "it fits";
      x.why = fit + (x.why.empty() ? "" : "; " + x.why);
    }
  }
  // Keep the best variant of each lever name (e.g. the best vpp).
  for (std::size_t i = 0; i < res.size(); ++i) {
    if (!valid[i]) continue;
    auto it = std::find_if(d.levers.begin(), d.levers.end(), [&](const LeverResult& x) { return x.lever == res[i].lever; });
    if (it == d.levers.end()) d.levers.push_back(res[i]);
    else if ((res[i].fits && !it->fits) || (res[i].fits == it->fits && res[i].delta_mfu > it->delta_mfu)) *it = res[i];
  }
  std::stable_sort(d.levers.begin(), d.levers.end(), [](const LeverResult& a, const LeverResult& b) {
    if (a.fits != b.fits) return a.fits;
    return a.delta_mfu > b.delta_mfu;
  });
  return d;
}

}  // namespace mfusim::study
