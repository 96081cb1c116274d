// Each MFU lever (SPEC §3 [features], docs/levers.md) moves the breakdown part
// it acts on, with the right sign, and leaves the others alone up to second-order
// effects (shorter ops shrink the bubble; overlapped communication slows compute
// by the contention factor).
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "config/loader.h"
#include "hardware/cost_model.h"
#include "models/accounting.h"
#include "step/simulate.h"
#include "study/diagnose.h"

namespace {

using namespace mfusim;
namespace fs = std::filesystem;

const std::string kRoot = fs::path(MFUSIM_TEST_DIR).parent_path().string();

// Llama-2-13B on 16 H100 (tp 4, pp 2, dp 2), 16 micro-batches of 4096 tokens:
// small enough to simulate in well under a second, with every lever in play.
std::string scenario_text(const std::map<std::string, std::string>& set, int gpus = 16, int global_batch = 32) {
  std::map<std::string, std::string> f = {
      {"flash_attention", "true"},   {"fused_kernels", "true"},   {"overlap_grad_reduce", "true"},
      {"overlap_param_gather", "true"}, {"tp_comm_overlap", "false"}, {"recompute", "\"none\""},
      {"cuda_graphs", "false"},      {"python_gc", "false"},      {"dataloader_workers", "8"},
      {"nccl_algo", "\"auto\""}};
  std::string training = "micro_batch = 1\n", schedule = "name = \"1f1b\"\n", parallel = "tp = 4\npp = 2\n";
  std::string model = "llama2-13b", seq = "4096";
  for (const auto& [k, v] : set) {
    if (k == "model") model = v;
    else if (k == "seq_len") seq = v;
    else if (k == "micro_batch") training = "micro_batch = " + v + "\n";
    else if (k == "schedule") schedule = "name = \"" + v + "\"\n";
    else if (k == "parallel") parallel = v;
    else f[k] = v;
  }
  std::string t = "name = \"levers\"\nmodel = \"" + model + "\"\nhardware = \"h100-sxm\"\n[cluster]\ngpus = " +
                  std::to_string(gpus) + "\n[training]\nseq_len = " + seq + "\nglobal_batch = " + std::to_string(global_batch) +
                  "\n" + training + "precision = \"bf16\"\n[parallel]\n" + parallel +
                  "sequence_parallel = true\ndistributed_optimizer = true\n[schedule]\n" + schedule + "[features]\n";
  for (const auto& [k, v] : f) t += k + " = " + v + "\n";
  return t;
}

step::StepResult run(const std::map<std::string, std::string>& set, int gpus = 16, int global_batch = 32) {
  const auto loaded = config::load_scenario_string(scenario_text(set, gpus, global_batch), kRoot + "/scenarios/levers.toml");
  step::SimulateOptions o;
  o.keep_timeline = false;
  return step::simulate(loaded.base, o);
}

// Parts that a lever must not move, by name.
double part(const step::Breakdown& b, const std::string& name) {
  const std::map<std::string, double> m = {
      {"forward", b.forward},     {"backward", b.backward},           {"recompute", b.recompute},
      {"optimizer", b.optimizer}, {"tp", b.tp_comm_exposed},          {"pp", b.pp_comm_exposed},
      {"dp", b.dp_comm_exposed},  {"bubble", b.bubble},               {"dataloader", b.dataloader},
      {"gc", b.gc},               {"launch", b.launch_overhead}};
  return m.at(name);
}

// |after - before| <= tol * step + 1 ms for every listed part.
void unchanged(const step::StepResult& a, const step::StepResult& b, std::initializer_list<const char*> parts,
               double tol = 0.01) {
  for (const char* p : parts) {
    INFO("part ", p, ": ", part(a.breakdown, p), " -> ", part(b.breakdown, p));
    CHECK(std::abs(part(a.breakdown, p) - part(b.breakdown, p)) <= tol * a.step_time_s + 1e-3);
  }
}

}  // namespace

TEST_CASE("flash attention shrinks forward, backward and recompute, and nothing else") {
  // Materialised attention writes and reads the s x s scores through HBM
  // (docs/levers.md §flash): F and B lose that traffic, selective recompute
  // (the attention core again before B) loses it too.
  const auto eager = run({{"flash_attention", "false"}, {"recompute", "\"selective\""}});
  const auto flash = run({{"flash_attention", "true"}, {"recompute", "\"selective\""}});
  CHECK(flash.breakdown.forward < eager.breakdown.forward);
  CHECK(flash.breakdown.backward < eager.breakdown.backward);
  CHECK(flash.breakdown.recompute < eager.breakdown.recompute);
  CHECK(flash.mfu > eager.mfu);
  unchanged(eager, flash, {"optimizer", "tp", "dp", "dataloader", "gc", "launch"});
}

TEST_CASE("materialised attention: score traffic and stored activations of the unfused and fused paths") {
  // Megatron-Core DotProductAttention without flash (docs/levers.md §flash), per score:
  //  fused:   FusedScaleMaskSoftmax reads and writes bf16: 4 B forward; backward reads y, dy, writes dx: 6 B.
  //  unfused: .float() 2+4, masked_fill_ 4+4, softmax 4+4, .bfloat16() 4+2 = 28 B forward;
  //           backward 6 + 8 + 12 + 6 = 32 B.
  // Stored per score (no recompute): bf16 probabilities for attn*V (2 B), plus the fp32 softmax
  // output its backward reads when unfused (4 B).
  const auto m = config::load_model(kRoot + "/models/llama2-13b.toml");
  models::RankShape r;
  r.tp = 4;
  r.seq_len = 4096;
  r.flash_attention = false;
  const double E = 1.0 * (40 / 4) * 4096.0 * 4096.0;   // scores per rank: heads/tp x s x s
  auto score_bytes = [&](const std::vector<hardware::Kernel>& ks) {
    double b = 0;
    for (const auto& k : ks) {
      const std::string n = k.name;
      if (n.find("softmax") != std::string::npos || n.find("attn_mask") != std::string::npos) b += k.bytes * k.count;
    }
    return b;
  };
  r.fused_kernels = true;
  auto fused = models::layer_kernels(m, 0, r);
  CHECK(score_bytes(fused.f) == doctest::Approx(4 * E));
  CHECK(score_bytes(fused.b) == doctest::Approx(6 * E));
  const double act_fused = models::activation_bytes(m, 0, r);
  r.fused_kernels = false;
  auto unfused = models::layer_kernels(m, 0, r);
  CHECK(score_bytes(unfused.f) == doctest::Approx(28 * E));
  CHECK(score_bytes(unfused.b) == doctest::Approx(32 * E));
  CHECK(models::activation_bytes(m, 0, r) - act_fused == doctest::Approx(4 * E));
  r.flash_attention = true;
  const double act_flash = models::activation_bytes(m, 0, r);
  // flash keeps the fp32 log-sum-exp (4 B per query per head) instead of 2 B per score.
  CHECK(act_fused - act_flash == doctest::Approx(2 * E - 4.0 * 10 * 4096));
}

TEST_CASE("fused kernels shrink forward, backward and launch overhead") {
  const auto unfused = run({{"fused_kernels", "false"}});
  const auto fused = run({{"fused_kernels", "true"}});
  CHECK(fused.breakdown.forward < unfused.breakdown.forward);
  CHECK(fused.breakdown.backward < unfused.breakdown.backward);
  CHECK(fused.breakdown.launch_overhead <= unfused.breakdown.launch_overhead);
  CHECK(fused.mfu > unfused.mfu);
  unchanged(unfused, fused, {"recompute", "optimizer", "tp", "dp", "dataloader", "gc"});
}

TEST_CASE("overlapped gradient reduction shrinks exposed DP communication") {
  const auto serial = run({{"overlap_grad_reduce", "false"}, {"overlap_param_gather", "false"}});
  const auto overlapped = run({{"overlap_grad_reduce", "true"}, {"overlap_param_gather", "true"}});
  CHECK(serial.breakdown.dp_comm_exposed > 0);
  CHECK(overlapped.breakdown.dp_comm_exposed < serial.breakdown.dp_comm_exposed);
  CHECK(overlapped.step_time_s < serial.step_time_s);
  // Second order: the overlapped reduction slows the backward it runs beside (contention).
  unchanged(serial, overlapped, {"forward", "recompute", "optimizer", "tp", "dataloader", "gc", "launch"}, 0.02);
}

TEST_CASE("TP comm overlap hides TP communication and costs compute") {
  // docs/levers.md §tp_comm_overlap: the collective is pipelined with tp chunks of the two
  // GEMMs next to it; the chunked GEMMs are slower and share the GPU while it runs.
  const auto serial = run({{"tp_comm_overlap", "false"}});
  const auto overlapped = run({{"tp_comm_overlap", "true"}});
  CHECK(serial.breakdown.tp_comm_exposed > 0);
  CHECK(overlapped.breakdown.tp_comm_exposed < serial.breakdown.tp_comm_exposed);
  CHECK(overlapped.breakdown.forward > serial.breakdown.forward);
  CHECK(overlapped.breakdown.backward > serial.breakdown.backward);
  // It hides no more than it could: the compute added is part of the price, so the
  // step shrinks by less than the exposed TP time.
  CHECK(serial.step_time_s - overlapped.step_time_s < serial.breakdown.tp_comm_exposed);
  unchanged(serial, overlapped, {"recompute", "optimizer", "dataloader", "gc"});
}

TEST_CASE("Python GC adds pauses, and its cost grows with the number of ranks") {
  const auto off = run({{"python_gc", "false"}});
  const auto on = run({{"python_gc", "true"}});
  CHECK(off.breakdown.gc == 0);
  CHECK(on.breakdown.gc > 0);
  CHECK(on.mfu < off.mfu);
  unchanged(off, on, {"forward", "backward", "recompute", "optimizer", "tp", "dp", "dataloader", "launch"});
  // Same per-GPU work (global batch grows with dp), 4x the ranks per stage: a stage loses the
  // union of its peers' pauses, 1 - (1 - p)^peers, so the GC share grows.
  const auto big = run({{"python_gc", "true"}}, 64, 128);
  CHECK(big.breakdown.gc / big.step_time_s > 2.0 * on.breakdown.gc / on.step_time_s);
}

TEST_CASE("GC stall on one stage follows the union of its peers' pauses") {
  // pp = 1: the only stage's busy time B is its ops (forward, backward, the TP collectives
  // they wait for, launch gaps); expected stall B * f / (1 - f), f = 1 - (1 - pause/interval)^peers
  // with peers = all 16 GPUs (defaults 100 ms, 3400 s).
  // No collective runs beside compute (overlapped DP buckets and gathers slow the ops they overlap,
  // beyond the busy time counted here).
  const auto on = run({{"python_gc", "true"}, {"parallel", "tp = 4\npp = 1\n"}, {"overlap_grad_reduce", "false"},
                       {"overlap_param_gather", "false"}});
  const double p = 0.1 / 3400.0, f = 1.0 - std::pow(1.0 - p, 16);
  const auto& b = on.breakdown;
  const double busy = b.forward + b.backward + b.recompute + b.tp_comm_exposed + b.launch_overhead;
  CHECK(b.gc == doctest::Approx(busy * f / (1 - f)).scale(0).epsilon(0.01));
}

TEST_CASE("dataloader on the training thread costs the loading time of every micro-batch") {
  // Default per-sequence cost: seq_len / 1M tokens/s + 1 ms (docs/levers.md §dataloader);
  // 16 micro-batches of one 4096-token sequence load on pipeline rank 0.
  // No collective beside compute (an overlapped DP gather slows the first forwards the loading overlaps).
  // One pipeline stage (8 GPUs: tp 4, dp 2, still 16 micro-batches): with two, the inline loading makes the first
  // stage the slowest and the breakdown moves to it from the last, whose output head's backward is ~2% longer, a
  // difference of ranks, not of the lever.
  const auto inline_load = run({{"dataloader_workers", "0"}, {"overlap_grad_reduce", "false"}, {"overlap_param_gather", "false"},
                                {"parallel", "tp = 4\npp = 1\n"}}, 8);
  const auto workers = run({{"dataloader_workers", "8"}, {"overlap_grad_reduce", "false"}, {"overlap_param_gather", "false"},
                            {"parallel", "tp = 4\npp = 1\n"}}, 8);
  REQUIRE(inline_load.breakdown_rank == workers.breakdown_rank);
  CHECK(workers.breakdown.dataloader < 1e-4);
  CHECK(inline_load.breakdown.dataloader == doctest::Approx(16 * (4096 / 1e6 + 1e-3)).scale(0).epsilon(0.01));
  CHECK(workers.mfu > inline_load.mfu);
  unchanged(inline_load, workers, {"forward", "backward", "recompute", "optimizer", "tp", "dp", "gc", "launch"});
}

TEST_CASE("launch roofline: CPU issue bounds short kernels, CUDA graphs leave the GPU gap") {
  // cost_model.h StreamTime: seconds = max(sum(exec) + n * gap, n * issue).
  hardware::HardwareSpec hw = config::load_hardware(kRoot + "/hardware/h100-sxm.toml");
  hardware::Kernel tiny;
  tiny.kind = hardware::KernelKind::memory;
  tiny.bytes = 1024;   // ~0.3 ns of HBM time: all launch
  std::vector<const hardware::Kernel*> ks(100, &tiny);
  const hardware::CostModel eager(hw, hardware::Precision::bf16);
  const hardware::CostModel graphs(hw, hardware::Precision::bf16, nullptr, true);
  CHECK(eager.stream_time(ks).seconds == doctest::Approx(100 * hw.launch_overhead).scale(0).epsilon(1e-3));
  CHECK(graphs.stream_time(ks).seconds == doctest::Approx(100 * graphs.kernel_gap()).scale(0).epsilon(0.01));
  // Long kernels hide the host: the GPU never waits for it.
  hardware::Kernel big = tiny;
  big.bytes = 3e9;   // ~1 ms
  std::vector<const hardware::Kernel*> kb(10, &big);
  const double exec = 10 * (eager.time(big) - eager.launch_time(big));
  CHECK(eager.stream_time(kb).seconds == doctest::Approx(exec + 10 * eager.kernel_gap()).scale(0));
  CHECK(graphs.stream_time(kb).seconds == doctest::Approx(eager.stream_time(kb).seconds).scale(0));
}

TEST_CASE("CUDA graphs shrink launch overhead only") {
  // A small per-rank shape (GPT 1.7B, tp 8, 512-token sequences): its GEMMs take ~5 us and its
  // elementwise kernels well under 1 us, while eager PyTorch spends ~31 us of host time per op
  // (hardware.host_overhead_us, the H200 host's measured cost, validation/h200_compare.h): over
  // the whole step the host issues slower than the GPU runs, so the GPU waits for it even though
  // the host runs ahead wherever it can (TaskSpec::host_ns); a graph launch leaves only the GPU's
  // per-kernel gap. (With the bare 4 us launch cost the host keeps ahead of this GPU and graphs
  // change nothing, as on the large shapes of the other tests.)
  const std::map<std::string, std::string> base = {
      {"model", "gpt-1.7b"}, {"seq_len", "512"}, {"fused_kernels", "false"}, {"parallel", "tp = 8\npp = 2\n"}};
  auto graphs = base;
  graphs["cuda_graphs"] = "true";
  auto run_eager_host = [](const std::map<std::string, std::string>& set) {
    auto loaded = config::load_scenario_string(scenario_text(set, 16, 16), kRoot + "/scenarios/levers.toml");
    loaded.base.hardware.host_overhead = 31e-6;
    step::SimulateOptions o;
    o.keep_timeline = false;
    return step::simulate(loaded.base, o);
  };
  const auto eager = run_eager_host(base);
  const auto g = run_eager_host(graphs);
  CHECK(eager.breakdown.launch_overhead > 0);
  CHECK(g.breakdown.launch_overhead < 0.5 * eager.breakdown.launch_overhead);
  CHECK(g.mfu > eager.mfu);
  unchanged(eager, g, {"forward", "backward", "recompute", "optimizer", "tp", "dp", "dataloader", "gc"}, 0.02);
  // With the bare launch cost (the profile's 4 us) the host keeps ahead: graphs gain nothing here.
  const auto eager4 = run(base, 16, 16);
  const auto g4 = run(graphs, 16, 16);
  CHECK(g4.step_time_s == doctest::Approx(eager4.step_time_s).epsilon(0.01).scale(0));
}

TEST_CASE("a larger micro-batch: more bubble (fewer micro-batches), faster GEMMs, more activations") {
  const auto mb1 = run({{"micro_batch", "1"}});
  const auto mb2 = run({{"micro_batch", "2"}});
  CHECK(mb2.microbatches * 2 == mb1.microbatches);
  CHECK(mb2.breakdown.bubble > mb1.breakdown.bubble);   // (p-1)/m with m halved
  CHECK(mb2.breakdown.forward + mb2.breakdown.backward <= mb1.breakdown.forward + mb1.breakdown.backward);
  CHECK(mb2.memory.activations_gib > mb1.memory.activations_gib);
}

TEST_CASE("interleaving shrinks the pipeline bubble") {
  const auto plain = run({{"schedule", "1f1b"}});
  const auto inter = run({{"schedule", "interleaved-1f1b"}, {"parallel", "tp = 4\npp = 2\nvpp = 2\n"}});
  CHECK(inter.breakdown.bubble < plain.breakdown.bubble);
  unchanged(plain, inter, {"recompute", "optimizer", "dataloader", "gc"});
}

TEST_CASE("recompute: none < selective < full in recompute time, the reverse in activations") {
  const auto none = run({{"recompute", "\"none\""}});
  const auto sel = run({{"recompute", "\"selective\""}});
  const auto full = run({{"recompute", "\"full\""}});
  CHECK(none.breakdown.recompute == 0);
  CHECK(sel.breakdown.recompute > 0);
  CHECK(full.breakdown.recompute > sel.breakdown.recompute);
  CHECK(none.memory.activations_gib > sel.memory.activations_gib);
  CHECK(sel.memory.activations_gib > full.memory.activations_gib);
  CHECK(none.mfu > sel.mfu);
  CHECK(sel.mfu > full.mfu);
}

TEST_CASE("diagnose: every classic fix has a positive gain and the ranking is deterministic") {
  const fs::path dir = fs::temp_directory_path() / "mfusim_levers_test";
  fs::create_directories(dir);
  const fs::path file = dir / "bad.toml";
  std::string text = scenario_text({{"flash_attention", "false"},
                                    {"fused_kernels", "false"},
                                    {"overlap_grad_reduce", "false"},
                                    {"overlap_param_gather", "false"},
                                    {"recompute", "\"selective\""},
                                    {"python_gc", "true"},
                                    {"dataloader_workers", "0"}});
  const auto pos = text.find("llama2-13b");
  text.replace(pos, 10, kRoot + "/models/llama2-13b.toml");
  const auto hpos = text.find("\"h100-sxm\"");
  text.replace(hpos, 10, "\"" + kRoot + "/hardware/h100-sxm.toml\"");
  std::ofstream(file) << text;
  const auto a = study::diagnose(file.string(), {});
  const auto b = study::diagnose(file.string(), {});
  REQUIRE(a.levers.size() == b.levers.size());
  for (std::size_t i = 0; i < a.levers.size(); ++i) {
    CHECK(a.levers[i].lever == b.levers[i].lever);
    CHECK(a.levers[i].delta_mfu == b.levers[i].delta_mfu);
    CHECK(a.levers[i].shrinks == b.levers[i].shrinks);
  }
  std::map<std::string, const study::LeverResult*> by;
  for (const auto& x : a.levers) by[x.lever] = &x;
  for (const char* l : {"flash attention", "fused kernels", "overlap grad reduce", "GC off", "more dataloader workers",
                        "TP comm overlap"}) {
    INFO(l);
    REQUIRE(by.count(l));
    CHECK(by[l]->delta_mfu > 0);
  }
  CHECK(by["flash attention"]->shrinks == "backward");
  CHECK(by["GC off"]->shrinks == "gc");
  CHECK(by["more dataloader workers"]->shrinks == "dataloader");
  CHECK(by["overlap grad reduce"]->shrinks == "dp_comm_exposed");
  CHECK(by["TP comm overlap"]->shrinks == "tp_comm_exposed");
  // Ranked by MFU gain among the levers that fit.
  for (std::size_t i = 1; i < a.levers.size(); ++i)
    if (a.levers[i].fits && a.levers[i - 1].fits) CHECK(a.levers[i - 1].delta_mfu >= a.levers[i].delta_mfu);
  fs::remove_all(dir);
}

TEST_CASE("diagnose: DeepSeek-V3 under DualPipe with the F&B pair alternated proposes the report's Figure 4") {
  // moe.fb_rearrange (docs/moe-dualpipe.md): the lever exists only for MoE with EP under
  // dualpipe / dualpipev, turns the arrangement on, and hides EP communication.
  config::LoadOptions lo;
  lo.overrides = {"moe.fb_rearrange=false"};
  const auto path = kRoot + "/scenarios/2048xh800_deepseek_v3.toml";
  const auto base = config::load_scenario(path, lo).base;
  bool listed = false;
  for (const auto& [lever, sets] : study::lever_candidates(base))
    if (lever == "F&B pair as DeepSeek-V3 Figure 4") {
      listed = true;
      CHECK(sets == std::vector<std::string>{"moe.fb_rearrange=true"});
    }
  CHECK(listed);
  // Already on, another schedule, or a dense model: no such lever.
  auto has_lever = [](const config::Scenario& s) {
    for (const auto& c : study::lever_candidates(s))
      if (c.first == "F&B pair as DeepSeek-V3 Figure 4") return true;
    return false;
  };
  CHECK_FALSE(has_lever(config::load_scenario(path, {}).base));
  config::LoadOptions one;
  one.overrides = {"moe.fb_rearrange=false", "schedule.name=1f1b"};
  CHECK_FALSE(has_lever(config::load_scenario(path, one).base));
  const auto dense = config::load_scenario_string(scenario_text({{"schedule", "dualpipe"}, {"parallel", "tp = 4\npp = 4\n"}}),
                                                  kRoot + "/scenarios/levers.toml");
  CHECK_FALSE(has_lever(dense.base));

  const auto d = study::diagnose(path, lo);
  const study::LeverResult* fb = nullptr;
  for (const auto& x : d.levers)
    if (x.lever == "F&B pair as DeepSeek-V3 Figure 4") fb = &x;
  REQUIRE(fb != nullptr);
  CHECK(fb->change == "moe.fb_rearrange=true");
  CHECK(fb->delta_mfu > 0);
  CHECK(fb->step_time_s < d.base.step_time_s);
  CHECK(fb->shrinks == "ep_comm_exposed");
  CHECK(fb->fits);
}

// The settings diagnose would try for `lever` on a shipped scenario with `overrides` (empty: not a candidate).
static std::vector<std::string> lever_sets(const std::string& file, const std::vector<std::string>& overrides,
                                    const std::string& lever) {
  config::LoadOptions lo;
  lo.overrides = overrides;
  std::vector<std::string> sets;
  for (const auto& [name, s] : study::lever_candidates(config::load_scenario(kRoot + "/scenarios/" + file, lo).base))
    if (name == lever) sets = s;
  return sets;
}

TEST_CASE("diagnose: fp8 weights (--fp8-param-gather) is a lever of a Transformer Engine fp8 recipe only") {
  auto sets_of = [](const std::vector<std::string>& overrides) {
    return lever_sets("128xh100_70b.toml", overrides, "fp8 weights (--fp8-param-gather)");
  };
  CHECK(sets_of({"training.precision=fp8"}) == std::vector<std::string>{"features.fp8_params=true"});
  CHECK(sets_of({}).empty());                                                        // bf16
  CHECK(sets_of({"training.precision=fp8", "features.fp8_params=true"}).empty());    // already on
  CHECK(sets_of({"training.precision=fp8", "features.model_code=torchtitan", "features.attention=flash",
                 "parallel.zero_stage=3", "parallel.pp=1"})
            .empty());                                                               // torchao keeps bf16 weights
}

TEST_CASE("diagnose: activation offloading is a lever where Megatron runs it (pp = 1, no recompute)") {
  // Llama-2-13B (40 layers), tp 4; pp and the features as each case sets them.
  auto sets_of = [&](const std::map<std::string, std::string>& set) {
    const auto loaded = config::load_scenario_string(scenario_text(set), kRoot + "/scenarios/levers.toml");
    std::vector<std::string> sets;
    for (const auto& [lever, s] : study::lever_candidates(loaded.base))
      if (lever == "activation offloading (half the layers)") sets = s;
    return sets;
  };
  const std::string pp1 = "tp = 4\npp = 1\n";
  CHECK(sets_of({{"parallel", pp1}}) == std::vector<std::string>{"features.activation_offload_layers=20"});
  CHECK(sets_of({}).empty());                                                             // pp 2
  CHECK(sets_of({{"parallel", pp1}, {"recompute", "\"selective\""}}).empty());          // recompute
  CHECK(sets_of({{"parallel", pp1}, {"activation_offload_layers", "8"}}).empty());        // already on
}

TEST_CASE("diagnose: the power limit is a lever where the board runs below the calibration's limit") {
  const auto path = kRoot + "/scenarios/8xh100_llama3_8b.toml";
  auto sets_of = [](const std::vector<std::string>& overrides) {
    return lever_sets("8xh100_llama3_8b.toml", overrides, "power limit 700 W");
  };
  CHECK(sets_of({"hardware.power_limit_w=500"}) == std::vector<std::string>{"hardware.power_limit_w=700"});
  CHECK(sets_of({}).empty());                                     // already at the calibration's 700 W
  CHECK(sets_of({"hardware.power_limit_w=500", "calibration=none"}).empty());   // no [power] fit
  // The lever's outcome: the step at 700 W, and the why names the clock.
  config::LoadOptions lo;
  lo.overrides = {"hardware.power_limit_w=500"};
  const auto d = study::diagnose(path, lo);
  const auto it = std::find_if(d.levers.begin(), d.levers.end(), [](const auto& l) { return l.lever == "power limit 700 W"; });
  REQUIRE(it != d.levers.end());
  CHECK(it->step_time_s < d.base.step_time_s / 1.1);
  CHECK(it->why.find("the clock the higher board limit leaves") != std::string::npos);
}

TEST_CASE("diagnose: balanced expert load is a lever of an MoE scenario whose slowest EP rank carries more") {
  // moe.imbalance above 1 (the H800 DeepSeek-V3 scenario's 1.19, from DeepSeek's profile): the lever sets it to 1.
  CHECK(lever_sets("2048xh800_deepseek_v3.toml", {}, "balanced expert load") == std::vector<std::string>{"moe.imbalance=1.0"});
  CHECK(lever_sets("2048xh800_deepseek_v3.toml", {"moe.imbalance=1.0"}, "balanced expert load").empty());
  // The Megatron-Bridge run forced its routing balanced (1.0); a dense model has no experts.
  CHECK(lever_sets("1024xh100_deepseek_v3_megatron.toml", {}, "balanced expert load").empty());
  CHECK(lever_sets("128xh100_70b.toml", {}, "balanced expert load").empty());
  CHECK(lever_sets("1024xh100_deepseek_v3_megatron.toml", {"moe.imbalance=1.3"}, "balanced expert load") ==
        std::vector<std::string>{"moe.imbalance=1.0"});
  const std::string why = study::why_it_helps("balanced expert load", "backward");
  CHECK(why.find("moe.imbalance") != std::string::npos);
  CHECK(why.find("capacity factor") != std::string::npos);
}
