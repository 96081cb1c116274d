// Hardware files: hardware/*.toml (or an inline [hardware] table) to HardwareSpec, in SI units; load_hardware.
#include "config/read_context.h"

namespace mfusim::config::detail {

namespace fs = std::filesystem;
using Kind = Value::Kind;

namespace {

const std::vector<std::string> kHardwareKeys = {
    "name",           "peak_tflops_bf16",   "peak_tflops_fp8",   "hbm_gib",
    "hbm_bandwidth_gbs", "gpus_per_node",   "nvlink_bandwidth_gbs", "nvlink_latency_us",
    "nic_bandwidth_gbs", "nic_latency_us",  "launch_overhead_us", "host_overhead_us",
    "host_compiled_overhead_us", "host_backward_overhead_us", "host_checkpoint_overhead_us",
    "host_recompute_overhead_us", "pcie_bandwidth_gbs", "host_memory_bandwidth_gbs", "sms", "peak_tflops_fp32",
    "price_per_gpu_hour", "power_limit_w", "gemm_sustained_eff_bf16", "gemm_sustained_eff_fp8",
    "attention_sustained_ratio"};

}  // namespace

hardware::HardwareSpec read_hardware_table(Ctx& ctx, const Value& t, const std::string& default_name) {
  const std::string p = "hardware.";
  hardware::HardwareSpec h;
  h.name = default_name;
  ctx.check_keys(t, kHardwareKeys, p);
  ctx.read_string(t, "name", p, h.name);
  auto num = [&](const char* key, double scale, double& out, bool required) {
    double x = 0;
    if (ctx.read_number(t, key, p, x)) {
      if (std::isfinite(x * scale)) out = x * scale;
      else   // 1e300 GB/s has no SI value
        ctx.error(t.find(key)->pos, "'" + p + key + "' = " + fmt(x) + " is outside the physically plausible range");
    } else if (required && !t.find(key)) {
      ctx.missing(t, p + key);
    }
  };
  num("peak_tflops_bf16", 1e12, h.peak_flops_bf16, true);
  num("peak_tflops_fp8", 1e12, h.peak_flops_fp8, false);
  num("peak_tflops_fp32", 1e12, h.peak_flops_fp32, false);
  num("hbm_gib", 1024.0 * 1024.0 * 1024.0, h.hbm_bytes, true);
  num("hbm_bandwidth_gbs", 1e9, h.hbm_bandwidth, true);
  num("nvlink_bandwidth_gbs", 1e9, h.nvlink_bandwidth, true);
  num("nvlink_latency_us", 1e-6, h.nvlink_latency, false);
  num("nic_bandwidth_gbs", 1e9, h.nic_bandwidth, true);
  num("nic_latency_us", 1e-6, h.nic_latency, false);
  num("launch_overhead_us", 1e-6, h.launch_overhead, false);
  num("host_overhead_us", 1e-6, h.host_overhead, false);
  num("host_compiled_overhead_us", 1e-6, h.host_compiled_overhead, false);
  num("host_backward_overhead_us", 1e-6, h.host_backward_overhead, false);
  num("host_checkpoint_overhead_us", 1e-6, h.host_checkpoint_overhead, false);
  num("host_recompute_overhead_us", 1e-6, h.host_recompute_overhead, false);
  num("pcie_bandwidth_gbs", 1e9, h.pcie_bandwidth, false);
  num("price_per_gpu_hour", 1, h.price_per_gpu_hour, false);
  num("host_memory_bandwidth_gbs", 1e9, h.host_memory_bandwidth, false);
  num("power_limit_w", 1, h.power_limit_w, false);
  num("gemm_sustained_eff_bf16", 1, h.gemm_sustained_eff_bf16, false);
  num("gemm_sustained_eff_fp8", 1, h.gemm_sustained_eff_fp8, false);
  num("attention_sustained_ratio", 1, h.attention_sustained_ratio, false);
  ctx.read_int(t, "gpus_per_node", p, h.gpus_per_node);
  ctx.read_int(t, "sms", p, h.sms);
  return h;
}

}  // namespace mfusim::config::detail

namespace mfusim::config {

using namespace detail;

hardware::HardwareSpec load_hardware(const std::string& path) {
  Ctx ctx;
  Value tree;
  hardware::HardwareSpec h;
  if (load_tree(ctx, path, tree, Pos{path, 0, 0})) {
    h = read_hardware_table(ctx, tree, stem_of(path));
    if (ctx.diags.empty())
      check_hardware(h, [&](const std::string& key, const std::string& msg) { ctx.error(locate(ctx, key, path), msg); });
  }
  if (!ctx.diags.empty()) throw ConfigError(std::move(ctx.diags));
  return h;
}

}  // namespace mfusim::config
