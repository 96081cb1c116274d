// The checking phase: ranges and combinations (SPEC §3), shared by the
// loaders (with positions) and validate() (without).
#include <algorithm>

#include "config/read_context.h"
#include "hardware/calibration.h"
#include "schedules/schedule.h"

namespace mfusim::config::detail {

namespace fs = std::filesystem;
using Kind = Value::Kind;

void check_model(const models::ModelSpec& m, const Sink& err) {
  const std::string n = m.name.empty() ? "the model" : m.name;
  auto range = [&](const std::string& key, std::int64_t v, std::int64_t lo, std::int64_t hi) {
    if (v < lo || v > hi)
      err(key, "'" + key + "' = " + std::to_string(v) + " is out of range (" + std::to_string(lo) + " .. " +
                   std::to_string(hi) + ")");
    return v >= lo && v <= hi;
  };
  bool ok = range("model.layers", m.layers, 1, 100000);
  ok &= range("model.hidden", m.hidden, 1, 1 << 22);
  ok &= range("model.heads", m.heads, 1, 1 << 16);
  ok &= range("model.kv_heads", m.kv_heads, 1, 1 << 16);
  ok &= range("model.vocab", m.vocab, 1, 1 << 26);
  ok &= range("model.head_dim", m.head_dim, 1, 1 << 16);
  range("model.mtp_depth", m.mtp_depth, 0, 16);
  const bool all_moe = m.moe && m.moe->dense_layers == 0;
  ok &= range("model.ffn_hidden", m.ffn_hidden, all_moe ? 0 : 1, 1 << 24);
  if (ok && m.heads % m.kv_heads != 0)
    err("model.kv_heads", "kv_heads=" + std::to_string(m.kv_heads) + " does not divide heads=" +
                              std::to_string(m.heads) + " (grouped-query attention needs whole groups)");
  if (m.moe) {
    const auto& e = *m.moe;
    bool eok = range("model.moe.experts", e.experts, 1, 1 << 16);
    eok &= range("model.moe.top_k", e.top_k, 1, 1 << 16);
    range("model.moe.expert_ffn_hidden", e.expert_ffn_hidden, 1, 1 << 24);
    range("model.moe.shared_experts", e.shared_experts, 0, 1 << 16);
    range("model.moe.dense_layers", e.dense_layers, 0, std::max(0, m.layers));
    if (eok && e.top_k > e.experts)
      err("model.moe.top_k", "top_k=" + std::to_string(e.top_k) + " exceeds experts=" + std::to_string(e.experts));
  }
  if (m.mla) {
    const auto& a = *m.mla;
    range("model.mla.q_lora_rank", a.q_lora_rank, 0, 1 << 20);
    range("model.mla.kv_lora_rank", a.kv_lora_rank, 1, 1 << 20);
    range("model.mla.qk_nope_head_dim", a.qk_nope_head_dim, 0, 1 << 16);
    range("model.mla.qk_rope_head_dim", a.qk_rope_head_dim, 0, 1 << 16);
    range("model.mla.v_head_dim", a.v_head_dim, 1, 1 << 16);
  }
}

void check_hardware(const hardware::HardwareSpec& h, const Sink& err) {
  // Physical plausibility bounds (docs/scenario.md), in the file's units: generous,
  // but they keep every duration the simulator derives inside its int64 nanoseconds.
  auto bounded = [&](const std::string& key, double v, double scale, double lo, double hi) {
    const double x = v / scale;
    if (x < lo || x > hi)
      err(key, "'" + key + "' = " + fmt(x) + " is outside the physically plausible range [" + fmt(lo) + ", " +
                   fmt(hi) + "]");
  };
  auto positive = [&](const std::string& key, double v, double scale, double lo, double hi) {
    if (!(v > 0)) err(key, "'" + key + "' must be > 0 (got " + fmt(v / scale) + ")");
    else bounded(key, v, scale, lo, hi);
  };
  bounded("hardware.sms", h.sms, 1, 0, 100000);
  auto nonneg = [&](const std::string& key, double v, double scale, double hi = 1e6) {
    if (!(v >= 0)) err(key, "'" + key + "' must be >= 0 (got " + fmt(v / scale) + ")");
    else bounded(key, v, scale, 0, hi);
  };
  positive("hardware.peak_tflops_bf16", h.peak_flops_bf16, 1e12, 1e-3, 1e6);
  nonneg("hardware.peak_tflops_fp8", h.peak_flops_fp8, 1e12);
  nonneg("hardware.peak_tflops_fp32", h.peak_flops_fp32, 1e12);
  nonneg("hardware.price_per_gpu_hour", h.price_per_gpu_hour, 1);
  nonneg("hardware.power_limit_w", h.power_limit_w, 1, 1e5);
  // Fractions of a rate: 0 = not given; otherwise 0.05 .. 1 (above 1 no kernel reaches it; below 0.05 no
  // measured part runs, and a mistyped 1e-6 would make a step last days).
  auto fraction = [&](const std::string& key, double v) {
    if (v == 0) return;
    if (!(v >= 0)) err(key, "'" + key + "' must be >= 0 (got " + fmt(v) + ")");
    else bounded(key, v, 1, 0.05, 1);
  };
  fraction("hardware.gemm_sustained_eff_bf16", h.gemm_sustained_eff_bf16);
  fraction("hardware.gemm_sustained_eff_fp8", h.gemm_sustained_eff_fp8);
  fraction("hardware.attention_sustained_ratio", h.attention_sustained_ratio);
  if (h.peak_flops_fp8 > 0 && h.peak_flops_fp8 < 1e9) bounded("hardware.peak_tflops_fp8", h.peak_flops_fp8, 1e12, 1e-3, 1e6);
  positive("hardware.hbm_gib", h.hbm_bytes, 1024.0 * 1024.0 * 1024.0, 1e-3, 1e6);
  positive("hardware.hbm_bandwidth_gbs", h.hbm_bandwidth, 1e9, 1, 1e6);
  positive("hardware.nvlink_bandwidth_gbs", h.nvlink_bandwidth, 1e9, 1, 1e6);
  positive("hardware.nic_bandwidth_gbs", h.nic_bandwidth, 1e9, 1, 1e6);
  nonneg("hardware.nvlink_latency_us", h.nvlink_latency, 1e-6);
  nonneg("hardware.nic_latency_us", h.nic_latency, 1e-6);
  nonneg("hardware.launch_overhead_us", h.launch_overhead, 1e-6);
  nonneg("hardware.host_overhead_us", h.host_overhead, 1e-6);
  nonneg("hardware.host_compiled_overhead_us", h.host_compiled_overhead, 1e-6);
  nonneg("hardware.host_backward_overhead_us", h.host_backward_overhead, 1e-6);
  nonneg("hardware.host_checkpoint_overhead_us", h.host_checkpoint_overhead, 1e-6);
  nonneg("hardware.host_recompute_overhead_us", h.host_recompute_overhead, 1e-6);
  if (h.gpus_per_node < 1 || h.gpus_per_node > 1 << 20)
    err("hardware.gpus_per_node", "'hardware.gpus_per_node' must be >= 1 (got " + std::to_string(h.gpus_per_node) + ")");
}

// Ranges and combinations (SPEC §3), on a scenario from a file or built in code.
void check_scenario(const Scenario& s, const Sink& err) {
  const auto& m = s.model;
  const auto& par = s.parallel;
  const auto& tr = s.training;
  bool model_ok = true;
  check_model(m, [&](const std::string& k, const std::string& msg) {
    model_ok = false;
    err(k, msg);
  });
  check_hardware(s.hardware, err);
  // A power limit the calibration's [power] fit cannot meet with any clock (at or below its base power).
  // One so low that its clock lies far below every clock measured: outside what the curve can say (the
  // H200's own lowest settable limit is 200 W, run 33's env.txt).
  if (s.calibration && s.calibration->has_power && hardware::power_fit_applies(s.calibration->power, s.hardware)) {
    const auto& w = s.calibration->power;
    const double f = hardware::power_limited_clock_mhz(w, s.hardware.power_limit_w, s.hardware.sms);
    if (!(s.hardware.power_limit_w > w.base_w))
      err("hardware.power_limit_w", "'hardware.power_limit_w' = " + fmt(s.hardware.power_limit_w) +
                                        " W is at or below the board power the calibration measured with no SM running "
                                        "GEMMs (" + fmt(w.base_w) + " W): no SM clock meets it");
    else if (f < 0.5 * w.min_clock_mhz)
      err("hardware.power_limit_w", "'hardware.power_limit_w' = " + fmt(s.hardware.power_limit_w) + " W leaves a clock of " +
                                        fmt(f) + " MHz, below half the lowest the calibration measured (" +
                                        fmt(w.min_clock_mhz) + " MHz): outside what its power curve can say");
  }

  auto range = [&](const std::string& key, std::int64_t v, std::int64_t lo, std::int64_t hi) {
    if (v < lo || v > hi) {
      err(key, "'" + key + "' = " + std::to_string(v) + " is out of range (" + std::to_string(lo) + " .. " +
                   std::to_string(hi) + ")");
      return false;
    }
    return true;
  };
  bool ok = range("cluster.gpus", s.gpus, 1, kMaxGpus);
  ok &= range("training.seq_len", tr.seq_len, 1, kMaxSeq);
  ok &= range("training.global_batch", tr.global_batch, 1, kMaxBatch);
  ok &= range("training.micro_batch", tr.micro_batch, 1, kMaxBatch);
  ok &= range("parallel.tp", par.tp, 1, kMaxGpus);
  ok &= range("parallel.pp", par.pp, 1, kMaxGpus);
  ok &= range("parallel.cp", par.cp, 1, kMaxGpus);
  ok &= range("parallel.ep", par.ep, 1, kMaxGpus);
  ok &= range("parallel.vpp", par.vpp, 1, 1024);
  ok &= range("parallel.dp", par.dp, 0, kMaxGpus);
  ok &= range("parallel.first_stage_layers", par.first_stage_layers, 0, 100000);
  ok &= range("parallel.last_stage_layers", par.last_stage_layers, 0, 100000);
  range("features.dataloader_workers", s.features.dataloader_workers, 0, 4096);
  // ZeRO / FSDP (docs/fsdp.md).
  range("parallel.zero_stage", par.zero_stage, 0, 3);
  range("features.fsdp_prefetch", s.features.fsdp_prefetch, 0, 64);
  range("features.fsdp_version", s.features.fsdp_version, 1, 2);
  if (s.features.megatron_fsdp && par.zero() != 3)
    err("features.megatron_fsdp", "'features.megatron_fsdp' is Megatron-FSDP's ZeRO-3: it needs parallel.zero_stage = 3 "
                                  "(zero_stage is " + std::to_string(par.zero()) + ")");
  if (range("features.recompute_every", s.features.recompute_every, 1, 100000) && s.features.recompute_every > 1 &&
      s.features.recompute != Recompute::full)
    err("features.recompute_every", "'features.recompute_every' = " + std::to_string(s.features.recompute_every) +
                                        " checkpoints every N-th block fully: it needs features.recompute = \"full\"");
  if (range("features.recompute_num_layers", s.features.recompute_num_layers, 0, 100000) &&
      s.features.recompute_num_layers > 0) {
    if (s.features.recompute != Recompute::full)
      err("features.recompute_num_layers", "'features.recompute_num_layers' = " + std::to_string(s.features.recompute_num_layers) +
                                               " checkpoints the first N layers of each chunk fully (Megatron's block method): it "
                                               "needs features.recompute = \"full\"");
    else if (s.features.model_code == ModelCode::torchtitan)
      err("features.recompute_num_layers", "'features.recompute_num_layers' is Megatron's block method; torchtitan "
                                           "checkpoints every N-th block instead (features.recompute_every)");
    else if (s.features.recompute_every > 1)
      err("features.recompute_num_layers", "'features.recompute_num_layers' and 'features.recompute_every' = " +
                                               std::to_string(s.features.recompute_every) + " both choose the checkpointed "
                                               "layers: give one of them");
  }
  if (range("parallel.shard_degree", par.shard_degree, 0, kMaxGpus) && par.shard_degree > 0 && par.dp > 0 &&
      par.dp % par.shard_degree != 0)
    err("parallel.shard_degree", "shard_degree=" + std::to_string(par.shard_degree) + " does not divide dp=" +
                                     std::to_string(par.dp) + " (HSDP shards within groups of shard_degree ranks)");
  // The sharded path (ZeRO-2/3, HSDP, offload; step/fsdp.cpp, models::sharded_static_memory) shards the routed
  // experts over the shard x cp / ep ranks of a shard group that hold the same experts: ep and the shard group
  // must divide one another (ep below it: groups of that many; above it: each rank holds its experts whole).
  const bool sharded_path = par.zero() >= 2 || (par.shard_degree > 0 && par.shard_degree != par.dp) ||
                            s.features.offload != Offload::none;
  if (sharded_path && par.ep > 1 && par.dp > 0) {
    const long long shard = static_cast<long long>(par.shard()) * std::max(1, par.cp);
    if (shard % par.ep != 0 && par.ep % shard != 0)
      err("parallel.ep", "expert parallel size (ep=" + std::to_string(par.ep) + ") and the shard group (shard_degree x cp = " +
                             std::to_string(shard) + ") must divide one another under ZeRO-2/3 or HSDP: the routed experts "
                             "are sharded over the shard group's ranks that hold the same experts");
  }
  // Megatron's activation CPU offloading (megatron/core/transformer/transformer_config.py: "CPU offloading
  // can be done only for layers less than num_layers", "no support for Pipeline parallelism with CPU
  // offloading", "CPU offloading does not work when activation recomputation is enabled";
  // Megatron-Bridge: "CUDA graphs not supported with CPU offloading").
  if (range("features.activation_offload_layers", s.features.activation_offload_layers, 0, 100000) &&
      s.features.activation_offload_layers > 0) {
    const std::string k = "features.activation_offload_layers";
    const std::string n = "'" + k + "' = " + std::to_string(s.features.activation_offload_layers);
    if (s.features.activation_offload_layers >= m.layers)
      err(k, n + ": Megatron offloads fewer layers than the model's " + std::to_string(m.layers));
    else if (par.pp != 1 || s.schedule.name != ScheduleKind::one_f_one_b)
      err(k, n + ": Megatron's CPU offloading runs without pipeline parallelism (parallel.pp = 1, schedule 1f1b)");
    else if (s.features.recompute != Recompute::none)
      err(k, n + ": Megatron's CPU offloading does not run with activation recomputation (features.recompute = \"none\")");
    else if (s.features.cuda_graphs)
      err(k, n + ": CPU offloading does not run under CUDA graphs (features.cuda_graphs = false)");
    else if (!(s.hardware.pcie_bandwidth > 0))
      err(k, n + " needs the hardware's 'pcie_bandwidth_gbs' (the host link the activations cross)");
  }
  if (par.zero() == 0 && s.features.offload != Offload::none)
    err("features.offload", "'features.offload' = \"" + std::string(to_string(s.features.offload)) +
                                "\" needs a sharded optimizer (parallel.zero_stage >= 1)");
  if (s.features.offload != Offload::none && !(s.hardware.pcie_bandwidth > 0))
    err("features.offload", "'features.offload' needs the hardware's 'pcie_bandwidth_gbs' (host<->GPU transfers)");
  if (s.features.offload != Offload::none && !(s.hardware.host_memory_bandwidth > 0))
    err("features.offload", "'features.offload' needs the hardware's 'host_memory_bandwidth_gbs' (the host's Adam step)");
  if (par.zero() == 3 && (s.schedule.name == ScheduleKind::dualpipe || s.schedule.name == ScheduleKind::dualpipev))
    err("parallel.zero_stage", "zero_stage = 3 with schedule '" + std::string(to_string(s.schedule.name)) +
                                   "' is not modelled (its F&B pairs interleave two chains' units)");
  if (par.zero() < 3 && s.features.offload == Offload::params)
    err("features.offload", "'features.offload' = \"params\" needs parallel.zero_stage = 3 (sharded parameters)");
  range("schedule.max_inflight", s.schedule.max_inflight, 0, kMaxBatch);
  if (!(s.features.dataloader_ms_per_sample >= 0 || s.features.dataloader_ms_per_sample == -1))
    err("features.dataloader_ms_per_sample", "'features.dataloader_ms_per_sample' must be >= 0 ms (got " +
                                                 fmt(s.features.dataloader_ms_per_sample) + ")");
  if (!(s.features.gc_pause_ms >= 0 && s.features.gc_pause_ms <= 1e6))
    err("features.gc_pause_ms", "'features.gc_pause_ms' must be in [0, 1e6] ms (got " + fmt(s.features.gc_pause_ms) + ")");
  range("moe.max_nodes_per_token", s.moe.max_nodes_per_token, 1, kMaxGpus);
  range("moe.comm_sms", s.moe.comm_sms, 0, 1024);
  if (s.moe.dispatcher == MoeDispatcher::deepep && s.hardware.sms > 0 && s.moe.comm_sms >= s.hardware.sms)
    err("moe.comm_sms", "'moe.comm_sms' = " + std::to_string(s.moe.comm_sms) + " leaves no SM for compute on " +
                            s.hardware.name + " (" + std::to_string(s.hardware.sms) + " SMs)");
  if (!(s.moe.imbalance >= 1 && s.moe.imbalance <= 1e3))
    err("moe.imbalance", "'moe.imbalance' (max over mean tokens per EP rank) must be in [1, 1000] (got " +
                             fmt(s.moe.imbalance) + ")");
  if (!(s.moe.nvlink_gbs >= 0 && s.moe.nvlink_gbs <= 1e6))
    err("moe.nvlink_gbs", "'moe.nvlink_gbs' must be in [0, 1e6] GB/s (got " + fmt(s.moe.nvlink_gbs) + ")");
  if (!(s.moe.rdma_gbs >= 0 && s.moe.rdma_gbs <= 1e6))
    err("moe.rdma_gbs", "'moe.rdma_gbs' must be in [0, 1e6] GB/s (got " + fmt(s.moe.rdma_gbs) + ")");
  if (s.moe.overlap_ep_comm) {
    // Megatron-LM's own conditions (transformer_config.py, overlap_moe_expert_parallel_comm).
    const std::string sched = to_string(s.schedule.name);
    if (!s.model.is_moe() || par.ep <= 1)
      err("moe.overlap_ep_comm", "'moe.overlap_ep_comm' overlaps expert-parallel all-to-alls: it needs an MoE model "
                                 "with parallel.ep > 1 (ep=" + std::to_string(par.ep) + ")");
    else if (!schedules::combined_1f1b_applies(sched, par.pp))
      err("moe.overlap_ep_comm", "'moe.overlap_ep_comm' (Megatron's combined 1F1B) runs with schedule "
                                 "'interleaved-1f1b', or '1f1b' at pp = 1 (got '" + sched + "', pp=" + std::to_string(par.pp) +
                                 "); DualPipe's F&B pairs overlap the all-to-alls already");
    else if (s.features.recompute == Recompute::full)
      err("moe.overlap_ep_comm", "'moe.overlap_ep_comm' cannot be used with features.recompute = \"full\" (as in Megatron-LM)");
  }
  // Like moe.fp8_dispatch it acts with DeepEP's dispatcher over ep > 1 only (the planner varies both);
  // on a model without shared experts it could never act.
  if (s.moe.shared_in_combine && !(s.model.moe && s.model.moe->shared_experts > 0))
    err("moe.shared_in_combine", "'moe.shared_in_combine': the model has no shared experts");
  if (!(s.features.gc_interval_s > 0 && s.features.gc_interval_s <= 1e9))
    err("features.gc_interval_s", "'features.gc_interval_s' must be in (0, 1e9] s (got " + fmt(s.features.gc_interval_s) + ")");
  if (!(tr.tokens_to_train >= 0))
    err("training.tokens_to_train", "'training.tokens_to_train' must be >= 0 (got " + fmt(tr.tokens_to_train) + ")");
  else if (tr.tokens_to_train > 1e18)
    err("training.tokens_to_train", "'training.tokens_to_train' = " + fmt(tr.tokens_to_train) +
                                        " is outside the plausible range [0, 1e+18] tokens");
  if (!(s.cost.price_per_gpu_hour >= 0))
    err("cost.price_per_gpu_hour",
        "'cost.price_per_gpu_hour' must be >= 0 (got " + fmt(s.cost.price_per_gpu_hour) + ")");
  else if (s.cost.price_per_gpu_hour > 1e6)
    err("cost.price_per_gpu_hour", "'cost.price_per_gpu_hour' = " + fmt(s.cost.price_per_gpu_hour) +
                                       " is outside the plausible range [0, 1e+06] USD");
  {
    const auto& rl = s.reliability;
    auto reliability_range = [&](const char* key, double v, double hi, const char* unit) {
      const std::string k = std::string("reliability.") + key;
      if (!(v >= 0 && v <= hi))
        err(k, "'" + k + "' = " + fmt(v) + " is outside the plausible range [0, " + fmt(hi) + "] " + unit);
    };
    reliability_range("interruptions_per_1k_gpu_days", rl.interruptions_per_1k_gpu_days, 1e6, "interruptions per 1,000 GPU-days");
    reliability_range("restart_minutes", rl.restart_minutes, 1e4, "minutes");
    reliability_range("checkpoint_interval_minutes", rl.checkpoint_interval_minutes, 1e7, "minutes");
    if (rl.checkpoint_save_s) reliability_range("checkpoint_save_s", *rl.checkpoint_save_s, 1e7, "s");
  }
  if (s.features.dataloader_ms_per_sample > 1e6)
    err("features.dataloader_ms_per_sample", "'features.dataloader_ms_per_sample' = " +
                                                 fmt(s.features.dataloader_ms_per_sample) +
                                                 " is outside the plausible range [0, 1e+06] ms");
  if (s.schedule.costs) {
    const auto& c = *s.schedule.costs;
    if (!(c.f > 0)) err("schedule.costs.f", "'schedule.costs.f' must be > 0 ms (got " + fmt(c.f * 1e3) + ")");
    if (!(c.b > 0)) err("schedule.costs.b", "'schedule.costs.b' must be > 0 ms (got " + fmt(c.b * 1e3) + ")");
    if (c.w && !(*c.w >= 0)) err("schedule.costs.w", "'schedule.costs.w' must be >= 0 ms (got " + fmt(*c.w * 1e3) + ")");
    if (!(c.comm >= 0))
      err("schedule.costs.comm", "'schedule.costs.comm' must be >= 0 ms (got " + fmt(c.comm * 1e3) + ")");
    if (c.fb && !(*c.fb > 0)) err("schedule.costs.fb", "'schedule.costs.fb' must be > 0 ms (got " + fmt(*c.fb * 1e3) + ")");
    // At most 1e6 ms (1000 s) per op: a step of many such ops stays far inside int64 nanoseconds.
    auto upper = [&](const char* key, double v) {
      if (v > 1e3) {
        std::string msg = "'";
        msg += key;
        msg += "' = " + fmt(v * 1e3) + " ms is outside the plausible range (at most 1e+06 ms)";
        err(key, msg);
      }
    };
    upper("schedule.costs.f", c.f);
    upper("schedule.costs.b", c.b);
    if (c.w) upper("schedule.costs.w", *c.w);
    upper("schedule.costs.comm", c.comm);
    if (c.fb) upper("schedule.costs.fb", *c.fb);
  }
  if (tr.precision == Precision::fp8 && !(s.hardware.peak_flops_fp8 > 0))
    err("training.precision", "precision \"fp8\" needs FP8 tensor cores, but hardware '" + s.hardware.name +
                                  "' has no peak_tflops_fp8");
  if (tr.precision == Precision::fp8 && s.features.fp8_recipe == Fp8Recipe::mxfp8 &&
      hardware::gpu_family(s.hardware.name) != "blackwell")
    err("features.fp8_recipe", "'features.fp8_recipe' = \"mxfp8\" needs Blackwell's block-scaled tensor cores, but hardware '" +
                                   s.hardware.name + "' is not a Blackwell GPU (Transformer Engine refuses MXFP8 before "
                                   "SM 10.0): use \"tensorwise\" or \"current\"");
  if (s.features.fp8_params) {
    if (tr.precision != Precision::fp8)
      err("features.fp8_params", "'features.fp8_params' keeps the weights in fp8, which needs training.precision = \"fp8\"");
    else if (s.features.model_code == ModelCode::torchtitan)
      err("features.fp8_params", "'features.fp8_params' is Megatron's --fp8-param-gather (Transformer Engine's fp8 weights); "
                                 "torchtitan keeps bf16 weights: use features.fp8_all_gather for fp8 gathers");
    else if (tr.master_weights == MasterWeights::fp32_autocast)
      err("features.fp8_params", "'features.fp8_params' needs Megatron's bf16 weights recipe, not training.master_weights = "
                                 "\"fp32-autocast\"");
    else if (s.parallel.zero() >= 3 && !s.features.megatron_fsdp)
      err("features.fp8_params", "'features.fp8_params' is Megatron's --fp8-param-gather; under zero_stage 3 it needs "
                                 "Megatron-FSDP, features.megatron_fsdp = true (PyTorch's FSDP keeps fp32 shards: use "
                                 "features.fp8_all_gather for fp8 gathers)");
  }
  if (attention_of(s) == Attention::sdpa_math && !(s.hardware.peak_flops_fp32 > 0))
    err("features.attention", "attention \"sdpa_math\" runs its matmuls in fp32 on the CUDA cores, but hardware '" +
                                  s.hardware.name + "' has no peak_tflops_fp32");
  // torchtitan's block (docs/fsdp.md): its dense Llama model.py (RMSNorm, RoPE, GQA, SwiGLU) over
  // F.scaled_dot_product_attention's fused backends, with bf16 parameters (FSDP2 MixedPrecisionPolicy).
  if (s.features.model_code == ModelCode::torchtitan) {
    const std::string tt = "features.model_code = \"torchtitan\" is torchtitan's dense Llama block";
    if (m.activation != models::Activation::swiglu || m.mla || m.is_moe())
      err("features.model_code", tt + " (RMSNorm, RoPE, GQA, SwiGLU): model '" + m.name +
                                     "' is not one (GELU or squared-ReLU, MLA or MoE layers)");
    const Attention a = attention_of(s);
    if (!fused_attention(a))
      err("features.model_code", tt + " calling F.scaled_dot_product_attention's flash or cuDNN backend: attention \"" +
                                     std::string(to_string(a)) + "\" is another path");
    if (tr.master_weights == MasterWeights::fp32_autocast)
      err("features.model_code", tt + " with bf16 parameters (FSDP2's MixedPrecisionPolicy): master_weights "
                                     "\"fp32-autocast\" is the plain PyTorch AMP recipe");
  }
  if (!ok) return;

  // Products of in-range values that the accounting forms: one micro-batch's activation
  // elements (micro_batch * seq_len * hidden) must stay exact in int64 and double (2^53).
  if (model_ok && static_cast<double>(tr.micro_batch) * static_cast<double>(tr.seq_len) *
                          static_cast<double>(m.hidden) > 9007199254740992.0)
    err("training.micro_batch", "micro_batch*seq_len*hidden = " + std::to_string(tr.micro_batch) + "*" +
                                    std::to_string(tr.seq_len) + "*" + std::to_string(m.hidden) +
                                    " activation elements per micro-batch exceed 2^53");

  // Cluster shape: gpus = tp * pp * cp * dp.
  const std::int64_t mp = mul(mul(par.tp, par.pp), par.cp);
  int dp = par.dp;
  if (s.gpus % mp != 0) {
    err("cluster.gpus", "gpus=" + std::to_string(s.gpus) + " is not a multiple of tp*pp*cp = " + std::to_string(par.tp) +
                            "*" + std::to_string(par.pp) + "*" + std::to_string(par.cp) + " = " + std::to_string(mp));
    dp = 0;
  } else {
    const int derived = static_cast<int>(s.gpus / mp);
    if (dp != 0 && dp != derived)
      err("parallel.dp", "dp=" + std::to_string(dp) + " does not match gpus / (tp*pp*cp) = " + std::to_string(s.gpus) +
                             " / " + std::to_string(mp) + " = " + std::to_string(derived));
    dp = derived;
  }

  if (model_ok) {
    // Megatron-LM: heads and query groups are split over tensor-parallel ranks.
    if (m.heads % par.tp != 0)
      err("parallel.tp", "tensor parallel size (tp=" + std::to_string(par.tp) + ") does not divide the " +
                             std::to_string(m.heads) + " attention heads of " + m.name);
    else if (m.kv_heads % par.tp != 0)
      err("parallel.tp", "tensor parallel size (tp=" + std::to_string(par.tp) + ") does not divide the " +
                             std::to_string(m.kv_heads) + " key/value heads (query groups) of " + m.name);
    if (par.ep > 1) {
      if (!m.is_moe())
        err("parallel.ep", "expert parallelism (ep=" + std::to_string(par.ep) + ") needs an MoE model; " + m.name +
                               " is dense");
      else if (m.moe->experts % par.ep != 0)
        err("parallel.ep", "expert parallel size (ep=" + std::to_string(par.ep) + ") does not divide the " +
                               std::to_string(m.moe->experts) + " experts of " + m.name);
      else if (dp > 0 && mul(mul(dp, par.cp), par.tp) % par.ep != 0)
        err("parallel.ep", "expert parallel size (ep=" + std::to_string(par.ep) + ") does not divide tp*cp*dp = " +
                               std::to_string(mul(mul(dp, par.cp), par.tp)));
    }
    // Layer split over pipeline stages (chunks virtual stages per rank).
    const std::string sched = to_string(s.schedule.name);
    const int chunks = schedules::chunks_for(sched, par.vpp);
    const std::int64_t vstages = mul(par.pp, chunks);
    const bool account_emb = par.account_for_embedding_in_pipeline_split;
    const bool account_loss = par.account_for_loss_in_pipeline_split;
    const std::string account_key = account_emb ? "parallel.account_for_embedding_in_pipeline_split"
                                                : "parallel.account_for_loss_in_pipeline_split";
    if ((account_emb || account_loss) && (!par.stage_layers.empty() || par.first_stage_layers || par.last_stage_layers)) {
      err(account_key, "account_for_embedding/loss_in_pipeline_split cannot be given with stage_layers or "
                       "first/last_stage_layers (as in Megatron-LM)");
    } else if (account_emb || account_loss) {
      // Megatron-LM (transformer_block.get_num_layers_to_build): layers + 1 per accounted end
      // divide evenly over pp, then over the chunks of each rank; the first (last) virtual stage
      // builds one transformer layer fewer.
      const std::int64_t slots = static_cast<std::int64_t>(m.layers) + (account_emb ? 1 : 0) + (account_loss ? 1 : 0);
      const std::string what = std::to_string(m.layers) + " layers of " + m.name + (account_emb ? " + the embedding" : "") +
                               (account_loss ? " + the loss" : "") + " = " + std::to_string(slots);
      if (slots % par.pp != 0)
        err(account_key, what + " do not divide evenly over pp=" + std::to_string(par.pp) + " pipeline stages");
      else if ((slots / par.pp) % chunks != 0)
        err(account_key, what + ": the " + std::to_string(slots / par.pp) + " per pipeline stage do not divide over " +
                             std::to_string(chunks) + " chunks");
    } else if (!par.stage_layers.empty()) {
      // Every middle virtual stage holds at least one layer: a stage without any never
      // runs and its sends have nothing to follow. The first and the last may hold none:
      // they still run the embedding and the LM head + loss (Megatron's
      // account_for_embedding/loss_in_pipeline_split layouts, e.g. 405B's 126 layers on
      // 128 virtual stages).
      std::int64_t sum = 0;
      bool neg = false;
      std::size_t empty_stage = par.stage_layers.size();
      for (std::size_t i = 0; i < par.stage_layers.size(); ++i) {
        const int x = par.stage_layers[i];
        sum += x;
        neg = neg || x < 0;
        const bool end_stage = i == 0 || i + 1 == par.stage_layers.size();
        if (x == 0 && !end_stage && empty_stage == par.stage_layers.size()) empty_stage = i;
      }
      if (par.first_stage_layers || par.last_stage_layers)
        err("parallel.stage_layers", "give either stage_layers or first/last_stage_layers, not both");
      if (static_cast<std::int64_t>(par.stage_layers.size()) != vstages)
        err("parallel.stage_layers", "stage_layers has " + std::to_string(par.stage_layers.size()) +
                                         " entries, expected one per pipeline stage (pp*chunks = " +
                                         std::to_string(vstages) + ")");
      else if (neg)
        err("parallel.stage_layers", "stage_layers entries must be >= 0");
      else if (empty_stage < par.stage_layers.size())
        err("parallel.stage_layers", "stage_layers[" + std::to_string(empty_stage) +
                                         "] = 0: every pipeline stage between the first and the last needs at least one layer");
      else if (sum != m.layers)
        err("parallel.stage_layers", "stage_layers sum to " + std::to_string(sum) + ", but " + m.name + " has " +
                                         std::to_string(m.layers) + " layers");
    } else if (par.first_stage_layers || par.last_stage_layers) {
      const std::int64_t fixed = par.first_stage_layers + par.last_stage_layers;
      const std::int64_t middle_stages = vstages - (par.first_stage_layers > 0) - (par.last_stage_layers > 0);
      const std::int64_t rest = m.layers - fixed;
      const std::string key = par.first_stage_layers ? "parallel.first_stage_layers" : "parallel.last_stage_layers";
      if (par.pp < 2)
        err(key, "first/last_stage_layers need a pipeline (pp >= 2, got pp=" + std::to_string(par.pp) + ")");
      else if (rest < 0 || (middle_stages == 0 && rest != 0))
        err(key, "first_stage_layers + last_stage_layers = " + std::to_string(fixed) + " does not fit the " +
                     std::to_string(m.layers) + " layers of " + m.name);
      else if (middle_stages > 0 && (rest % middle_stages != 0 || rest == 0))
        err(key, "the remaining " + std::to_string(rest) + " layers do not divide evenly over the other " +
                     std::to_string(middle_stages) + " pipeline stages");
    } else if (m.layers % vstages != 0) {
      const std::string what = chunks > 1 ? "pp*chunks = " + std::to_string(par.pp) + "*" + std::to_string(chunks) +
                                                " = " + std::to_string(vstages)
                                          : "pipeline stages (pp=" + std::to_string(par.pp) + ")";
      err("parallel.pp", what + " do not divide the " + std::to_string(m.layers) + " layers of " + m.name +
                             " (give parallel.first_stage_layers/last_stage_layers or stage_layers for an uneven split)");
    }
  }

  // Sequence split.
  if (tr.seq_len % par.cp != 0)
    err("parallel.cp", "context parallel size (cp=" + std::to_string(par.cp) + ") does not divide seq_len=" +
                           std::to_string(tr.seq_len));
  if (par.sequence_parallel && par.tp > 1 && tr.seq_len % mul(par.tp, par.cp) != 0)
    err("training.seq_len", "seq_len=" + std::to_string(tr.seq_len) + " is not divisible by tp*cp = " +
                                std::to_string(mul(par.tp, par.cp)) + " (sequence_parallel splits it over tp)");

  // Batch: global_batch = micro_batch * dp * microbatches.
  if (dp > 0) {
    const std::int64_t per_step = mul(tr.micro_batch, dp);
    if (tr.global_batch % per_step != 0) {
      err("training.global_batch", "global_batch=" + std::to_string(tr.global_batch) +
                                       " is not a multiple of micro_batch*dp = " + std::to_string(tr.micro_batch) +
                                       "*" + std::to_string(dp) + " = " + std::to_string(per_step));
    } else {
      const std::string sched = to_string(s.schedule.name);
      const int microbatches = static_cast<int>(tr.global_batch / per_step);
      const schedules::PipelineShape shape{par.pp, microbatches, schedules::chunks_for(sched, par.vpp)};
      for (const auto& e : schedules::shape_errors(sched, shape)) err("schedule.name", "schedule " + sched + ": " + e);
    }
  }
}

}  // namespace mfusim::config::detail

namespace mfusim::config {

using namespace detail;

std::vector<Diagnostic> validate(const Scenario& s) {
  std::vector<Diagnostic> diags;
  check_scenario(s, [&](const std::string&, const std::string& msg) {
    diags.push_back(Diagnostic{s.source, 0, 0, msg});
  });
  return diags;
}

}  // namespace mfusim::config
