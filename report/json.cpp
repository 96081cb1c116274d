#include "report/json.h"
#include "report/accuracy.h"
#include "hardware/calibration.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace mfusim::report {

std::string quote(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      case '\r': o += "\\r"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          o += buf;
        } else {
          o += static_cast<char>(c);
        }
    }
  }
  return o + "\"";
}

void JsonWriter::newline() {
  if (indent_ <= 0) return;
  out_ += '\n';
  out_.append(first_.size() * indent_, ' ');
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ += ',';
    first_.back() = false;
    newline();
  }
}

JsonWriter& JsonWriter::begin_object() {
  before_value();
  out_ += '{';
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::end_object() {
  const bool empty = first_.back();
  first_.pop_back();
  if (!empty) newline();
  out_ += '}';
  return *this;
}
JsonWriter& JsonWriter::begin_array() {
  before_value();
  out_ += '[';
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::end_array() {
  const bool empty = first_.back();
  first_.pop_back();
  if (!empty) newline();
  out_ += ']';
  return *this;
}
JsonWriter& JsonWriter::key(const std::string& k) {
  before_value();
  out_ += quote(k);
  out_ += indent_ > 0 ? ": " : ":";
  after_key_ = true;
  return *this;
}
JsonWriter& JsonWriter::value(const std::string& s) {
  before_value();
  out_ += quote(s);
  return *this;
}
JsonWriter& JsonWriter::value(double v) {
  if (!std::isfinite(v)) throw std::logic_error("non-finite number in JSON report");
  before_value();
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  out_ += buf;
  return *this;
}
JsonWriter& JsonWriter::value(long long v) {
  before_value();
  out_ += std::to_string(v);
  return *this;
}
JsonWriter& JsonWriter::value(bool v) {
  before_value();
  out_ += v ? "true" : "false";
  return *this;
}
JsonWriter& JsonWriter::raw(const std::string& json) {
  before_value();
  out_ += json;
  return *this;
}

void write_resolved(JsonWriter& w, const config::Scenario& s) {
  const auto& m = s.model;
  const auto& h = s.hardware;
  w.begin_object();
  w.key("name").value(s.name);
  w.key("model").begin_object();
  w.key("ref").value(s.model_ref);
  w.key("name").value(m.name);
  w.key("layers").value(m.layers);
  w.key("hidden").value(static_cast<long long>(m.hidden));
  w.key("ffn_hidden").value(static_cast<long long>(m.ffn_hidden));
  w.key("heads").value(m.heads);
  w.key("kv_heads").value(m.kv_heads);
  w.key("head_dim").value(static_cast<long long>(m.head_dim));
  w.key("vocab").value(static_cast<long long>(m.vocab));
  w.key("activation").value(models::to_string(m.activation));
  w.key("tied_embeddings").value(m.tied_embeddings);
  // The block's conventions, where the model file states them apart from its activation (ModelSpec).
  if (m.bias) w.key("bias").value(*m.bias);
  if (m.dropout) w.key("dropout").value(*m.dropout);
  if (m.rope) w.key("rope").value(*m.rope);
  if (m.layernorm) w.key("norm").value(*m.layernorm ? "layernorm" : "rmsnorm");
  if (m.is_moe()) {
    w.key("moe").begin_object();
    w.key("experts").value(m.moe->experts);
    w.key("top_k").value(m.moe->top_k);
    w.key("expert_ffn_hidden").value(static_cast<long long>(m.moe->expert_ffn_hidden));
    w.key("shared_experts").value(m.moe->shared_experts);
    w.key("dense_layers").value(m.moe->dense_layers);
    w.end_object();
  }
  if (m.mla) {
    w.key("mla").begin_object();
    w.key("q_lora_rank").value(static_cast<long long>(m.mla->q_lora_rank));
    w.key("kv_lora_rank").value(static_cast<long long>(m.mla->kv_lora_rank));
    w.key("qk_nope_head_dim").value(static_cast<long long>(m.mla->qk_nope_head_dim));
    w.key("qk_rope_head_dim").value(static_cast<long long>(m.mla->qk_rope_head_dim));
    w.key("v_head_dim").value(static_cast<long long>(m.mla->v_head_dim));
    w.end_object();
  }
  w.end_object();
  w.key("hardware").begin_object();
  w.key("ref").value(s.hardware_ref);
  w.key("name").value(h.name);
  w.key("peak_tflops_bf16").value(h.peak_flops_bf16 / 1e12);
  w.key("peak_tflops_fp8").value(h.peak_flops_fp8 / 1e12);
  w.key("peak_tflops_fp32").value(h.peak_flops_fp32 / 1e12);   // CUDA cores; 0 = not given
  w.key("hbm_gib").value(h.hbm_bytes / (1024.0 * 1024.0 * 1024.0));
  w.key("hbm_bandwidth_gbs").value(h.hbm_bandwidth / 1e9);
  w.key("gpus_per_node").value(h.gpus_per_node);
  w.key("nvlink_bandwidth_gbs").value(h.nvlink_bandwidth / 1e9);
  w.key("nvlink_latency_us").value(h.nvlink_latency * 1e6);
  w.key("nic_bandwidth_gbs").value(h.nic_bandwidth / 1e9);
  w.key("nic_latency_us").value(h.nic_latency * 1e6);
  w.key("launch_overhead_us").value(h.launch_overhead * 1e6);
  w.key("host_overhead_us").value(h.host_overhead * 1e6);
  w.key("host_compiled_overhead_us").value(h.host_compiled_overhead * 1e6);
  w.key("host_backward_overhead_us").value(h.host_backward_overhead * 1e6);
  w.key("host_checkpoint_overhead_us").value(h.host_checkpoint_overhead * 1e6);
  w.key("host_recompute_overhead_us").value(h.host_recompute_overhead * 1e6);
  w.key("price_per_gpu_hour").value(h.price_per_gpu_hour);   // the profile's list price, USD; 0 = none
  w.key("power_limit_w").value(h.power_limit_w);             // the board power limit; 0 = not given
  w.key("gemm_sustained_eff_bf16").value(h.gemm_sustained_eff_bf16);   // GEMM ceilings at a training step's clock;
  w.key("gemm_sustained_eff_fp8").value(h.gemm_sustained_eff_fp8);     // 0 = none (docs/cost-model.md 2h)
  w.key("attention_sustained_ratio").value(h.attention_sustained_ratio);   // 0 = none (1)
  w.end_object();
  // The calibration file as resolved (relative to the scenario, or --calibration); "" when none.
  w.key("calibration").value(!s.calibration_path.empty() ? s.calibration_path
                             : s.calibration             ? s.calibration->source
                                                         : std::string());
  w.key("calibration_choice").value(s.calibration_choice);
  w.key("calibration_note").value(s.calibration ? hardware::calibration_transfer_note(*s.calibration, s.hardware)
                                                : std::string());
  w.key("cluster").begin_object().key("gpus").value(s.gpus).end_object();
  w.key("training").begin_object();
  w.key("seq_len").value(s.training.seq_len);
  w.key("global_batch").value(s.training.global_batch);
  w.key("micro_batch").value(s.training.micro_batch);
  w.key("precision").value(config::to_string(s.training.precision));
  w.key("master_weights").value(config::to_string(s.training.master_weights));
  w.key("tokens_to_train").value(s.training.tokens_to_train);
  w.end_object();
  const auto& p = s.parallel;
  w.key("parallel").begin_object();
  w.key("tp").value(p.tp).key("pp").value(p.pp).key("dp").value(p.dp).key("cp").value(p.cp);
  w.key("ep").value(p.ep).key("vpp").value(p.vpp);
  w.key("sequence_parallel").value(p.sequence_parallel);
  w.key("distributed_optimizer").value(p.distributed_optimizer);
  if (p.first_stage_layers > 0) w.key("first_stage_layers").value(p.first_stage_layers);
  if (p.last_stage_layers > 0) w.key("last_stage_layers").value(p.last_stage_layers);
  if (!p.stage_layers.empty()) {
    w.key("stage_layers").begin_array();
    for (int n : p.stage_layers) w.value(n);
    w.end_array();
  }
  // ZeRO / FSDP (docs/fsdp.md): the stage in effect (distributed_optimizer = true is 1) and the
  // HSDP shard group in dp ranks (all of dp when not given).
  w.key("zero_stage").value(p.zero());
  w.key("shard_degree").value(p.shard_degree > 0 ? p.shard_degree : p.dp);
  w.end_object();
  w.key("schedule").begin_object();
  w.key("name").value(config::to_string(s.schedule.name));
  if (s.schedule.max_inflight > 0) w.key("max_inflight").value(s.schedule.max_inflight);
  if (s.schedule.costs) {
    const auto& c = *s.schedule.costs;
    w.key("costs").begin_object();
    w.key("f").value(c.f * 1e3).key("b").value(c.b * 1e3);
    if (c.w) w.key("w").value(*c.w * 1e3);
    w.key("comm").value(c.comm * 1e3);
    if (c.fb) w.key("fb").value(*c.fb * 1e3);
    w.end_object();
  }
  w.end_object();
  const auto& f = s.features;
  w.key("features").begin_object();
  w.key("flash_attention").value(f.flash_attention);
  w.key("fused_kernels").value(f.fused_kernels);
  w.key("overlap_grad_reduce").value(f.overlap_grad_reduce);
  w.key("overlap_param_gather").value(f.overlap_param_gather);
  w.key("tp_comm_overlap").value(f.tp_comm_overlap);
  w.key("overlap_p2p_comm").value(f.overlap_p2p_comm);
  w.key("recompute").value(config::to_string(f.recompute));
  w.key("cuda_graphs").value(f.cuda_graphs);
  w.key("python_gc").value(f.python_gc);
  w.key("dataloader_workers").value(f.dataloader_workers);
  w.key("nccl_algo").value(config::to_string(f.nccl_algo));
  w.key("dataloader_ms_per_sample").value(f.dataloader_ms_per_sample);   // -1: derived from seq_len
  w.key("gc_pause_ms").value(f.gc_pause_ms);
  w.key("gc_interval_s").value(f.gc_interval_s);
  w.key("fp8_attention").value(f.fp8_attention);
  w.key("fp8_params").value(f.fp8_params);
  w.key("optimizer_foreach").value(f.optimizer_foreach);
  w.key("activation_offload_layers").value(f.activation_offload_layers);
  w.key("fp8_recipe").value(config::to_string(f.fp8_recipe));
  w.key("fp8_amax_reduction").value(config::to_string(f.fp8_amax_reduction));
  w.key("optimizer_post_validation").value(f.optimizer_post_validation);
  w.key("attention").value(config::to_string(config::attention_of(s)));   // the variant run (resolved)
  w.key("recompute_every").value(f.recompute_every);
  w.key("recompute_num_layers").value(f.recompute_num_layers);   // 0 = every layer
  w.key("reshard_after_forward").value(f.reshard_after_forward);
  w.key("fsdp_prefetch").value(f.fsdp_prefetch);
  w.key("offload").value(config::to_string(f.offload));
  w.key("fp8_all_gather").value(f.fp8_all_gather);
  w.key("reduce_dtype").value(f.reduce_fp32 ? "fp32" : "bf16");
  w.key("fsdp_version").value(f.fsdp_version);
  if (f.megatron_fsdp) w.key("megatron_fsdp").value(true);   // absent: PyTorch's FSDP (fsdp_version)
  w.key("cross_entropy").value(config::to_string(f.cross_entropy));
  if (f.model_code != config::ModelCode::megatron) w.key("model_code").value(config::to_string(f.model_code));   // absent: megatron
  w.end_object();
  w.key("cost").begin_object().key("price_per_gpu_hour").value(s.cost.price_per_gpu_hour);
  w.key("price_source").value(s.cost.price_from_hardware ? "hardware" : s.cost.price_per_gpu_hour > 0 ? "scenario" : "none");
  w.end_object();
  const auto& rl = s.reliability;
  w.key("reliability").begin_object();
  w.key("interruptions_per_1k_gpu_days").value(rl.interruptions_per_1k_gpu_days);
  w.key("restart_minutes").value(rl.restart_minutes);
  w.key("checkpoint_interval_minutes").value(rl.checkpoint_interval_minutes);   // 0 = Young's optimum
  if (rl.checkpoint_save_s) w.key("checkpoint_save_s").value(*rl.checkpoint_save_s);   // absent: from the host link
  w.end_object();
  w.key("seed").value(static_cast<long long>(s.seed));
  w.end_object();
}

void write_step(JsonWriter& w, const step::StepResult& r, const std::vector<step::WhatIfResult>& whatifs,
                const std::string& point_json) {
  const auto& s = r.scenario;
  w.begin_object();
  if (!point_json.empty()) w.key("point").raw(point_json);
  w.key("name").value(s.name);
  w.key("resolved");
  write_resolved(w, s);
  w.key("model").begin_object();
  w.key("params").value(r.params);
  w.key("activated_params").value(r.activated_params);
  w.key("model_flops_per_token").value(r.model_flops_per_token);
  w.end_object();
  w.key("parallel").begin_object();
  w.key("tp").value(s.parallel.tp).key("pp").value(s.parallel.pp).key("dp").value(s.parallel.dp);
  w.key("cp").value(s.parallel.cp).key("ep").value(s.parallel.ep).key("vpp").value(s.parallel.vpp);
  w.key("microbatches").value(r.microbatches);
  w.end_object();
  w.key("step_time_s").value(r.step_time_s);
  w.key("makespan_s").value(r.makespan_s);
  w.key("tokens_per_s").value(r.tokens_per_s);
  w.key("tokens_per_s_per_gpu").value(r.tokens_per_s_per_gpu);
  w.key("tflops_per_gpu").value(r.tflops_per_gpu);
  w.key("mfu").value(r.mfu);
  w.key("mfu_attn").value(r.mfu_attn);
  w.key("hfu").value(r.hfu);
  if (s.training.precision == hardware::Precision::fp8) {   // MFU against the bf16 peak (additive)
    const double bf16 = s.hardware.peak_flops_bf16;
    w.key("mfu_bf16_peak").value(bf16 > 0 ? r.mfu * s.hardware.peak_flops_fp8 / bf16 : 0.0);
  }
  w.key("bubble_fraction").value(r.bubble_fraction);
  const auto& b = r.breakdown;
  w.key("breakdown_s").begin_object();
  w.key("forward").value(b.forward);
  w.key("backward").value(b.backward);
  w.key("recompute").value(b.recompute);
  w.key("optimizer").value(b.optimizer);
  w.key("tp_comm_exposed").value(b.tp_comm_exposed);
  w.key("pp_comm_exposed").value(b.pp_comm_exposed);
  w.key("dp_comm_exposed").value(b.dp_comm_exposed);
  w.key("ep_comm_exposed").value(b.ep_comm_exposed);
  w.key("cp_comm_exposed").value(b.cp_comm_exposed);
  w.key("bubble").value(b.bubble);
  w.key("imbalance").value(b.imbalance);
  w.key("dataloader").value(b.dataloader);
  w.key("gc").value(b.gc);
  w.key("launch_overhead").value(b.launch_overhead);
  w.end_object();
  w.key("breakdown_rank").value(r.breakdown_rank);
  w.key("interference_s").value(r.interference_s);
  // The ranks the breakdown's rank waits for every micro-batch and the pace of their slowest (run 40; 1 without
  // the calibration's [slowest_of_n]): every kernel's time above runs at it (docs/cost-model.md 2f).
  w.key("sync_group_ranks").value(r.sync_group_ranks);
  w.key("sync_pace").value(r.sync_pace);
  // The boards whose slowest the step waits for once per step, where the pace includes the calibration's
  // [board_spread] (run 46, docs/cost-model.md 2g); 0 where it does not.
  w.key("job_boards").value(r.job_boards);
  const auto& m = r.memory;
  w.key("memory").begin_object();
  w.key("capacity_gib").value(m.capacity_gib);
  w.key("peak_gib").value(m.peak_gib);
  w.key("fits").value(m.fits);
  w.key("per_stage_peak_gib").begin_array();
  for (double x : m.per_stage_peak_gib) w.value(x);
  w.end_array();
  w.key("parts_gib").begin_object();
  w.key("params").value(m.params_gib);
  w.key("grads").value(m.grads_gib);
  w.key("optimizer").value(m.optimizer_gib);
  w.key("activations").value(m.activations_gib);
  w.end_object();
  // The caching allocator's reserved peak (additive); absent where it was not computed (plan's
  // candidates: SimulateOptions::reserved_memory off).
  if (m.peak_reserved_gib > 0) w.key("peak_reserved_gib").value(m.peak_reserved_gib);
  w.end_object();
  if (s.training.tokens_to_train > 0) {
    // A run that does not finish has no days and no cost: null, with training_run.finishes false.
    const auto& run = r.run;
    const auto& sim = run.sim;
    const bool done = sim.finishes;
    auto num = [&](const char* k, double v) {
      if (done) w.key(k).value(v);
      else w.key(k).raw("null");
    };
    num("days_to_train", r.days_to_train);
    num("cost_usd", r.cost_usd);
    // The run around the steps (step/training_run.h; docs/training-run.md; additive).
    w.key("training_run").begin_object();
    w.key("finishes").value(done);
    w.key("days_of_steps").value(run.days_of_steps);
    num("gpu_hours", r.days_to_train * 24.0 * s.gpus);
    num("days_p5", sim.wall_p5_s / 86400.0);
    num("days_p95", sim.wall_p95_s / 86400.0);
    w.key("spread_drawn").value(done && sim.drawn);
    num("goodput", sim.goodput());
    num("interruptions", sim.interruptions_mean);
    w.key("checkpoints").value(sim.checkpoints);
    w.key("checkpoint_interval_s").value(sim.interval_s);
    w.key("checkpoint_save_s").value(run.checkpoint_save_s);
    w.key("checkpoint_save_source").value(run.save_unpriced ? "none" : run.save_from_host_link ? "host_link" : "scenario");
    w.key("checkpoint_state_gib").value(run.checkpoint_state_gib);
    w.key("lost_days").begin_object();
    num("rework", sim.rework_s / 86400.0);
    num("restarts", sim.restart_total_s / 86400.0);
    num("checkpoint_saves", sim.checkpoint_total_s / 86400.0);
    w.end_object();
    w.end_object();
  }
  w.key("warnings").begin_array();
  for (const auto& x : r.warnings) w.value(x);
  w.end_array();
  // What the modern validation set says of this GPU, precision and calibration (report/accuracy.h; additive):
  // the published steps' count and the simulated steps' errors; absent where the set has no such family.
  if (const FamilyAccuracy* f = family_accuracy(s)) {
    w.key("validated_accuracy").begin_object();
    w.key("family").value(std::string(f->gpu) + " " + f->precision);
    w.key("profile").value(f->profile);
    w.key("rows").value(f->rows_tuning + f->rows_heldout);
    w.key("mean_signed_error").value(mean_error(*f));
    w.key("mean_signed_error_tuning").value(f->mean_tuning);
    w.key("mean_signed_error_heldout").value(f->mean_heldout);
    w.key("median_abs_error_heldout").value(f->median_abs_heldout);
    w.key("max_abs_error_heldout").value(f->max_abs_heldout);
    w.key("source").value("docs/validation-modern.md");
    w.end_object();
  } else if (moe_accuracy_applies(s)) {
    // The published fp8 MoE runs the shipped scenarios write down (report/accuracy.h moe_runs).
    w.key("validated_accuracy").begin_object();
    w.key("family").value("MoE fp8");
    w.key("profile").value("calibrated");
    w.key("rows").value(static_cast<int>(moe_runs().size()));
    w.key("mean_signed_error").value(moe_mean_error());
    w.key("runs").begin_array();
    for (const MoeRun& x : moe_runs()) {
      w.begin_object();
      w.key("scenario").value(std::string("scenarios/") + x.scenario);
      w.key("run").value(x.label);
      w.key("published_tokens_per_s_per_gpu").value(x.published);
      w.key("simulated_tokens_per_s_per_gpu").value(x.simulated);
      w.key("step_error").value(step_error(x));
      w.end_object();
    }
    w.end_array();
    w.key("source").value("docs/moe-dualpipe.md");
    w.end_object();
  }
  w.key("whatif").begin_array();
  for (const auto& x : whatifs) {
    w.begin_object();
    w.key("name").value(x.name);
    w.key("step_time_s").value(x.step_time_s);
    w.key("mfu").value(x.mfu);
    w.key("delta_mfu").value(x.delta_mfu);
    w.key("fits").value(x.fits);
    if (!x.error.empty()) w.key("error").value(x.error);   // an infeasible rung (additive)
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

std::string to_json(const step::StepResult& r, const std::vector<step::WhatIfResult>& whatifs) {
  JsonWriter w;
  write_step(w, r, whatifs);
  return w.str() + "\n";
}

}  // namespace mfusim::report
