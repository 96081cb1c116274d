#include "study/diagnose.h"

#include <algorithm>
#include <cmath>

#include "step/simulate.h"
#include "study/parallel_map.h"

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
  if (lever == "selective recompute" || lever == "no recompute") return {"recompute"};
  if (lever.rfind("NCCL", 0) == 0) return {"tp_comm_exposed", "dp_comm_exposed", "pp_comm_exposed", "ep_comm_exposed"};
  return {"bubble", "imbalance"};   // schedules, vpp and optimizer post-validation
}

}  // namespace

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
  if (f.dataloader_workers < 8) c.push_back({"more dataloader workers", {"features.dataloader_workers=8"}});
  // Larger micro-batch: double it when the batch still divides.
  const int mb2 = s.training.micro_batch * 2;
  if (s.training.global_batch % (mb2 * p.dp) == 0)
    c.push_back({"larger micro-batch", {"training.micro_batch=" + std::to_string(mb2)}});
  // Recompute level: one step lighter.
  if (f.recompute == config::Recompute::full) c.push_back({"selective recompute", {"features.recompute=selective"}});
  if (f.recompute != config::Recompute::none) c.push_back({"no recompute", {"features.recompute=none"}});
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
  for (const char* a : {"ring", "tree"})
    if (std::string(config::to_string(f.nccl_algo)) != a) c.push_back({std::string("NCCL ") + a, {std::string("features.nccl_algo=") + a}});
  return c;
}

Diagnosis diagnose(const std::string& path, const config::LoadOptions& lo, const Progress& progress) {
  Diagnosis d;
  const auto loaded = config::load_scenario(path, lo);
  step::SimulateOptions so;
  so.keep_timeline = false;
  d.base = step::simulate(loaded.base, so);
  const auto cands = lever_candidates(loaded.base);
  std::vector<LeverResult> res(cands.size());
  std::vector<bool> valid(cands.size(), false);
  parallel_for(
      cands.size(),
      [&](std::size_t i) {
        const auto& [lever, sets] = cands[i];
        try {
          const auto sc = config::with_overrides(path, sets, lo);
          const auto r = step::simulate(sc, so);
          auto& x = res[i];
          x.lever = lever;
          for (const auto& s : sets) x.change += (x.change.empty() ? "" : " ") + s;
          x.mfu_before = d.base.mfu;
          x.mfu_after = r.mfu;
          x.delta_mfu = r.mfu - d.base.mfu;
          x.step_time_s = r.step_time_s;
          x.fits = r.memory.fits;
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
          valid[i] = true;
        } catch (const config::ConfigError&) {
          // Not applicable to this scenario (e.g. a schedule's shape rules): not a lever here.
        }
      },
      progress);
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
