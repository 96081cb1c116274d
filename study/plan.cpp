#include "study/plan.h"

#include <algorithm>
#include <mutex>

#include "config/loader.h"
#include "models/accounting.h"
#include "report/simulate.h"
#include "schedules/lowering.h"
#include "schedules/schedule.h"
#include "study/parallel_map.h"

namespace mfusim::study {

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// Must match report/simulate.cpp's runtime reserve (a lower bound may not exceed it).
constexpr double kRuntimeReserveBytes = 2.0 * kGiB;
}  // namespace

std::vector<config::Scenario> enumerate_layouts(const config::Scenario& base, int gpus) {
  std::vector<config::Scenario> out;
  const auto& m = base.model;
  std::vector<int> tps;
  for (int t = 1; t <= std::min(base.hardware.gpus_per_node, 16); t *= 2) tps.push_back(t);
  std::vector<int> cps = {1, 2, 4};
  std::vector<int> pps;
  for (int p = 1; p <= std::min(m.layers, 64); p *= 2) pps.push_back(p);
  std::vector<int> eps = {1};
  if (m.is_moe())
    for (int e = 2; e <= m.moe->experts; e *= 2) eps.push_back(e);
  const std::vector<int> mbs = {1, 2, 4, 8};
  const std::vector<int> vpps = {2, 3, 4, 5, 6, 8};
  const config::Recompute recs[] = {config::Recompute::none, config::Recompute::selective, config::Recompute::full};
  for (int tp : tps)
    for (int cp : cps)
      for (int pp : pps) {
        if (gpus % (tp * cp * pp) != 0) continue;
        const int dp = gpus / (tp * cp * pp);
        for (int ep : eps) {
          if (ep > 1 && dp % ep != 0) continue;
          for (int mb : mbs)
            for (auto kind : config::all_schedules()) {
              const bool interleaved = kind == config::ScheduleKind::interleaved_1f1b;
              if (pp == 1 && kind != config::ScheduleKind::one_f_one_b) continue;   // no pipeline: one schedule
              const std::vector<int> vs = interleaved ? vpps : std::vector<int>{1};
              for (int v : vs)
                for (auto rc : recs) {
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
                  s.parallel.sequence_parallel = tp > 1;
                  s.training.micro_batch = mb;
                  s.schedule.name = kind;
                  s.schedule.costs.reset();
                  s.features.recompute = rc;
                  out.push_back(std::move(s));
                }
            }
        }
      }
  return out;
}

double memory_lower_bound(const config::Scenario& s) {
  // Rank 0 runs virtual stage 0 in every schedule: it holds at least that
  // stage's weights, gradients and optimizer state with the embedding, and
  // before its first backward it holds the activations of one micro-batch
  // through all of that stage's layers.
  const std::string name = config::to_string(s.schedule.name);
  const int stages = s.parallel.pp * schedules::chunks_for(name, s.parallel.vpp);
  const auto layers = schedules::split_layers(s, stages);
  const auto& l0 = layers.front();
  const bool autocast = s.training.master_weights == config::MasterWeights::fp32_autocast;
  const auto st = models::static_memory(s.model, l0, true, stages == 1, s.parallel.tp, s.parallel.ep, s.parallel.dp,
                                        s.parallel.distributed_optimizer, autocast);
  models::RankShape sh;
  sh.tp = s.parallel.tp;
  sh.cp = s.parallel.cp;
  sh.ep = s.parallel.ep;
  sh.sequence_parallel = s.parallel.sequence_parallel;
  sh.micro_batch = s.training.micro_batch;
  sh.seq_len = s.training.seq_len;
  sh.fp32_autocast = autocast;
  sh.flash_attention = s.features.flash_attention;
  sh.fused_kernels = s.features.fused_kernels;
  sh.recompute = s.features.recompute;
  double act = models::embedding_activation_bytes(s.model, sh);
  for (int l : l0) act += models::activation_bytes(s.model, l, sh);
  return st.params + st.grads + st.optimizer + act + kRuntimeReserveBytes;
}

std::string layout_label(const config::Scenario& s) {
  const auto& p = s.parallel;
  std::string l = "tp" + std::to_string(p.tp) + " pp" + std::to_string(p.pp) + " dp" + std::to_string(p.dp);
  if (p.cp > 1) l += " cp" + std::to_string(p.cp);
  if (p.ep > 1) l += " ep" + std::to_string(p.ep);
  if (p.vpp > 1) l += " vpp" + std::to_string(p.vpp);
  l += " mb" + std::to_string(s.training.micro_batch);
  return l;
}

PlanResult plan(const config::Scenario& base, int gpus, const PlanOptions& opt, const Progress& progress) {
  PlanResult res;
  res.gpus = gpus;
  res.hardware = base.hardware_ref.empty() ? base.hardware.name : base.hardware_ref;
  auto cands = enumerate_layouts(base, gpus);
  res.considered = cands.size();
  std::vector<config::Scenario> todo;
  for (auto& c : cands) {
    if (!config::validate(c).empty()) {
      ++res.invalid;
      continue;
    }
    if (opt.prune && memory_lower_bound(c) > c.hardware.hbm_bytes) {
      ++res.pruned;
      continue;
    }
    todo.push_back(std::move(c));
  }
  res.simulated = todo.size();
  std::vector<PlanPoint> pts(todo.size());
  std::vector<char> ok(todo.size(), 0);
  parallel_for(
      todo.size(),
      [&](std::size_t i) {
        report::SimulateOptions so;
        so.keep_timeline = false;
        so.per_layer = opt.per_layer;
        try {
          pts[i].result = report::simulate(todo[i], so);
          pts[i].scenario = std::move(todo[i]);
          ok[i] = 1;
        } catch (const std::exception&) {
          ok[i] = 0;
        }
      },
      progress);
  for (std::size_t i = 0; i < pts.size(); ++i) {
    if (!ok[i]) {
      ++res.failed;
      continue;
    }
    if (!pts[i].result.memory.fits) continue;
    ++res.fitting;
    res.ranked.push_back(std::move(pts[i]));
  }
  std::stable_sort(res.ranked.begin(), res.ranked.end(), [](const PlanPoint& a, const PlanPoint& b) {
    return a.result.step_time_s < b.result.step_time_s;
  });
  if (opt.keep > 0 && res.ranked.size() > opt.keep) res.ranked.resize(opt.keep);
  return res;
}

}  // namespace mfusim::study
