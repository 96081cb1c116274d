// Where the modern set's error comes from (docs/validation-modern.md, "Where
// the error comes from"): for every expressible row of one half (default:
// tuning; never tune on the heldout half), the simulated step and its
// breakdown, the time per decoder layer and micro-batch split by kernel kind
// as the cost model prices it (GEMM, attention, memory-bound), and two
// first-order what-ifs that use only existing measurements and code paths:
//   attn_bf16   the attention kernels priced at the bf16 peak (what a TE fp8
//               recipe runs: DotProductAttention stays bf16 unless fp8 DPA is
//               switched on) instead of the fp8 peak the cost model uses today;
//   gemm_fp8m   (calibrated H100 fp8 rows) the GEMMs priced with the
//               calibration's measured [gemm_fp8] table and fit, which the
//               calibrated path never reads today (it uses the bf16 table).
// Each delta is (new - old) per layer-micro-batch x layers on the rank x
// micro-batches per step: a first-order estimate (no re-simulation; a change
// on the critical path of every micro-batch moves the step by about this).
//   build/validation/diagnose_modern [--half tuning|heldout] [--profile datasheet|calibrated]
// Output: one CSV line per row on stdout.
#include <cstdio>
#include <exception>
#include <string>

#include "hardware/cost_model.h"
#include "models/accounting.h"
#include "validation/modern/modern.h"

using namespace mfusim;
namespace vm = mfusim::validation::modern;

namespace {

struct Split {
  double gemm = 0, attn = 0, mem = 0;
};

Split split(const std::vector<hardware::Kernel>& ks, const hardware::CostModel& cm) {
  Split s;
  for (const auto& k : ks) {
    const double t = cm.time(k);
    if (k.kind == hardware::KernelKind::gemm) s.gemm += t;
    else if (k.kind == hardware::KernelKind::memory) s.mem += t;
    else s.attn += t;
  }
  return s;
}

double attn_time(const std::vector<hardware::Kernel>& ks, const hardware::CostModel& cm) {
  double t = 0;
  for (const auto& k : ks)
    if (hardware::is_attention(k.kind)) t += cm.time(k);
  return t;
}

// GEMM seconds from the calibration's measured fp8 table (exact shape) or fp8 fit,
// plus the launch overhead the cost model adds to every kernel.
double gemm_fp8_measured(const std::vector<hardware::Kernel>& ks, const hardware::Calibration& cal,
                         const hardware::CostModel& cm) {
  double t = 0;
  for (const auto& k : ks) {
    if (k.kind != hardware::KernelKind::gemm) continue;
    double one = -1;
    for (const auto& g : cal.gemm_fp8_table)
      if (g.m == k.m && g.n == k.n && g.k == k.k) one = g.seconds;
    if (one < 0) one = hardware::gemm_fit_seconds(cal.gemm_fp8, static_cast<double>(k.m), static_cast<double>(k.n),
                                                  static_cast<double>(k.k));
    t += k.count * one + cm.launch_time(k);
  }
  return t;
}

double gemm_time(const std::vector<hardware::Kernel>& ks, const hardware::CostModel& cm) {
  double t = 0;
  for (const auto& k : ks)
    if (k.kind == hardware::KernelKind::gemm) t += cm.time(k);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  std::string half = "tuning", profile_arg = "calibrated";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--half") half = argv[i + 1];
    else if (a == "--profile") profile_arg = argv[i + 1];
    else {
      std::fprintf(stderr, "diagnose_modern: error: unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  if ((half != "tuning" && half != "heldout") || (profile_arg != "datasheet" && profile_arg != "calibrated" && profile_arg != "sustained")) {
    std::fprintf(stderr, "diagnose_modern: error: --half tuning|heldout, --profile datasheet|calibrated\n");
    return 2;
  }
  const auto profile = profile_arg == "datasheet"   ? vm::Profile::datasheet
                       : profile_arg == "sustained" ? vm::Profile::sustained
                                                    : vm::Profile::calibrated;
  try {
    vm::Inputs in;
    std::printf("id,gpu_type,model,precision,gpus,seq,tp,pp,cp,vpp,dp,mbs,microbatches,layers_per_rank,"
                "published_s,predicted_s,error,compute_s,exposed_comm_s,bubble_s,other_s,"
                "layer_gemm_ms,layer_attn_ms,layer_mem_ms,d_attn_bf16_s,d_gemm_fp8m_s\n");
    for (const auto& r : vm::read_modern(vm::rows_path(), vm::split_path())) {
      if (r.half != half) continue;
      std::string why;
      const auto s = vm::row_scenario(r, profile, in, why);
      if (!s) continue;
      const auto c = vm::compare(r, profile, in);
      const hardware::Calibration* cal = s->calibration ? &*s->calibration : nullptr;
      const hardware::CostModel cm(s->hardware, s->training.precision, cal, s->features.cuda_graphs);
      const hardware::CostModel cm16(s->hardware, hardware::Precision::bf16, cal, s->features.cuda_graphs);
      const auto ks = models::layer_kernels(s->model, s->model.layers / 2, models::rank_shape(*s));
      Split t;
      for (const auto* v : {&ks.f, &ks.b, &ks.w, &ks.r}) {
        const auto p = split(*v, cm);
        t.gemm += p.gemm;
        t.attn += p.attn;
        t.mem += p.mem;
      }
      double d_attn = 0, d_gemm = 0;
      if (s->training.precision == hardware::Precision::fp8) {
        for (const auto* v : {&ks.f, &ks.b, &ks.w, &ks.r}) d_attn += attn_time(*v, cm16) - attn_time(*v, cm);
        if (cal && cal->has_gemm_fp8)
          for (const auto* v : {&ks.f, &ks.b, &ks.w, &ks.r}) d_gemm += gemm_fp8_measured(*v, *cal, cm) - gemm_time(*v, cm);
      }
      const double layers_per_rank = static_cast<double>(s->model.layers) / s->parallel.pp;
      const double n = layers_per_rank * c.microbatches;
      const auto& b = c.breakdown;
      const double compute = b.forward + b.backward + b.recompute;
      const double comm = b.tp_comm_exposed + b.pp_comm_exposed + b.dp_comm_exposed + b.cp_comm_exposed + b.ep_comm_exposed;
      std::printf("%s,%s,%s,%s,%d,%d,%d,%d,%d,%d,%d,%d,%d,%.4g,%.5g,%.5g,%.4f,%.5g,%.4g,%.4g,%.4g,%.5g,%.5g,%.5g,%.5g,%.5g\n",
                  r.id.c_str(), r.gpu_type.c_str(), r.model_file.c_str(), r.precision.c_str(), r.gpus, r.seq, r.tp,
                  r.pp, r.cp, r.vpp, s->parallel.dp, s->training.micro_batch, c.microbatches, layers_per_rank,
                  c.published_step_s, c.predicted_step_s, c.error, compute, comm, b.bubble,
                  c.predicted_step_s - compute - comm - b.bubble, t.gemm * 1e3, t.attn * 1e3, t.mem * 1e3,
                  d_attn * n, d_gemm * n);
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "diagnose_modern: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
