// study/plan: the layout search behind `mfusim plan`.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "config/loader.h"
#include "step/simulate.h"
#include "schedules/schedule.h"
#include "study/plan.h"

namespace fs = std::filesystem;
using namespace mfusim;

namespace {

const std::string kRoot = fs::path(MFUSIM_TEST_DIR).parent_path().string();
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Llama-3-8B on 16 H100, sequence 4096, 32 sequences per step: small enough
// to simulate every valid layout, tight enough in memory that many do not fit
// (8B parameters with ZeRO-1 take ~50 GiB of the 80 on a rank without tp/pp).
config::Scenario small(const std::string& hardware = "h100-sxm", int gpus = 16) {
  const std::string text = "name = \"plan test\"\nmodel = \"llama3-8b\"\nhardware = \"" + hardware +
                           "\"\n[cluster]\ngpus = " + std::to_string(gpus) +
                           "\n[training]\nseq_len = 4096\nglobal_batch = 32\nmicro_batch = 1\n"
                           "[parallel]\ntp = 1\npp = 1\ndistributed_optimizer = true\nsequence_parallel = false\n"
                           "[features]\nflash_attention = true\nfused_kernels = true\n";
  return config::load_scenario_string(text, kRoot + "/scenarios/plan_test.toml").base;
}

std::string key(const config::Scenario& s) {
  return study::layout_label(s) + " " + config::to_string(s.schedule.name) + " " + config::to_string(s.features.recompute);
}

const study::PlanResult& unpruned() {
  static const auto r = [] {
    study::PlanOptions po;
    po.prune = false;
    return study::plan(small(), 16, po);
  }();
  return r;
}

const study::PlanResult& pruned() {
  static const auto r = study::plan(small(), 16);
  return r;
}

}  // namespace

TEST_CASE("plan: every result fits in memory and obeys the shape rules") {
  const auto& r = pruned();
  REQUIRE(r.ranked.size() > 10);
  CHECK(r.failed == 0);
  CHECK(r.considered == r.invalid + r.pruned + r.skipped + r.simulated);
  for (const auto& p : r.ranked) {
    const auto& s = p.scenario;
    INFO(key(s));
    CHECK(p.result.memory.fits);
    CHECK(p.result.memory.peak_gib <= s.hardware.hbm_bytes / kGiB);
    // SPEC §3: gpus = tp * pp * cp * dp; tp divides heads and kv heads; global
    // batch a multiple of micro_batch * dp; the schedule's shape rules.
    CHECK(s.parallel.tp * s.parallel.pp * s.parallel.cp * s.parallel.dp == s.gpus);
    CHECK(s.model.heads % s.parallel.tp == 0);
    CHECK(s.model.kv_heads % s.parallel.tp == 0);
    CHECK(s.training.global_batch % (s.training.micro_batch * s.parallel.dp) == 0);
    CHECK(config::validate(s).empty());
  }
  for (std::size_t i = 1; i < r.ranked.size(); ++i)
    CHECK(r.ranked[i - 1].result.step_time_s <= r.ranked[i].result.step_time_s);
}

TEST_CASE("plan: pruning never removes a feasible point (small model, 16 GPUs, unpruned run)") {
  const auto& a = unpruned();
  const auto& b = pruned();
  REQUIRE(a.pruned == 0);
  REQUIRE(b.pruned > 0);                       // the bound does prune here
  REQUIRE(a.simulated > a.fitting);            // and some simulated points do not fit
  MESSAGE(a.considered << " considered, " << a.invalid << " invalid, " << b.pruned << " pruned, " << a.fitting
                       << " fit of " << a.simulated << " simulated unpruned");
  CHECK(a.considered == b.considered);
  CHECK(a.invalid == b.invalid);
  CHECK(a.fitting == b.fitting);
  std::map<std::string, double> fit_a, fit_b;
  for (const auto& p : a.ranked) fit_a[key(p.scenario)] = p.result.step_time_s;
  for (const auto& p : b.ranked) fit_b[key(p.scenario)] = p.result.step_time_s;
  CHECK(fit_a == fit_b);
}

TEST_CASE("plan: the memory lower bound is below every simulated peak (both lowerings)") {
  // study/plan.h contract: memory_lower_bound(s) <= simulated peak over ranks.
  const auto& a = unpruned();
  // Every simulated point of the unpruned run (fitting or not).
  const auto cands = study::enumerate_layouts(small(), 16);
  int checked = 0, per_layer = 0;
  for (const auto& c : cands) {
    if (!config::validate(c).empty()) continue;
    step::SimulateOptions so;
    so.keep_timeline = false;
    so.per_layer = false;
    const auto r = step::simulate(c, so);
    const double lb = study::memory_lower_bound(c);
    INFO(key(c));
    CHECK(lb <= r.memory.peak_gib * kGiB * (1 + 1e-12));
    // study/plan.h contract: step_time_lower_bound(s) <= simulated step time.
    const double tb = study::step_time_lower_bound(c);
    CHECK(tb <= r.step_time_s);
    CHECK(tb > 0.3 * r.step_time_s);   // and it is not vacuous
    ++checked;
    if (checked % 40 == 0) {   // the per-layer lowering on a sample
      so.per_layer = true;
      const auto q = step::simulate(c, so);
      CHECK(lb <= q.memory.peak_gib * kGiB * (1 + 1e-12));
      CHECK(tb <= q.step_time_s);
      ++per_layer;
    }
  }
  CHECK(checked == static_cast<int>(a.simulated));
  CHECK(per_layer > 5);
}

TEST_CASE("plan: the step-time bound skips points but keeps the same top K") {
  const auto& all = pruned();   // keep = 0: every surviving point simulated
  for (std::size_t k : {std::size_t{1}, std::size_t{10}}) {
    study::PlanOptions po;
    po.keep = k;
    const auto r = study::plan(small(), 16, po);
    INFO("top " << k << ": " << r.skipped << " skipped, " << r.simulated << " simulated");
    CHECK(r.skipped > 0);
    CHECK(r.simulated + r.skipped == all.simulated);
    REQUIRE(r.ranked.size() == k);
    for (std::size_t i = 0; i < k; ++i) {
      CHECK(key(r.ranked[i].scenario) == key(all.ranked[i].scenario));
      CHECK(r.ranked[i].result.step_time_s == all.ranked[i].result.step_time_s);
    }
  }
}

TEST_CASE("plan: the best point is no slower than hand-picked points of the same space") {
  const auto& r = pruned();
  REQUIRE(!r.ranked.empty());
  const double best = r.ranked.front().result.step_time_s;
  struct Pick { int tp, pp, cp, mb; config::ScheduleKind sched; int vpp; config::Recompute rc; };
  using K = config::ScheduleKind;
  using R = config::Recompute;
  const Pick picks[] = {
      {1, 1, 1, 1, K::one_f_one_b, 1, R::none},      // pure data parallelism (ZeRO-1)
      {2, 1, 1, 1, K::one_f_one_b, 1, R::none},
      {4, 1, 1, 2, K::one_f_one_b, 1, R::selective},
      {1, 2, 1, 1, K::one_f_one_b, 1, R::none},
      {2, 2, 1, 1, K::interleaved_1f1b, 2, R::none},
      {1, 4, 1, 1, K::zb_h1, 1, R::none},
      {8, 1, 2, 1, K::one_f_one_b, 1, R::full},
  };
  int fitting = 0;
  for (const auto& p : picks) {
    auto s = small();
    s.parallel.tp = p.tp;
    s.parallel.pp = p.pp;
    s.parallel.cp = p.cp;
    s.parallel.dp = 16 / (p.tp * p.pp * p.cp);
    s.parallel.vpp = p.vpp;
    s.parallel.sequence_parallel = p.tp > 1;
    s.training.micro_batch = p.mb;
    s.schedule.name = p.sched;
    s.features.recompute = p.rc;
    REQUIRE(config::validate(s).empty());
    step::SimulateOptions so;
    so.keep_timeline = false;
    so.per_layer = false;
    const auto x = step::simulate(s, so);
    INFO(key(s));
    if (!x.memory.fits) continue;
    ++fitting;
    CHECK(best <= x.step_time_s);
  }
  CHECK(fitting >= 4);
}

TEST_CASE("plan: hardware comparison picks a different best layout when memory is what binds") {
  // On 8 GPUs Llama-3-8B barely fits an 80 GB H100 without model parallelism;
  // a 168 GiB B200 can hold layouts that the H100 cannot (bigger micro-batch,
  // less tp/pp, no recompute), so its best layout must differ, and it must be
  // one that would not fit on the H100.
  study::PlanOptions po;
  po.keep = 1;
  po.bound_time = false;   // count every fitting layout
  const auto h100 = study::plan(small("h100-sxm", 8), 8, po);
  const auto b200 = study::plan(small("b200", 8), 8, po);
  REQUIRE(!h100.ranked.empty());
  REQUIRE(!b200.ranked.empty());
  const auto& bh = h100.ranked.front();
  const auto& bb = b200.ranked.front();
  INFO("h100: " << key(bh.scenario) << ", b200: " << key(bb.scenario));
  CHECK(key(bh.scenario) != key(bb.scenario));
  CHECK(bb.result.memory.peak_gib > bh.scenario.hardware.hbm_bytes / kGiB);
  CHECK(b200.fitting > h100.fitting);
  MESSAGE("h100 best: " << key(bh.scenario) << " (" << bh.result.step_time_s << " s), b200 best: " << key(bb.scenario)
                        << " (" << bb.result.step_time_s << " s, peak " << bb.result.memory.peak_gib << " GiB)");
}

TEST_CASE("plan: Pareto front of (time to train, GPUs, cost)") {
  using O = study::Objectives;
  // a: fast, many GPUs, expensive; b: slow, few GPUs, cheap; c: dominated by b
  // (slower, same GPUs, dearer); d: same as a (ties are not dominated).
  const std::vector<O> pts = {{10, 256, 100}, {30, 64, 60}, {31, 64, 61}, {10, 256, 100}};
  const auto f = study::pareto_front(pts);
  CHECK(f == std::vector<bool>{true, true, false, true});
}

TEST_CASE("plan: rank keys; days and cost follow step time within one choice") {
  auto s = small();
  s.training.tokens_to_train = 1e12;
  s.cost.price_per_gpu_hour = 2.0;
  auto r = study::plan(s, 16, study::PlanOptions{true, false, 5, 0});
  REQUIRE(r.ranked.size() == 5);
  for (std::size_t i = 1; i < r.ranked.size(); ++i) {
    const auto& a = r.ranked[i - 1].result;
    const auto& b = r.ranked[i].result;
    CHECK(study::rank_key(a, study::RankBy::days) <= study::rank_key(b, study::RankBy::days));
    CHECK(study::rank_key(a, study::RankBy::cost) <= study::rank_key(b, study::RankBy::cost));
  }
  // days of steps = tokens / (tokens/s) / 86400; days = the run's mean wall clock (interruptions,
  // restarts and saves included, step/training_run.h); cost = price x gpus x the run's hours.
  const auto& x = r.ranked.front().result;
  CHECK(x.run.days_of_steps == doctest::Approx(1e12 / x.tokens_per_s / 86400.0));
  CHECK(x.days_to_train == doctest::Approx(x.run.sim.wall_mean_s / 86400.0));
  CHECK(x.days_to_train > x.run.days_of_steps);
  CHECK(x.cost_usd == doctest::Approx(2.0 * 16 * x.days_to_train * 24));
  CHECK(study::rank_key(x, study::RankBy::cost) == doctest::Approx(x.cost_usd));
  CHECK(study::parse_rank_by("days") == study::RankBy::days);
  CHECK_THROWS_AS(study::parse_rank_by("mfu"), std::invalid_argument);
}

TEST_CASE("plan: moe.fb_rearrange is searched for MoE with EP under DualPipe, held by --set, absent for dense") {
  config::LoadOptions lo;
  const auto moe = config::load_scenario(kRoot + "/scenarios/2048xh800_deepseek_v3.toml", lo).base;
  const auto sp = study::search_space(moe, moe.gpus);
  CHECK(sp.fb_rearrange == std::vector<int>{1, 0});
  CHECK(study::describe(sp).find("(moe.fb_rearrange true,false)") != std::string::npos);
  // Held by --set (the key or its table).
  for (const char* set : {"moe.fb_rearrange=false", "moe={fb_rearrange=false}"}) {
    INFO(set);
    study::SearchConstraints c;
    c.fixed = study::fixed_keys({set});
    CHECK(c.fixed.count("moe.fb_rearrange") == 1);
    auto held = moe;
    held.moe.fb_rearrange = false;
    CHECK(study::search_space(held, moe.gpus, c).fb_rearrange == std::vector<int>{0});
  }
  // No DualPipe schedule in the space (schedule held at 1f1b, or Megatron's schedules): not searched.
  {
    study::SearchConstraints c;
    c.fixed = {"schedule.name"};
    auto s = moe;
    s.schedule.name = config::ScheduleKind::one_f_one_b;
    CHECK(study::search_space(s, moe.gpus, c).fb_rearrange.empty());
    c.fixed.clear();
    c.framework = study::Framework::megatron;
    CHECK(study::search_space(moe, moe.gpus, c).fb_rearrange.empty());
    CHECK(study::describe(study::search_space(moe, moe.gpus, c)).find("fb_rearrange") == std::string::npos);
  }
  // The enumeration: both arrangements at every MoE DualPipe point with EP, one elsewhere.
  {
    study::SearchConstraints c;
    c.fixed = {"parallel.tp", "parallel.cp", "parallel.pp", "parallel.dp", "training.micro_batch", "features.recompute",
               "parallel.sequence_parallel"};
    std::map<std::string, std::set<bool>> seen;   // layout + schedule + dispatcher -> arrangements
    for (const auto& s : study::enumerate_layouts(moe, moe.gpus, c)) {
      const bool dual = s.schedule.name == config::ScheduleKind::dualpipe || s.schedule.name == config::ScheduleKind::dualpipev;
      std::string k = "ep" + std::to_string(s.parallel.ep) + " " + config::to_string(s.schedule.name) + " vpp" +
                      std::to_string(s.parallel.vpp) + " " + config::to_string(s.moe.dispatcher) +
                      (s.moe.recompute_norm_up_proj ? " ds-mem" : "");
      seen[k].insert(s.moe.fb_rearrange);
      if (!dual || s.parallel.ep == 1) CHECK(s.moe.fb_rearrange == moe.moe.fb_rearrange);
    }
    int dual_points = 0;
    for (const auto& [k, v] : seen)
      if ((k.find(" dualpipe ") != std::string::npos || k.find(" dualpipev ") != std::string::npos) && k.rfind("ep1 ", 0) != 0) {
        INFO(k);
        CHECK(v.size() == 2);
        ++dual_points;
      }
    CHECK(dual_points > 0);
  }
  // A dense model: nothing about it in the space or its header.
  const auto sd = study::search_space(small(), 16);
  CHECK(sd.fb_rearrange.empty());
  CHECK(study::describe(sd).find("fb_rearrange") == std::string::npos);
}

TEST_CASE("plan: moe.overlap_ep_comm is searched where Megatron's combined 1F1B exists, off elsewhere, held by --set") {
  const auto base =
      config::load_scenario(kRoot + "/scenarios/1024xh100_deepseek_v3_megatron.toml", config::LoadOptions{}).base;
  REQUIRE(base.moe.overlap_ep_comm);
  study::SearchConstraints c;
  c.fixed = {"parallel.tp", "parallel.cp", "parallel.pp", "parallel.dp", "training.micro_batch", "features.recompute",
             "parallel.sequence_parallel"};
  CHECK(study::describe(study::search_space(base, base.gpus, c)).find("moe.overlap_ep_comm true,false") != std::string::npos);
  std::map<std::string, std::set<bool>> seen;   // ep + schedule + vpp + dispatcher + ds-mem -> overlap
  int candidates = 0;
  for (const auto& s : study::enumerate_layouts(base, base.gpus, c)) {
    const bool combined = s.parallel.ep > 1 && schedules::combined_1f1b_applies(config::to_string(s.schedule.name), s.parallel.pp);
    if (!combined) CHECK_FALSE(s.moe.overlap_ep_comm);   // never where it does not exist
    const std::string k = "ep" + std::to_string(s.parallel.ep) + " " + config::to_string(s.schedule.name) + " vpp" +
                          std::to_string(s.parallel.vpp) + " " + config::to_string(s.moe.dispatcher) +
                          (s.moe.recompute_norm_up_proj ? " ds-mem" : "");
    if (combined) seen[k].insert(s.moe.overlap_ep_comm);
    ++candidates;
  }
  CHECK(candidates > 0);
  REQUIRE_FALSE(seen.empty());
  for (const auto& [k, v] : seen) {
    INFO(k);
    CHECK(v.size() == 2);
  }
  // Held by --set: one value, and the header does not list it as searched.
  c.fixed = study::fixed_keys({"moe.overlap_ep_comm=false"});
  CHECK(c.fixed.count("moe.overlap_ep_comm") == 1);
  auto held = base;
  held.moe.overlap_ep_comm = false;
  CHECK(study::describe(study::search_space(held, base.gpus, c)).find("overlap_ep_comm true,false") == std::string::npos);
  for (const auto& s : study::enumerate_layouts(held, base.gpus, c)) CHECK_FALSE(s.moe.overlap_ep_comm);
}

TEST_CASE("plan: the scenario's own pipeline keeps its own uneven split, so the DeepSeek-V3 report's layout is searched") {
  // 61 layers on 16 DualPipe stages: 15 of 4 and a last of 1 (parallel.last_stage_layers = 1), a split no
  // even or Llama-3-style rule gives; before, every pp 16 point broke a shape rule.
  const auto base = config::load_scenario(kRoot + "/scenarios/2048xh800_deepseek_v3.toml", config::LoadOptions{}).base;
  REQUIRE(base.parallel.last_stage_layers == 1);
  REQUIRE(base.parallel.pp == 16);
  study::SearchConstraints c;
  c.fixed = {"parallel.tp", "parallel.cp", "parallel.dp", "training.micro_batch", "features.recompute",
             "parallel.sequence_parallel"};
  int report_layout = 0, other_pipelines_split = 0;
  for (const auto& s : study::enumerate_layouts(base, base.gpus, c)) {
    if (!config::validate(s).empty()) continue;
    const bool own = s.parallel.pp == base.parallel.pp && s.schedule.name == base.schedule.name;
    if (own) CHECK(s.parallel.last_stage_layers == 1);
    else if (s.parallel.first_stage_layers || s.parallel.last_stage_layers) ++other_pipelines_split;
    if (own && s.parallel.ep == 64 && s.moe.dispatcher == config::MoeDispatcher::deepep) ++report_layout;
  }
  CHECK(report_layout > 0);
  // Other pipelines keep the even or Llama-3-style rules (63 = 61 + 2 divides no pp here).
  CHECK(other_pipelines_split == 0);
}

TEST_CASE("plan: Megatron's block recompute (the first N layers of each chunk) is searched beside full, held by --set") {
  // Llama-2-70B on 32 H100 at tp 8, pp 4, 1f1b, micro-batch 4: neither no recompute nor selective fits; full
  // recompute of every layer does, and so does full recompute of the first 5 of each stage's 20 layers, which
  // recomputes a quarter as much.
  auto base = config::load_scenario(kRoot + "/scenarios/128xh100_70b.toml", config::LoadOptions{}).base;
  base.features.flash_attention = true;
  base.features.attention = config::Attention::flash;
  base.features.fused_kernels = true;
  base.training.micro_batch = 4;
  base.parallel.tp = 8;
  base.parallel.pp = 4;
  base.schedule.name = config::ScheduleKind::one_f_one_b;
  study::SearchConstraints c;
  c.fixed = study::fixed_keys({"parallel.tp=8", "parallel.pp=4", "schedule.name=1f1b", "training.micro_batch=4"});
  const auto sp = study::search_space(base, 32, c);
  CHECK(sp.recompute_num_layers);
  CHECK(study::describe(sp).find("first 1/4, 1/2, 3/4 of each chunk's") != std::string::npos);
  std::set<int> blocks;
  for (const auto& s : study::enumerate_layouts(base, 32, c))
    if (s.features.recompute == config::Recompute::full && s.parallel.cp == 1) blocks.insert(s.features.recompute_num_layers);
    else CHECK(s.features.recompute_num_layers == 0);
  CHECK(blocks == std::set<int>{0, 5, 10, 15});
  study::PlanOptions po;
  po.constraints = c;
  po.threads = 1;
  const auto r = study::plan(base, 32, po);
  REQUIRE_FALSE(r.ranked.empty());
  const auto& best = r.ranked.front();
  CHECK(best.scenario.features.recompute == config::Recompute::full);
  CHECK(best.scenario.features.recompute_num_layers == 5);
  CHECK(study::layout_label(best.scenario).find("rc-layers5") != std::string::npos);
  double every_layer = 0;
  for (const auto& p : r.ranked)
    if (p.scenario.features.recompute == config::Recompute::full && p.scenario.features.recompute_num_layers == 0)
      every_layer = p.result.step_time_s;
  REQUIRE(every_layer > 0);
  CHECK(best.result.step_time_s < 0.85 * every_layer);
  // The scenario's own N is searched too (here 7 of 20, beside 5, 10 and 15).
  auto own = base;
  own.features.recompute = config::Recompute::full;
  own.features.recompute_num_layers = 7;
  blocks.clear();
  for (const auto& s : study::enumerate_layouts(own, 32, c))
    if (s.features.recompute == config::Recompute::full && s.parallel.cp == 1) blocks.insert(s.features.recompute_num_layers);
  CHECK(blocks == std::set<int>{0, 5, 7, 10, 15});
  // Held: the scenario's N alone, with full recompute (holding N > 0 holds the level too).
  c.fixed = study::fixed_keys({"parallel.tp=8", "parallel.pp=4", "features.recompute_num_layers=10"});
  auto held = base;
  held.features.recompute = config::Recompute::full;
  held.features.recompute_num_layers = 10;
  CHECK_FALSE(study::search_space(held, 32, c).recompute_num_layers);
  const auto held_layouts = study::enumerate_layouts(held, 32, c);
  REQUIRE_FALSE(held_layouts.empty());
  for (const auto& s : held_layouts) {
    CHECK(s.features.recompute == config::Recompute::full);
    CHECK(s.features.recompute_num_layers == 10);
  }
  // Frameworks without the block method recompute every layer, whatever the scenario's N; an MoE model keeps its N.
  c.fixed = {};
  for (auto fw : {study::Framework::torchtitan, study::Framework::deepspeed}) {
    c.framework = fw;
    CHECK_FALSE(study::search_space(held, 32, c).recompute_num_layers);
    for (const auto& s : study::enumerate_layouts(held, 32, c)) CHECK(s.features.recompute_num_layers == 0);
  }
  c.framework = study::Framework::any;
  auto moe = config::load_scenario(kRoot + "/scenarios/64xgb200_mixtral_8x7b.toml", config::LoadOptions{}).base;
  const auto moe_space = study::search_space(moe, moe.gpus, c);
  CHECK_FALSE(moe_space.recompute_num_layers);
  CHECK(study::describe(moe_space).find("first 1/4") == std::string::npos);
}
