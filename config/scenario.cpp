#include "config/scenario.h"

namespace mfusim::config {

namespace {
struct ScheduleName { ScheduleKind kind; const char* name; };
constexpr ScheduleName kScheduleNames[] = {
    {ScheduleKind::gpipe, "gpipe"},       {ScheduleKind::one_f_one_b, "1f1b"},
    {ScheduleKind::interleaved_1f1b, "interleaved-1f1b"},
    {ScheduleKind::zb_h1, "zb-h1"},       {ScheduleKind::zb_h2, "zb-h2"},
    {ScheduleKind::zb_v, "zb-v"},         {ScheduleKind::dualpipe, "dualpipe"},
    {ScheduleKind::dualpipev, "dualpipev"},
    {ScheduleKind::zb_auto, "zb-auto"},   {ScheduleKind::v_half, "v-half"},
    {ScheduleKind::v_min, "v-min"},
};
}  // namespace

const char* to_string(ScheduleKind k) {
  for (const auto& s : kScheduleNames)
    if (s.kind == k) return s.name;
  return "?";
}

std::optional<ScheduleKind> schedule_from_string(const std::string& name) {
  for (const auto& s : kScheduleNames)
    if (name == s.name) return s.kind;
  return std::nullopt;
}

const std::vector<ScheduleKind>& all_schedules() {
  static const std::vector<ScheduleKind> all = [] {
    std::vector<ScheduleKind> v;
    for (const auto& s : kScheduleNames) v.push_back(s.kind);
    return v;
  }();
  return all;
}

const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
    case Recompute::selective_op: return "selective-op";
  }
  return "?";
}

const char* to_string(MoeDispatcher d) {
  return d == MoeDispatcher::deepep ? "deepep" : "alltoall";
}

const char* to_string(NcclAlgo a) {
  switch (a) {
    case NcclAlgo::auto_: return "auto";
    case NcclAlgo::ring: return "ring";
    case NcclAlgo::tree: return "tree";
  }
  return "?";
}

const std::vector<std::string>& attention_names() {
  static const std::vector<std::string> names = {"flash",     "cudnn", "hf_eager", "sdpa_math", "megatron_unfused",
                                                 "megatron_unfused_fp32", "torch_eager", "flash2",
                                                 "triton_flash"};
  return names;
}

const char* to_string(Attention a) { return attention_names()[static_cast<std::size_t>(a)].c_str(); }
const char* to_string(ModelCode c) { return c == ModelCode::torchtitan ? "torchtitan" : "megatron"; }
const char* to_string(Fp8Recipe r) {
  switch (r) {
    case Fp8Recipe::current: return "current";
    case Fp8Recipe::mxfp8: return "mxfp8";
    case Fp8Recipe::blockwise: return "blockwise";
    default: return "tensorwise";
  }
}
const char* to_string(Fp8AmaxReduction r) {
  switch (r) {
    case Fp8AmaxReduction::tp_cp: return "tp_cp";
    case Fp8AmaxReduction::tp: return "tp";
    case Fp8AmaxReduction::none: return "none";
    default: return "tp_dp_cp";
  }
}
const char* to_string(CrossEntropy c) {
  return c == CrossEntropy::fp32 ? "fp32" : c == CrossEntropy::compiled ? "compiled" : "fused";
}

Attention attention_of(const Scenario& s) {
  const Features& f = s.features;
  if (f.attention) return *f.attention;
  if (f.flash_attention) return Attention::flash;
  if (s.training.master_weights == MasterWeights::fp32_autocast) return Attention::torch_eager;
  return f.fused_kernels ? Attention::megatron_unfused : Attention::megatron_unfused_fp32;
}

const char* to_string(Precision p) { return p == Precision::fp8 ? "fp8" : "bf16"; }

const char* to_string(MasterWeights w) {
  return w == MasterWeights::fp32_autocast ? "fp32-autocast" : "bf16-params";
}

const char* to_string(Offload o) {
  return o == Offload::optimizer ? "optimizer" : o == Offload::params ? "params" : "none";
}

}  // namespace mfusim::config
