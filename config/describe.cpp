// A human-readable dump of the resolved scenario (for `mfusim check`).
#include <sstream>

#include "config/loader.h"

namespace mfusim::config {

std::string describe(const Scenario& s) {
  std::ostringstream os;
  const auto& m = s.model;
  const auto& h = s.hardware;
  const auto& par = s.parallel;
  const auto& tr = s.training;
  const auto& f = s.features;
  auto yn = [](bool b) { return b ? "true" : "false"; };
  os << "scenario: " << s.name << (s.source.empty() ? "" : "  (" + s.source + ")") << "\n";
  os << "model: " << m.name << (s.model_ref.empty() ? "" : "  [" + s.model_ref + "]") << "\n"
     << "  layers " << m.layers << ", hidden " << m.hidden << ", ffn_hidden " << m.ffn_hidden << ", heads "
     << m.heads << ", kv_heads " << m.kv_heads << ", head_dim " << m.head_dim << ", vocab " << m.vocab << "\n"
     << "  activation " << models::to_string(m.activation) << ", tied_embeddings "
     << yn(m.tied_embeddings) << "\n";
  if (m.bias || m.dropout || m.rope || m.layernorm) {   // conventions the model file states apart from its activation
    os << " ";
    if (m.bias) os << " bias " << yn(*m.bias);
    if (m.dropout) os << " dropout " << yn(*m.dropout);
    if (m.rope) os << " rope " << yn(*m.rope);
    if (m.layernorm) os << " norm " << (*m.layernorm ? "layernorm" : "rmsnorm");
    os << "\n";
  }
  if (m.moe)
    os << "  moe: experts " << m.moe->experts << ", top_k " << m.moe->top_k << ", expert_ffn_hidden "
       << m.moe->expert_ffn_hidden << ", shared_experts " << m.moe->shared_experts << ", dense_layers "
       << m.moe->dense_layers << "\n";
  if (m.mla)
    os << "  mla: q_lora_rank " << m.mla->q_lora_rank << ", kv_lora_rank " << m.mla->kv_lora_rank
       << ", qk_nope_head_dim " << m.mla->qk_nope_head_dim << ", qk_rope_head_dim " << m.mla->qk_rope_head_dim
       << ", v_head_dim " << m.mla->v_head_dim << "\n";
  os << "hardware: " << h.name << (s.hardware_ref.empty() ? "" : "  [" + s.hardware_ref + "]") << "\n"
     << "  peak " << h.peak_flops_bf16 / 1e12 << " TFLOP/s bf16, " << h.peak_flops_fp8 / 1e12 << " TFLOP/s fp8; HBM "
     << h.hbm_bytes / (1024.0 * 1024.0 * 1024.0) << " GiB at " << h.hbm_bandwidth / 1e9 << " GB/s\n"
     << "  " << h.gpus_per_node << " GPUs/node; NVLink " << h.nvlink_bandwidth / 1e9 << " GB/s, "
     << h.nvlink_latency * 1e6 << " us; NIC " << h.nic_bandwidth / 1e9 << " GB/s, " << h.nic_latency * 1e6
     << " us; launch " << h.launch_overhead * 1e6 << " us, host " << h.host_overhead * 1e6
     << " us per op (" << h.host_compiled_overhead * 1e6 << " us per compiled call, "
     << h.host_backward_overhead * 1e6 << " us per backward op";
  if (h.host_checkpoint_overhead > 0 || h.host_recompute_overhead > 0)
    os << "; checkpoint " << h.host_checkpoint_overhead * 1e6 << " us per region forward, "
       << h.host_recompute_overhead * 1e6 << " us per recomputation";
  os << ")\n";
  if (h.has_sustained_rates()) {
    os << "  at a training step's clock (docs/cost-model.md 2h):";
    if (h.gemm_sustained_eff_bf16 > 0) os << " GEMMs at most " << h.gemm_sustained_eff_bf16 << " of the bf16 peak;";
    if (h.gemm_sustained_eff_fp8 > 0) os << " GEMMs at most " << h.gemm_sustained_eff_fp8 << " of the fp8 peak;";
    if (h.attention_sustained_ratio > 0)
      os << " attention at " << h.attention_sustained_ratio << " of an isolated call's rate (fits of isolated calls);";
    os << "\n";
  }
  if (!s.calibration_path.empty()) os << "calibration: " << s.calibration_path << "\n";
  os << "cluster: " << s.gpus << " GPUs";
  if (h.gpus_per_node > 0) os << " (" << (s.gpus + h.gpus_per_node - 1) / h.gpus_per_node << " nodes)";
  os << "\n";
  os << "training: seq_len " << tr.seq_len << ", global_batch " << tr.global_batch << ", micro_batch "
     << tr.micro_batch << ", precision " << to_string(tr.precision) << ", master_weights "
     << to_string(tr.master_weights);
  if (tr.tokens_to_train > 0) os << ", tokens_to_train " << tr.tokens_to_train;
  os << "\n";
  os << "parallel: tp " << par.tp << ", pp " << par.pp << ", dp " << par.dp << " (gpus / (tp*pp*cp)), cp " << par.cp
     << ", ep " << par.ep << ", vpp " << par.vpp << "\n"
     << "  sequence_parallel " << yn(par.sequence_parallel) << ", distributed_optimizer "
     << yn(par.distributed_optimizer);
  if (par.zero() >= 2 || par.shard_degree > 0)
    os << ", zero_stage " << par.zero() << ", shard_degree " << par.shard();
  os << "\n";
  if (par.first_stage_layers || par.last_stage_layers)
    os << "  first_stage_layers " << par.first_stage_layers << ", last_stage_layers " << par.last_stage_layers << "\n";
  if (!par.stage_layers.empty()) {
    os << "  stage_layers [";
    for (std::size_t i = 0; i < par.stage_layers.size(); ++i) os << (i ? ", " : "") << par.stage_layers[i];
    os << "]\n";
  }
  if (par.dp > 0 && tr.micro_batch > 0 && tr.global_batch % (tr.micro_batch * par.dp) == 0)
    os << "  micro-batches per step (per pipeline): " << s.microbatches() << "\n";
  os << "schedule: " << to_string(s.schedule.name);
  if (s.schedule.max_inflight > 0) os << ", max_inflight " << s.schedule.max_inflight;
  os << "\n";
  if (s.schedule.costs) {
    const auto& c = *s.schedule.costs;
    os << "  costs (ms): f " << c.f * 1e3 << ", b " << c.b * 1e3;
    if (c.w) os << ", w " << *c.w * 1e3;
    os << ", comm " << c.comm * 1e3;
    if (c.fb) os << ", fb " << *c.fb * 1e3;
    os << "\n";
  }
  os << "features: flash_attention " << yn(f.flash_attention) << ", fused_kernels " << yn(f.fused_kernels)
     << ", overlap_grad_reduce " << yn(f.overlap_grad_reduce) << ", overlap_param_gather "
     << yn(f.overlap_param_gather) << "\n"
     << "  tp_comm_overlap " << yn(f.tp_comm_overlap) << ", overlap_p2p_comm " << yn(f.overlap_p2p_comm) << ", recompute " << to_string(f.recompute)
     << (f.recompute_every > 1 ? " every " + std::to_string(f.recompute_every) + " blocks" : std::string())
     << (f.recompute_num_layers > 0 ? " of the first " + std::to_string(f.recompute_num_layers) + " layers of each chunk"
                                    : std::string())
     << ", cuda_graphs "
     << yn(f.cuda_graphs) << ", python_gc " << yn(f.python_gc) << ", dataloader_workers " << f.dataloader_workers
     << ", nccl_algo " << to_string(f.nccl_algo)
     << (f.optimizer_post_validation ? ", optimizer_post_validation yes" : "") << "\n"
     << "  attention " << to_string(attention_of(s)) << "\n";
  if (par.zero() >= 2 || f.offload != Offload::none)
    os << "  reshard_after_forward " << yn(f.reshard_after_forward) << ", fsdp_prefetch " << f.fsdp_prefetch
       << ", offload " << to_string(f.offload) << ", fp8_all_gather " << yn(f.fp8_all_gather) << ", reduce_dtype "
       << (f.reduce_fp32 ? "fp32" : "bf16") << (f.megatron_fsdp ? std::string(", Megatron-FSDP") : ", fsdp_version " + std::to_string(f.fsdp_version)) << "\n";
  if (f.fp8_params) os << "  fp8_params yes (weights held in fp8, gathered in fp8)\n";
  if (f.optimizer_foreach) os << "  optimizer_foreach yes (torch's foreach AdamW: an fp32 temporary of the parameters)\n";
  if (f.activation_offload_layers > 0)
    os << "  activation_offload_layers " << f.activation_offload_layers << " (saved activations to host memory)\n";
  if (f.cross_entropy == config::CrossEntropy::fp32)
    os << "  cross_entropy fp32 (torch F.cross_entropy over logits.float())\n";
  if (f.cross_entropy == config::CrossEntropy::compiled)
    os << "  cross_entropy compiled (torch.compile of F.cross_entropy over logits.float())\n";
  if (f.model_code == ModelCode::torchtitan)
    os << "  model_code torchtitan (torchtitan's Llama block" << (f.fused_kernels ? ", torch.compile'd" : ", eager") << ")\n";
  if (s.cost.price_per_gpu_hour > 0)
    os << "cost: " << s.cost.price_per_gpu_hour << " USD per GPU-hour"
       << (s.cost.price_from_hardware ? " (the hardware profile's on-demand list price)" : "") << "\n";
  {
    const auto& rl = s.reliability;
    os << "run: " << rl.interruptions_per_1k_gpu_days << " interruptions per 1,000 GPU-days"
       << (rl.interruptions_per_1k_gpu_days == Reliability{}.interruptions_per_1k_gpu_days ? " (Llama 3's)" : "")
       << ", restart " << rl.restart_minutes << " min, checkpoints ";
    if (rl.checkpoint_interval_minutes > 0) os << "every " << rl.checkpoint_interval_minutes << " min";
    else os << "at Young's interval";
    if (rl.checkpoint_save_s) os << ", a save blocks " << *rl.checkpoint_save_s << " s";
    else os << ", a save blocks the host-link copy of the rank's state";
    os << (s.training.tokens_to_train > 0 ? "\n" : " (used with training.tokens_to_train)\n");
  }
  os << "seed: " << s.seed << "\n";
  return os.str();
}

}  // namespace mfusim::config
