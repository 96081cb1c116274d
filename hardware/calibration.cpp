// Calibration files: fitting a probe output (probe/probe.cu, SPEC.md §6) into a calibration
// (`mfusim calibrate`). Reading and writing the files: calibration_io.cpp; the TOML helpers both
// use: calibration_toml.h. See calibration.h for the models fitted.
#include "hardware/calibration.h"
#include "config/loader.h"
#include "hardware/cost_model.h"
#include "io/output_file.h"

#include <Eigen/Dense>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <utility>
#include "hardware/calibration_toml.h"

namespace mfusim::hardware {
using detail::bound_text;
using detail::fail;
using detail::fmt;
using detail::parse_file;
using detail::Reader;
using detail::within;

namespace {
// The backward program form's work measures (calibration.h AttentionFit): with one program per (batch,
// head), tiles x waves and tiles x busy share (its two tile-time columns); split by key block, the slowest
// SM's tile steps.
struct ProgramWork { double head_waves = 0, head_busy = 0, split = 0; };
ProgramWork program_work(double batch, double heads, double seq_q, double seq_kv, bool causal, int sms) {
  const double nq = std::ceil(seq_q / 128), nk = std::ceil(seq_kv / 128), bh = batch * heads;
  // Causal: key block j's column holds the query blocks from the diagonal on (n (n + 1) / 2 for a square call).
  const double tiles = causal ? nq * nk / 2 + std::min(nq, nk) / 2 : nq * nk;
  return {std::ceil(bh / sms) * tiles, bh / sms * tiles, std::max(nq, bh * tiles / sms)};
}
// One launch's time under the program form: its intercept plus its tile columns x tile times x `tile_scale`.
double launch_seconds(const AttentionFit& a, const ProgramWork& w, bool split, double tile_scale) {
  return split ? a.bwd_split_overhead_s + w.split * a.bwd_split_tile_s * tile_scale
               : a.bwd_program_overhead_s +
                     (w.head_waves * a.bwd_program_tile_s + w.head_busy * a.bwd_program_tile_busy_s) * tile_scale;
}

// ------------------------------------------------------------------ fitting helpers
// Least squares for A x = b with rows weighted by 1/t (relative error).
Eigen::VectorXd solve_rel(const Eigen::MatrixXd& A, const Eigen::VectorXd& t) {
  Eigen::MatrixXd W = A;
  Eigen::VectorXd b = Eigen::VectorXd::Ones(t.size());
  for (Eigen::Index i = 0; i < t.size(); ++i) W.row(i) /= t(i);
  return W.colPivHouseholderQr().solve(b);
}
// Relative least squares of t = a * u + b * x over samples {u, x, t} (u = 1:
// an intercept; u = latency steps for the collectives): returns (a, b).
struct TwoTerm { double u, x, t; };
std::pair<double, double> fit_two(const std::vector<TwoTerm>& s) {
  Eigen::MatrixXd M(Eigen::Index(s.size()), 2);
  Eigen::VectorXd t(Eigen::Index(s.size()));
  for (std::size_t i = 0; i < s.size(); ++i) {
    M(Eigen::Index(i), 0) = s[i].u;
    M(Eigen::Index(i), 1) = s[i].x;
    t(Eigen::Index(i)) = s[i].t;
  }
  const Eigen::VectorXd c = solve_rel(M, t);
  return {c(0), c(1)};
}
double rms_rel(const std::vector<double>& pred, const std::vector<double>& meas) {
  double s = 0;
  for (std::size_t i = 0; i < pred.size(); ++i) s += std::pow(pred[i] / meas[i] - 1, 2);
  return pred.empty() ? 0 : std::sqrt(s / double(pred.size()));
}

struct Ref { double bf16 = 0, fp8 = 0, hbm = 0; };
Ref datasheet(const std::string& gpu) {
  // Dense (no sparsity) tensor-core peaks and HBM bandwidth, SXM parts.
  // H100 SXM: 989.4 TFLOP/s bf16, 1978.9 fp8, 3.35 TB/s (NVIDIA H100 datasheet);
  // H200 SXM: same compute, 4.8 TB/s (NVIDIA H200 datasheet).
  // Blackwell (hardware/b200.toml, gb200-nvl72.toml, gb300-nvl72.toml, their sources): B200 (HGX) 2,250 / 4,500
  // TFLOP/s, 7.7 TB/s; the GB200's and GB300's GPUs 2,500 / 5,000, 8 TB/s. The Grace-Blackwell names first: "GB200"
  // holds "B200".
  if (gpu.find("GB200") != std::string::npos || gpu.find("GB300") != std::string::npos) return {2500e12, 5000e12, 8.0e12};
  if (gpu.find("B200") != std::string::npos) return {2250e12, 4500e12, 7.7e12};
  if (gpu.find("H200") != std::string::npos) return {989.4e12, 1978.9e12, 4.8e12};
  if (gpu.find("H100") != std::string::npos) return {989.4e12, 1978.9e12, 3.35e12};
  return {};
}

GemmFit fit_gemm(const std::vector<GemmSample>& s, double peak) {
  GemmFit best;
  best.peak_flops = peak;
  best.rms_rel_error = INFINITY;
  const Eigen::Index n = Eigen::Index(s.size());
  Eigen::VectorXd t(n);
  for (Eigen::Index i = 0; i < n; ++i) t(i) = s[std::size_t(i)].seconds;
  for (int g = 0; g <= 400; ++g) {
    double knee = 8.0 * std::pow(10.0, g / 100.0);  // 8 .. 80000 elements^(1/3)
    Eigen::MatrixXd A(n, 2);
    for (Eigen::Index i = 0; i < n; ++i) {
      const auto& x = s[std::size_t(i)];
      double mnk = double(x.m) * double(x.n) * double(x.k);
      A(i, 0) = 1.0;
      A(i, 1) = 2.0 * mnk / (peak * (1.0 - std::exp(-std::cbrt(mnk) / knee)));
    }
    Eigen::VectorXd c = solve_rel(A, t);
    if (c(1) <= 0 || c(0) < 0) {  // keep the overhead physical: refit without it
      if (c(1) <= 0) continue;
      Eigen::MatrixXd A1 = A.col(1);
      Eigen::VectorXd c1 = solve_rel(A1, t);
      c = Eigen::Vector2d(0.0, c1(0));
    }
    GemmFit f{peak, 1.0 / c(1), knee, c(0), 0};
    std::vector<double> pred, meas;
    for (const auto& x : s) {
      pred.push_back(gemm_fit_seconds(f, double(x.m), double(x.n), double(x.k)));
      meas.push_back(x.seconds);
    }
    f.rms_rel_error = rms_rel(pred, meas);
    if (f.rms_rel_error < best.rms_rel_error) best = f;
  }
  return best;
}

void need_samples(const std::string& file, const char* what, std::size_t have, std::size_t need, const char* of) {
  if (have < need)
    fail(file, std::string(what) + ": " + std::to_string(have) + " usable; the fit needs at least " +
                   std::to_string(need) + " " + of);
}

// Every fitted number finite and within its physical bound (calibration.h);
// else the samples were inconsistent and nothing is written.
void check_fit(const Calibration& c, const std::string& file) {
  auto check = [&](const std::string& what, double v, const CalibrationBound& b) {
    if (!within(v, b))
      fail(file, "the fit gives " + what + " = " + fmt("%g", v) + ", which " + bound_text(b, v) +
                     ": the probe samples are inconsistent; no calibration written");
  };
  auto gemm = [&](const std::string& name, const GemmFit& f) {
    check(name + " peak_tflops", f.peak_flops * 1e-12, kPeakTflopsBound);
    check(name + " eff_max", f.eff_max, CalibrationBound{"", 0, true, kEfficiencyBound.hi});
    check(name + " knee", f.knee, kKneeBound);
    check(name + " overhead_us", f.overhead_s * 1e6, kOverheadUsBound);
    check(name + " rms_rel_error", f.rms_rel_error, kRmsBound);
  };
  if (c.has_gemm) gemm("gemm", c.gemm);
  if (c.has_gemm_fp8) gemm("gemm_fp8", c.gemm_fp8);
  auto attention = [&](const std::string& name, const AttentionFit& a) {
    check(name + " peak_tflops", a.peak_flops * 1e-12, kPeakTflopsBound);
    check(name + " hbm_bandwidth_gbs", a.hbm_bandwidth * 1e-9, kBandwidthGbsBound);
    check(name + " flash_fwd_eff", a.flash_fwd_eff, kEfficiencyBound);
    check(name + " flash_bwd_eff", a.flash_bwd_eff, kEfficiencyBound);
    check(name + " materialized_bw_eff", a.materialized_bw_eff, kEfficiencyBound);
    check(name + " flash_fwd_seq_knee", a.flash_fwd_seq_knee, kKneeBound);
    check(name + " flash_bwd_seq_knee", a.flash_bwd_seq_knee, kKneeBound);
    check(name + " overhead_us", a.overhead_s * 1e6, kOverheadUsBound);
    if (a.tile_form) {
      check(name + " flash_fwd_tile_knee", a.flash_fwd_tile_knee, kKneeBound);
      check(name + " flash_bwd_tile_knee", a.flash_bwd_tile_knee, kKneeBound);
      check(name + " diagonal_tile_weight", a.diagonal_tile_weight, kDiagonalWeightBound);
    }
    check(name + " rms_rel_error", a.rms_rel_error, kRmsBound);
    if (a.dropout_sms > 0) {
      check(name + " dropout_fwd_ps_per_score", a.dropout_fwd_s_per_score * 1e12, kPerScorePsBound);
      check(name + " dropout_bwd_ps_per_score", a.dropout_bwd_s_per_score * 1e12, kPerScorePsBound);
      check(name + " dropout_rms_rel_error", a.dropout_rms_rel_error, kRmsBound);
    }
  };
  if (c.has_attention) attention("attention", c.attention);
  if (c.has_attention_fa2) attention("attention_fa2", c.attention_fa2);
  if (c.has_memory) {
    const auto& m = c.memory;
    check("memory achieved_bandwidth_gbs", m.achieved_bandwidth * 1e-9, kBandwidthGbsBound);
    check("memory launch_overhead_us", m.launch_overhead_s * 1e6, kOverheadUsBound);
    check("memory graph_launch_overhead_us", m.graph_launch_overhead_s * 1e6, kOverheadUsBound);
    check("memory fixed_overhead_us", m.fixed_overhead_s * 1e6, kOverheadUsBound);
    check("memory rms_rel_error", m.rms_rel_error, kRmsBound);
    for (int i = 1; i < kMemFamilies; ++i)
      if (m.family_bandwidth[i] > 0)
        check(std::string("memory family ") + kMemFamilyNames[i] + " bandwidth (GB/s)", m.family_bandwidth[i] * 1e-9,
              kBandwidthGbsBound);
  }
  if (c.has_collectives) {
    const auto& k = c.collectives;
    check("collectives nvlink_bus_bandwidth_gbs", k.nvlink_bus_bandwidth * 1e-9, kBandwidthGbsBound);
    check("collectives nvlink_latency_us", k.nvlink_latency_s * 1e6, kOverheadUsBound);
    check("collectives rms_rel_error", k.rms_rel_error, kRmsBound);
    for (int i = 0; i < kCollectiveOps; ++i)
      if (k.op[i].nvlink_bus_bandwidth > 0 || k.op[i].samples > 0) {
        check(std::string("collectives.") + kCollectiveOpNames[i] + " nvlink_bus_bandwidth_gbs",
              k.op[i].nvlink_bus_bandwidth * 1e-9, kBandwidthGbsBound);
        check(std::string("collectives.") + kCollectiveOpNames[i] + " nvlink_latency_us", k.op[i].nvlink_latency_s * 1e6,
              kOverheadUsBound);
      }
  }
}

}  // namespace

double gemm_fit_seconds(const GemmFit& f, double m, double n, double k) {
  double mnk = m * n * k;
  double eff = f.eff_max * (1.0 - std::exp(-std::cbrt(mnk) / f.knee));
  return f.overhead_s + 2.0 * mnk / (f.peak_flops * eff);
}

namespace {
// y at v on the curve through (x[i], y[i]) (x ascending, as many as y), linear in log2 v between the points and
// flat beyond the last; below the first, flat, or from `start` when the curve begins there.
double log_linear(const std::vector<double>& x, const std::vector<double>& y, double v,
                  std::optional<std::pair<double, double>> start = std::nullopt) {
  if (!(v > x.front()) && !start) return y.front();
  if (v >= x.back()) return y.back();
  std::size_t i = 0;
  while (x[i] < v) ++i;
  const auto [x0, y0] = i > 0 ? std::pair{x[i - 1], y[i - 1]} : *start;
  const double u = (std::log2(v) - std::log2(x0)) / (std::log2(x[i]) - std::log2(x0));
  return y0 + u * (y[i] - y0);
}
}  // namespace

// ------------------------------------------------------------------ grouped expert GEMMs
double grouped_gemm_efficiency(const GroupedGemmFit& f, double tokens_per_expert) {
  const auto& x = f.tokens_per_expert;
  if (x.empty() || x.size() != f.efficiency.size()) return 1.0;
  return log_linear(x, f.efficiency, tokens_per_expert);
}

double slowest_of_n(const Calibration* cal, int n) {
  if (!cal || !cal->has_slowest_of_n || n <= 1) return 1.0;
  const auto& t = cal->slowest_of_n;
  if (t.group.empty() || t.group.size() != t.ratio.size()) return 1.0;
  return log_linear(t.group, t.ratio, static_cast<double>(n), std::pair{1.0, 1.0});   // one rank waits for none
}

namespace {
double phi_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

// The standard normal's quantile at p in (0, 1) (Acklam's rational approximation, then one Halley step on erfc:
// ~1e-15 relative).
double phi_quantile(double p) {
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                             1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  double x;
  if (p < 0.02425) {
    const double q = std::sqrt(-2 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p > 1 - 0.02425) {
    return -phi_quantile(1 - p);
  } else {
    const double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  }
  const double e = phi_cdf(x) - p, u = e * std::sqrt(2 * M_PI) * std::exp(x * x / 2);
  return x - u / (1 + x * u / 2);
}

// lo + int_lo^hi (1 - F(x)) dx with F = exp(log_f) (Simpson, 256 intervals): E[X] of a variable whose CDF F
// is ~0 below lo and ~1 above hi.
template <class LogCdf>
double mean_from_cdf(double lo, double hi, LogCdf log_f) {
  const int n = 256;
  const double h = (hi - lo) / n;
  double sum = 0;
  for (int i = 0; i <= n; ++i) {
    const double w = (i == 0 || i == n) ? 1 : (i % 2 ? 4 : 2);
    sum += w * (1 - std::exp(log_f(lo + i * h)));
  }
  return lo + sum * h / 3;
}

// E[max of n standard normals]: F = Phi^n, integrated from -9 (where F < 1e-19) to 9.
double expected_max_normals(double n) {
  return mean_from_cdf(-9.0, 9.0, [n](double x) {
    const double f = phi_cdf(x);
    return f > 0 ? n * std::log(f) : -INFINITY;
  });
}

double job_pace_uncached(double board_sd, double wander_ratio, int group, int job) {
  // The wander as a normal whose expected slowest of `group` is the measured ratio.
  const double e_group = group > 1 ? expected_max_normals(group) : 0.0;
  const double wander_sd = e_group > 0 ? (wander_ratio - 1) / e_group : 0.0;
  const int strata = 16;
  double sum = 0;
  for (int t = 0; t < strata; ++t) {
    // The job's slowest board at the quantile (t + 1/2) / strata of the slowest of `job` draws: its upper tail
    // 1 - q^(1/job), taken without cancellation.
    const double q = (t + 0.5) / strata;
    const double z_top = -phi_quantile(-std::expm1(std::log(q) / job)), top = z_top * board_sd;
    if (!(wander_sd > 0)) {   // no wander: the slowest board alone decides
      sum += top;
      continue;
    }
    // The group's other members are normal boards below the slowest; each micro-batch's time is a member's
    // offset plus its wander. P(the slowest member's time <= x) = Phi((x - top) / wander_sd) * H(x)^(group - 1),
    // H(x) = P(a board below the top plus its wander <= x) = int_{z < z_top} phi(z) Phi((x - sd z) / wander_sd)
    // dz / Phi(z_top) (Simpson, 64 intervals from 9 sd below the mean). E[max] = lo + int_lo^hi (1 - F).
    const double below = phi_cdf(z_top), z_lo = std::min(-9.0, z_top - 1.0);
    auto log_h = [&](double x) {
      const int m = 64;
      const double hz = (z_top - z_lo) / m;
      double acc = 0;
      for (int j = 0; j <= m; ++j) {
        const double z = z_lo + j * hz;
        const double w = (j == 0 || j == m) ? 1 : (j % 2 ? 4 : 2);
        acc += w * std::exp(-z * z / 2) * phi_cdf((x - board_sd * z) / wander_sd);
      }
      const double h = acc * hz / 3 / std::sqrt(2 * M_PI) / below;
      return h > 0 ? std::log(std::min(h, 1.0)) : -INFINITY;
    };
    sum += mean_from_cdf(top - 9 * wander_sd, top + 9 * wander_sd, [&](double x) {
      double log_f = std::log(phi_cdf((x - top) / wander_sd));
      if (group > 1 && std::isfinite(log_f)) log_f += (group - 1) * log_h(x);
      return log_f;
    });
  }
  return 1 + sum / strata;
}
}  // namespace

double board_sd(const Calibration* cal, std::optional<double> scenario_sd) {
  if (scenario_sd) return *scenario_sd;
  return cal && cal->has_board_spread ? cal->board_spread.sd : 0.0;
}

double job_pace(const Calibration* cal, int group, int job, std::optional<double> scenario_sd) {
  const double sd = board_sd(cal, scenario_sd);
  if (!(sd > 0) || job <= 1) return slowest_of_n(cal, group);
  group = std::max(1, std::min(group, job));
  const double wander = slowest_of_n(cal, group);
  static std::mutex mu;
  static std::map<std::tuple<double, double, int, int>, double> memo;
  const auto key = std::make_tuple(sd, wander, group, job);
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = memo.find(key); it != memo.end()) return it->second;
  }
  const double pace = job_pace_uncached(sd, wander, group, job);
  std::lock_guard<std::mutex> lock(mu);
  memo.emplace(key, pace);
  return pace;
}

namespace {


// [[slowest_of_n]] rows (validation/runs/run40-interval-jitter/slowest_of_n.py): per group size N, the
// expected slowest of N units of compute over their mean, from one workload's measured distribution.
void fit_slowest_of_n(const std::string& file, const std::vector<Reader>& rows, Calibration& cal, std::ostream& rep) {
  if (rows.empty()) return;
  struct Point { double ratio; toml::source_region where; };
  std::map<long long, Point> pts;
  std::string workload;
  long long units = 0;
  for (const Reader& r : rows) {
    const double n = r.num("group"), ratio = r.num("ratio"), u = r.num("units");
    if (!(n >= 2 && n <= 1e6 && n == std::floor(n)) || !(ratio >= 1 && ratio <= 2) ||
        !(u >= 2 && u <= 1e9 && u == std::floor(u)))
      fail(file, r.where, "slowest_of_n sample needs a whole group in [2, 1e6], ratio in [1, 2] and whole units in [2, 1e9]");
    const std::string w = r.str("workload");
    if (!workload.empty() && (w != workload || std::llround(u) != units))
      fail(file, r.where, "slowest_of_n samples must come from one workload's measurement (one workload, one units)");
    workload = w;
    units = std::llround(u);
    if (!pts.emplace(std::llround(n), Point{ratio, r.where}).second)
      fail(file, r.where, "slowest_of_n: group " + fmt("%.0f", n) + " given twice");
  }
  SlowestOfN f;
  for (const auto& [n, p] : pts) {
    if (!f.ratio.empty() && p.ratio < f.ratio.back())
      fail(file, p.where, "slowest_of_n: the ratio must not fall as the group grows (group " + std::to_string(n) + ")");
    f.group.push_back(static_cast<double>(n));
    f.ratio.push_back(p.ratio);
  }
  f.units = static_cast<int>(units);
  cal.slowest_of_n = f;
  cal.has_slowest_of_n = true;
  rep << "slowest of N: " << workload << ", " << units << " units: " << fmt("%.4f", f.ratio.front()) << " at "
      << fmt("%.0f", f.group.front()) << " to " << fmt("%.4f", f.ratio.back()) << " at " << fmt("%.0f", f.group.back()) << "\n";
}

// [[board]] rows (validation/runs/run46-boards/boards.py): per board (its serial), the mean time of one
// workload at the capped state; the boards' spread is their sample standard deviation over their mean.
void fit_board_spread(const std::string& file, const std::vector<Reader>& rows, Calibration& cal, std::ostream& rep) {
  if (rows.empty()) return;
  std::map<std::string, double> boards;
  std::string workload;
  for (const Reader& r : rows) {
    const std::string serial = r.str("serial"), w = r.str("workload");
    const double ms = r.num("ms");
    if (serial.empty() || w.empty()) fail(file, r.where, "board sample needs a 'serial' and a 'workload'");
    if (!(ms > 0 && ms < 1e6)) fail(file, r.where, "board sample needs 'ms' in (0, 1e6)");
    if (!workload.empty() && w != workload) fail(file, r.where, "board samples must time one workload");
    workload = w;
    if (!boards.emplace(serial, ms).second) fail(file, r.where, "board '" + serial + "' given twice");
  }
  if (boards.size() < 3) fail(file, rows.front().where, "board spread needs at least 3 boards");
  double mean = 0;
  for (const auto& [serial, ms] : boards) mean += ms / boards.size();
  double ss = 0;
  for (const auto& [serial, ms] : boards) ss += (ms - mean) * (ms - mean);
  cal.board_spread.sd = std::sqrt(ss / (boards.size() - 1)) / mean;
  if (!(cal.board_spread.sd > 0 && cal.board_spread.sd <= 0.2))   // what the calibration file's reader accepts
    fail(file, rows.front().where, "board samples spread " + fmt("%.3g", cal.board_spread.sd) +
                                       " of their mean; a board spread must be in (0, 0.2]");
  cal.board_spread.boards = static_cast<int>(boards.size());
  cal.has_board_spread = true;
  rep << "board spread: " << workload << ", " << boards.size() << " boards: sd " << fmt("%.2f", 100 * cal.board_spread.sd)
      << "% of the mean " << fmt("%.4f", mean) << " ms\n";
}

// [[grouped_gemm]] rows (validation/runs/run14-interference/grouped_gemm.py): per (model, gemm,
// dtype, experts, tokens per expert) with routing "equal", the measured ratio of the dense
// GEMM's seconds (one GEMM over all the group's tokens) to the grouped call's. bf16 ([gemm_grouped],
// run 14c): "grouped" (torch's grouped GEMM) against "dense". fp8 ([gemm_grouped_fp8], runs 44 and 45):
// "fp8_loop" and "fp8_loop4" (one fp8 GEMM per expert on one stream, or round-robin over four as
// Transformer Engine's grouped GEMM issues them) against "fp8_dense" (tensor-wise scales, as theirs) of the
// same run (a row's `run`); torch's "fp8_grouped" call is not what the frameworks run. Each tokens-per-expert
// point is the median of its ratios, capped at 1 (a grouped call is not taken to beat one dense GEMM of the
// same size; measured ratios above 1 are within noise).
namespace {
// nullopt without (grouped, dense) pairs; with pairs at one tokens-per-expert value only: an error at the first
// paired row when `required`, nullopt otherwise.
std::optional<GroupedGemmFit> fit_grouped_ratio(const std::string& file, const std::vector<Reader>& rows, const std::string& dtype,
                                                const std::vector<std::string>& grouped, const std::string& dense,
                                                bool required) {
  using Key = std::tuple<std::string, std::string, std::string, long long, long long, long long>;
  std::map<std::pair<Key, std::string>, double> grouped_s;   // (key, method) -> seconds
  std::map<Key, double> dense_s;
  for (const Reader& r : rows) {
    if (r.str("dist", "equal") != "equal" || r.str("dtype", "bf16") != dtype) continue;
    const std::string method = r.str("method");
    const bool is_grouped = std::find(grouped.begin(), grouped.end(), method) != grouped.end();
    if (!is_grouped && method != dense) continue;
    const double tpe = r.num("tokens_per_expert"), sec = r.num("seconds"), experts = r.num("experts");
    if (!(tpe >= 1) || !(sec > 0) || !(experts >= 1))
      fail(file, r.where, "grouped_gemm sample needs tokens_per_expert >= 1, experts >= 1 and seconds > 0");
    const double run = r.nonneg("run", false);   // the device run a row came from: pairs stay within one
    if (run != std::floor(run) || run > 1e9) fail(file, r.node("run")->source(), "'run' must be a whole number in [0, 1e9]");
    const Key k{r.str("model"), r.str("gemm"), dtype, std::llround(experts), std::llround(tpe), std::llround(run)};
    if (is_grouped) grouped_s[{k, method}] = sec;
    else dense_s[k] = sec;
  }
  std::map<long long, std::vector<double>> ratio;   // tokens per expert -> dense / grouped
  for (const auto& [km, sec] : grouped_s) {
    auto d = dense_s.find(km.first);
    if (d != dense_s.end()) ratio[std::get<4>(km.first)].push_back(d->second / sec);
  }
  if (ratio.empty()) return std::nullopt;
  if (ratio.size() < 2) {
    if (!required) return std::nullopt;
    for (const Reader& r : rows)
      if (r.str("dtype", "bf16") == dtype && r.str("method") == dense)
        fail(file, r.where, "grouped_gemm: needs (grouped, dense) " + dtype + " pairs at 2 or more tokens-per-expert values");
  }
  GroupedGemmFit f;
  for (auto& [tpe, v] : ratio) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    const double med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    f.tokens_per_expert.push_back(static_cast<double>(tpe));
    f.efficiency.push_back(std::min(1.0, med));
    f.samples += static_cast<int>(n);
  }
  std::vector<double> pred, meas;
  for (const auto& [tpe, v] : ratio)
    for (double x : v) {
      pred.push_back(grouped_gemm_efficiency(f, static_cast<double>(tpe)));
      meas.push_back(x);
    }
  f.rms_rel_error = rms_rel(pred, meas);
  return f;
}

void report_grouped(std::ostream& rep, const char* what, const GroupedGemmFit& f) {
  rep << what << f.samples << " (grouped, dense) pairs at " << f.tokens_per_expert.size()
      << " tokens-per-expert values, efficiency " << fmt("%.2f", f.efficiency.front()) << " at "
      << fmt("%.0f", f.tokens_per_expert.front()) << " to " << fmt("%.2f", f.efficiency.back()) << " at "
      << fmt("%.0f", f.tokens_per_expert.back()) << ", rms rel error " << fmt("%.1f", f.rms_rel_error * 100) << "%\n";
}
}  // namespace

void fit_grouped_gemm(const std::string& file, const std::vector<Reader>& rows, Calibration& cal, std::ostream& rep) {
  if (rows.empty()) return;
  const auto bf16 = fit_grouped_ratio(file, rows, "bf16", {"grouped"}, "dense", true);
  if (!bf16) fail(file, "grouped_gemm: needs (grouped, dense) pairs at 2 or more tokens-per-expert values");
  cal.gemm_grouped = *bf16;
  cal.has_gemm_grouped = true;
  report_grouped(rep, "gemm grouped: ", *bf16);
  if (const auto fp8 = fit_grouped_ratio(file, rows, "fp8_e4m3", {"fp8_loop", "fp8_loop4"}, "fp8_dense", false)) {
    cal.gemm_grouped_fp8 = *fp8;
    cal.has_gemm_grouped_fp8 = true;
    report_grouped(rep, "gemm grouped fp8 (per-expert GEMMs): ", *fp8);
  } else if (std::any_of(rows.begin(), rows.end(), [](const Reader& r) { return r.str("dtype", "bf16") == "fp8_e4m3"; })) {
    rep << "gemm grouped fp8: no (fp8_loop or fp8_loop4, fp8_dense) pairs of one run at 2 or more tokens-per-expert "
           "values: no [gemm_grouped_fp8], fp8 expert GEMMs take [gemm_grouped]\n";
  }
}

// [[gemm_power]] rows (validation/runs/run33-power): a bf16 GEMM loop on `sms` of the GPU's SMs, its
// settled SM clock (MHz) and board power (W), under the board's power limit `limit_w`. Rows that draw less
// than 97% of the limit are below it (the board regulates to ~99% of its limit: 691-692 W of 700 in run
// 33): their clock is the maximum and their power against sms is a line whose intercept is base_w. Rows at
// the limit each give the per-SM power at their clock, (P - base_w) / sms; its log against log(clock / max)
// is a line (least squares) whose slope is the exponent and whose value at the maximum clock is sm_w: the
// capped regime's own law, the one a lower limit moves along (run 33: clock rms 1.1% over the capped
// samples, worst 2.0%, where a law through the uncapped slope at the maximum clock gives rms 1.4%). `sms`
// of the fit is the probe's provenance sm_count (else the largest k sampled). Other dtypes' rows are ignored.
void fit_gemm_power(const std::string& file, const std::vector<Reader>& rows, int gpu_sms, Calibration& cal,
                    std::ostream& rep) {
  if (rows.empty()) return;
  struct P { double sms, mhz, w, limit; toml::source_region where; };
  std::vector<P> pts;
  double limit = 0;
  for (const Reader& r : rows) {
    if (r.str("dtype", "bf16") != "bf16") continue;
    const P p{r.num("sms"), r.num("clock_mhz"), r.num("power_w"), r.num("limit_w"), r.where};
    if (!(p.sms >= 1 && p.sms <= 100000) || p.sms != std::floor(p.sms) || !(p.mhz > 0 && p.mhz < 1e5) ||
        !(p.w > 0 && p.w < 1e5) || !(p.limit > 0 && p.limit < 1e5))
      fail(file, r.where, "gemm_power sample needs a whole sms in [1, 100000], clock_mhz, power_w and limit_w in (0, 1e5)");
    if (gpu_sms > 0 && p.sms > gpu_sms)
      fail(file, r.where, "gemm_power sample on " + fmt("%.0f", p.sms) + " SMs, more than the GPU's " + std::to_string(gpu_sms));
    if (limit > 0 && std::abs(p.limit - limit) > 1e-9) fail(file, r.where, "gemm_power samples must share one limit_w");
    limit = p.limit;
    pts.push_back(p);
  }
  std::vector<P> free, capped;
  for (const P& p : pts) (p.w < 0.97 * limit ? free : capped).push_back(p);
  double max_mhz = 0, min_mhz = 1e18;
  std::set<double> ks, clocks;
  for (const P& p : free) {
    ks.insert(p.sms);
    max_mhz = std::max(max_mhz, p.mhz);
  }
  for (const P& p : pts) min_mhz = std::min(min_mhz, p.mhz);
  for (const P& p : capped) clocks.insert(p.mhz);
  if (ks.size() < 2 || clocks.size() < 2)
    fail(file, "gemm_power: needs bf16 samples below the power limit on 2 or more SM counts and at it at 2 or more clocks");
  for (const P& p : free)
    if (p.mhz < max_mhz - 30)   // two of nvidia-smi's 15 MHz steps
      fail(file, p.where, "gemm_power sample below the power limit at " + fmt("%.0f", p.mhz) + " MHz, not the maximum " +
                              fmt("%.0f", max_mhz) + " MHz the others hold: something else than the limit held its clock");
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const P& p : free) { sx += p.sms; sy += p.w; sxx += p.sms * p.sms; sxy += p.sms * p.w; }
  const double n = static_cast<double>(free.size());
  PowerFit f;
  const double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  f.base_w = (sy - slope * sx) / n;
  if (!(slope > 0) || !(f.base_w >= 0) || !(limit > f.base_w))
    fail(file, "gemm_power: the samples below the limit give no positive power per SM (their line's base " +
                   fmt("%.1f", f.base_w) + " W, slope " + fmt("%.3f", slope) + " W per SM)");
  double mx = 0, my = 0;
  std::vector<std::pair<double, double>> xy;
  for (const P& p : capped) {
    if (!(p.w > f.base_w)) fail(file, p.where, "gemm_power sample at the limit draws no more than the base " + fmt("%.1f", f.base_w) + " W");
    xy.emplace_back(std::log(std::min(p.mhz, max_mhz) / max_mhz), std::log((p.w - f.base_w) / p.sms));
    mx += xy.back().first / static_cast<double>(capped.size());
    my += xy.back().second / static_cast<double>(capped.size());
  }
  double lxx = 0, lxy = 0;
  for (const auto& [x, y] : xy) {
    lxx += (x - mx) * (x - mx);
    lxy += (x - mx) * (y - my);
  }
  f.exponent = lxx > 0 ? lxy / lxx : 0;
  f.sm_w = std::exp(my - f.exponent * mx);   // the law's per-SM power at the maximum clock (x = 0)
  if (!(f.exponent >= kPowerExponentMin && f.exponent <= kPowerExponentMax) || !(f.sm_w > 0) || !std::isfinite(f.sm_w))
    fail(file, "gemm_power: the samples at the limit give a power exponent of " + fmt("%.3g", f.exponent) + ", outside [" +
                   fmt("%g", kPowerExponentMin) + ", " + fmt("%g", kPowerExponentMax) + "]: they do not describe a clock law");
  f.limit_w = limit;
  f.max_clock_mhz = max_mhz;
  f.min_clock_mhz = min_mhz;
  int largest = 0;
  for (const P& p : pts) largest = std::max(largest, static_cast<int>(p.sms));
  f.sms = gpu_sms > 0 ? gpu_sms : largest;
  f.samples = static_cast<int>(pts.size());
  std::vector<double> pred, meas;
  for (const P& p : capped) {
    pred.push_back(power_limited_clock_mhz(f, limit, static_cast<int>(p.sms)));
    meas.push_back(p.mhz);
  }
  f.rms_rel_error = rms_rel(pred, meas);
  if (!(f.rms_rel_error <= 0.1))
    fail(file, "gemm_power: the fitted law misses the clocks at the limit by " + fmt("%.0f", f.rms_rel_error * 100) +
                   "% rms (more than 10%): the samples do not follow one law");
  cal.power = f;
  cal.has_power = true;
  rep << "gemm power: " << f.samples << " samples under " << fmt("%.0f", limit) << " W, base " << fmt("%.0f", f.base_w)
      << " W + " << fmt("%.3f", f.sm_w) << " W per SM at " << fmt("%.0f", max_mhz) << " MHz (uncapped slope "
      << fmt("%.3f", slope) << "), exponent "
      << fmt("%.2f", f.exponent) << ", clock rms rel error " << fmt("%.1f", f.rms_rel_error * 100) << "%; all "
      << f.sms << " SMs: " << fmt("%.0f", power_limited_clock_mhz(f, limit, f.sms)) << " MHz at " << fmt("%.0f", limit)
      << " W\n";
}

}  // namespace

// ------------------------------------------------------------------ fit_probe
Calibration fit_probe(const std::string& probe_path, std::string* report, const std::string& fused_attention) {
  toml::table root = parse_file(probe_path);
  Reader top{probe_path, &root, root.source()};
  if (const toml::node* f = root.get("format"); f && top.str("format") != "mfusim-probe-1")
    fail(probe_path, f->source(), "not a probe output: format '" + top.str("format") + "' (expected \"mfusim-probe-1\")");
  Calibration cal;
  cal.source = probe_path;
  if (const toml::node* p = root.get("provenance"); p && p->is_table()) cal.gpu_name = top.sub("provenance").str("gpu");
  Ref ref = datasheet(cal.gpu_name);
  // A table whose calls were each timed alone by events around the host's call (cuDNN frontend's published SDPA
  // benchmark through PyTorch: validation/cudnn_sdpa) holds the host's dispatch in every sample, which a device
  // stream of queued kernels does not wait for: `attention_intercept = false` in [provenance] fits the fused
  // attention without the per-call intercept (the efficiency and its sequence knee alone).
  // `attention_device_timed = true`: the per-call samples are the kernels' device times (a profiler's; cuDNN
  // frontend's later tables): fitted with the intercept, FlashAttention-2's beside cuDNN's as back-to-back ones are.
  auto provenance_flag = [&](const char* key, bool dflt) {
    const toml::node* p = root.get("provenance");
    const toml::node* v = p && p->is_table() ? p->as_table()->get(key) : nullptr;
    if (!v) return dflt;
    if (!v->is_boolean()) fail(probe_path, v->source(), std::string("'") + key + "' must be true or false");
    return v->value_or(dflt);
  };
  const bool attention_intercept = provenance_flag("attention_intercept", true);
  const bool attention_device_timed = provenance_flag("attention_device_timed", false);
  std::ostringstream rep;
  rep << "probe " << probe_path << " (" << (cal.gpu_name.empty() ? "unknown GPU" : cal.gpu_name) << ")\n";

  auto rows = [&](const char* key) {
    std::vector<Reader> out;
    const toml::node* n = root.get(key);
    if (!n) return out;
    const toml::array* a = n->as_array();
    if (!a) fail(probe_path, n->source(), std::string("'") + key + "' must be an array of tables");
    for (const toml::node& e : *a) {
      if (!e.is_table()) fail(probe_path, e.source(), std::string("'") + key + "' entries must be tables");
      out.push_back(Reader{probe_path, e.as_table(), e.source()});
    }
    return out;
  };

  // GEMM, per precision.
  std::vector<GemmSample> bf16, fp8;
  double best_bf16 = 0, best_fp8 = 0;
  for (const Reader& r : rows("gemm")) {
    GemmSample g{(long long)r.num("m"), (long long)r.num("n"), (long long)r.num("k"), r.num("seconds")};
    if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.seconds <= 0)
      fail(probe_path, r.where, "gemm sample needs positive m, n, k, seconds");
    double rate = 2.0 * double(g.m) * double(g.n) * double(g.k) / g.seconds;
    if (r.str("dtype", "bf16") == "fp8_e4m3") { fp8.push_back(g); best_fp8 = std::max(best_fp8, rate); }
    else { bf16.push_back(g); best_bf16 = std::max(best_bf16, rate); }
  }
  auto table_of = [](std::vector<GemmSample> v) {
    std::map<std::tuple<long long, long long, long long>, GemmSample> u;  // one entry per shape: the fastest
    for (const auto& g : v) {
      auto key = std::make_tuple(g.m, g.n, g.k);
      if (!u.count(key) || g.seconds < u[key].seconds) u[key] = g;
    }
    std::vector<GemmSample> out;
    for (auto& [k, g] : u) out.push_back(g);
    return out;
  };
  if (!bf16.empty()) {
    cal.gemm_table = table_of(bf16);
    need_samples(probe_path, "gemm bf16", cal.gemm_table.size(), 3, "distinct shapes (efficiency, knee, overhead)");
    cal.gemm = fit_gemm(cal.gemm_table, ref.bf16 > 0 ? ref.bf16 : best_bf16);
    cal.has_gemm = true;
    rep << "gemm bf16: " << cal.gemm_table.size() << " shapes, eff_max " << fmt("%.3f", cal.gemm.eff_max) << ", knee "
        << fmt("%.0f", cal.gemm.knee) << ", overhead " << fmt("%.2f", cal.gemm.overhead_s * 1e6) << " us, rms rel error "
        << fmt("%.1f", cal.gemm.rms_rel_error * 100) << "%\n";
  }
  if (!fp8.empty()) {
    cal.gemm_fp8_table = table_of(fp8);
    need_samples(probe_path, "gemm fp8", cal.gemm_fp8_table.size(), 3, "distinct shapes (efficiency, knee, overhead)");
    cal.gemm_fp8 = fit_gemm(cal.gemm_fp8_table, ref.fp8 > 0 ? ref.fp8 : best_fp8);
    cal.has_gemm_fp8 = true;
    rep << "gemm fp8: " << cal.gemm_fp8_table.size() << " shapes, eff_max " << fmt("%.3f", cal.gemm_fp8.eff_max)
        << ", knee " << fmt("%.0f", cal.gemm_fp8.knee) << ", overhead " << fmt("%.2f", cal.gemm_fp8.overhead_s * 1e6)
        << " us, rms rel error " << fmt("%.1f", cal.gemm_fp8.rms_rel_error * 100) << "%\n";
  }

  // Attention: flash (fused) and materialised, one joint linear fit.
  struct A { bool flash, bwd; double x, t, s = 0; double b = 0, h = 0, sq = 0, skv = 0; bool causal = true; };
  double best_hbm = 0;
  for (const Reader& r : rows("memory")) {
    if (!(r.num("bytes") > 0) || !(r.num("seconds") > 0))
      fail(probe_path, r.where, "memory sample needs positive bytes and seconds");
    best_hbm = std::max(best_hbm, r.num("bytes") / r.num("seconds"));
  }
  // Fused attention: cuDNN's fused SDPA when measured (what Transformer Engine uses on
  // Hopper), else FlashAttention-2 ("flash").
  std::string fused_impl = fused_attention.empty() ? "flash" : fused_attention;
  bool fused_seen = false;
  for (const Reader& r : rows("attention")) {
    if (fused_attention.empty() && r.str("impl") == "cudnn_fused") fused_impl = "cudnn_fused";
    fused_seen |= r.str("impl") == fused_attention;
  }
  if (!fused_attention.empty() && !fused_seen)
    fail(probe_path, "no [[attention]] samples with impl = \"" + fused_attention + "\" (asked for as the fused attention)");
  // One fit of the fused attention `impl_fit` names (with the materialised pieces) into `af`, reported
  // as `label`; false when no sample fits. Fused samples timed back to back (validation/attention_sdpa.py
  // --back-to-back) take the tile form and stand alone: a sample timed one call per event pair carries
  // the host's dispatch (run 21b).
  // `materialized`: fit the materialised pieces beside it (they share the intercept); a kernel's own section
  // (Triton's) leaves them out. A sample marked `fastest = false` (a backward launch its autotuner would not
  // keep, run 43) is not the kernel's time.
  auto fit_attention = [&](const std::string& impl_fit, AttentionFit& af, const char* label, bool materialized = true) -> bool {
    std::vector<A> att;
    bool b2b = false;
    for (const Reader& r : rows("attention"))
      b2b |= r.str("impl") == impl_fit && r.str("timing") == "back_to_back";
    for (const Reader& r : rows("attention")) {
      std::string impl = r.str("impl"), pass = r.str("pass");
      if (const toml::node* f = r.node("fastest")) {
        if (!f->is_boolean()) fail(probe_path, f->source(), "'fastest' must be true or false");
        if (!f->value_or(true)) continue;
      }
      if (impl == impl_fit) impl = "flash";
      else if (impl == "flash" || (impl == "materialized" && !materialized)) continue;
      if (pass != "fwd" && pass != "bwd") continue;  // e.g. softmax_fwd pieces
      if (impl == "flash" && b2b && r.str("timing") != "back_to_back") continue;
      double b = r.num("batch"), h = r.num("heads"), s = r.num("seq"), d = r.num("head_dim"), t = r.num("seconds");
      const double skv = r.num("seq_kv", false, s);
      bool causal = true;
      if (const toml::node* c = r.node("causal")) causal = c->value_or(true);
      if (!(b > 0) || !(h > 0) || !(s > 0) || !(skv > 0) || !(d > 0) || !(t > 0))
        fail(probe_path, r.where, "attention sample needs positive batch, heads, seq, seq_kv, head_dim, seconds");
      if (impl == "flash") {
        // The executed-FLOP count the cost model divides by these efficiencies
        // (hardware/cost_model.cpp): causal halves, backward = 2.5 x forward.
        double f = 4.0 * b * h * s * skv * d * (causal ? 0.5 : 1.0) * (pass == "bwd" ? CostDefaults::flash_bwd_flop_ratio : 1.0);
        att.push_back({true, pass == "bwd", f, t, skv, b, h, s, skv, causal});
      } else if (impl == "materialized") {
        double by = (pass == "bwd" ? 7.0 : 4.0) * b * h * s * skv * 2.0;
        att.push_back({false, pass == "bwd", by, t});
      }
    }
    // Back-to-back samples still carry the host's dispatch where a call is shorter than it (run 22: a
    // forward never under 26 us, a backward never under 143 us, whatever its size): per pass, the samples
    // under 3 x the pass's shortest are host-bound and left out of the device-time fit.
    std::size_t host_bound = 0;
    if (b2b) {
      double shortest[2] = {1e300, 1e300};
      for (const A& a : att)
        if (a.flash) shortest[a.bwd] = std::min(shortest[a.bwd], a.t);
      const auto n0 = att.size();
      att.erase(std::remove_if(att.begin(), att.end(), [&](const A& a) { return a.flash && a.t < 3 * shortest[a.bwd]; }),
                att.end());
      host_bound = n0 - att.size();
      for (int pass = 0; pass < 2; ++pass) {
        const bool had = shortest[pass] < 1e300;
        const auto left = std::count_if(att.begin(), att.end(), [&](const A& a) { return a.flash && a.bwd == (pass == 1); });
        if (had && left < 2)
          fail(probe_path, std::string("back-to-back fused attention: fewer than 2 ") + (pass ? "backward" : "forward") +
                               " samples at or above 3 x the shortest call (shorter ones are the host's dispatch, left out);"
                               " measure larger calls (validation/attention_sdpa.py --back-to-back)");
      }
    }
    if (att.empty()) return false;
    af.peak_flops = ref.bf16 > 0 ? ref.bf16 : best_bf16;
    af.hbm_bandwidth = ref.hbm > 0 ? ref.hbm : best_hbm;
    bool any_f = false, any_b = false, any_m = false;
    for (auto& a : att) { any_f |= a.flash && !a.bwd; any_b |= a.flash && a.bwd; any_m |= !a.flash; }
    std::vector<int> col(3, -1);
    int nc = 1;
    if (any_f) col[0] = nc++;
    if (any_b) col[1] = nc++;
    if (any_m) col[2] = nc++;
    need_samples(probe_path, "attention", att.size(), std::size_t(nc), "samples (an overhead and one efficiency per kind)");
    // time = overhead + FLOPs / (peak x eff x s / (s + knee)) for flash, bytes / (HBM x eff) for
    // the materialised pieces: linear in (overhead, 1 / eff) for given knees; the knees (forward
    // and backward apart) by grid search, 0 .. 8192 in steps of 128, least relative rms.
    // The flash column: FLOPs x (s + knee) / s in the seq form, FLOPs x (executed / counted tiles) x
    // (N + knee) / N in the tile form (w the diagonal tile weight).
    double w = 1;
    auto flash_x = [&](const A& a, double knee) {
      if (b2b) {
        const AttentionTiles tl = attention_tiles(a.b, a.h, a.sq, a.skv, a.causal, w);
        return a.x * (tl.executed / tl.counted) * (tl.executed + knee) / tl.executed;
      }
      return a.s > 0 ? a.x * (a.s + knee) / a.s : a.x;
    };
    auto solve_for = [&](double kf, double kb, Eigen::VectorXd& x) {
      Eigen::MatrixXd M = Eigen::MatrixXd::Zero(Eigen::Index(att.size()), nc);
      Eigen::VectorXd t(Eigen::Index(att.size()));
      for (std::size_t i = 0; i < att.size(); ++i) {
        auto ii = Eigen::Index(i);
        M(ii, 0) = 1.0;
        int c = att[i].flash ? (att[i].bwd ? col[1] : col[0]) : col[2];
        const double knee = att[i].flash ? (att[i].bwd ? kb : kf) : 0.0;
        M(ii, c) = att[i].flash ? flash_x(att[i], knee) : att[i].x;
        t(ii) = att[i].t;
      }
      if (attention_intercept || b2b) {
        x = solve_rel(M, t);
      } else {
        x = Eigen::VectorXd::Zero(nc);
        x.tail(nc - 1) = solve_rel(M.rightCols(nc - 1), t);
      }
      std::vector<double> pr, me;
      Eigen::VectorXd p = M * x;
      for (std::size_t i = 0; i < att.size(); ++i) {
        pr.push_back(std::max(0.0, x(0)) + p(Eigen::Index(i)) - x(0));
        me.push_back(att[i].t);
      }
      return rms_rel(pr, me);
    };
    Eigen::VectorXd x;
    double best = 1e300, bkf = 0, bkb = 0, bw = 1;
    if (b2b) {
      // Tile form: knees 0 and 128 x 2^(i/2) tiles (128 .. ~2M), the diagonal weight 1 .. 6 in halves.
      std::vector<double> knees = {0};
      for (int i = 0; i <= 28; ++i) knees.push_back(std::round(128 * std::pow(2.0, i / 2.0)));
      for (double wd = 1; wd <= 6; wd += 0.5) {
        w = wd;
        for (double kf : knees)
          for (double kb : knees) {
            if ((kf > 0 && !any_f) || (kb > 0 && !any_b)) continue;
            const double e = solve_for(kf, kb, x);
            if (e < best - 1e-12) { best = e; bkf = kf; bkb = kb; bw = wd; }
          }
      }
      w = bw;
    } else {
      for (double kf = 0; kf <= 8192; kf += 128)
        for (double kb = 0; kb <= 8192; kb += 128) {
          if ((kf > 0 && !any_f) || (kb > 0 && !any_b)) continue;
          const double e = solve_for(kf, kb, x);
          if (e < best - 1e-12) { best = e; bkf = kf; bkb = kb; }
        }
    }
    solve_for(bkf, bkb, x);
    af.tile_form = b2b;
    if (b2b) {
      af.flash_fwd_tile_knee = bkf;
      af.flash_bwd_tile_knee = bkb;
      af.diagonal_tile_weight = bw;
    } else {
      af.flash_fwd_seq_knee = bkf;
      af.flash_bwd_seq_knee = bkb;
    }
    af.overhead_s = std::max(0.0, x(0));
    if (any_f) af.flash_fwd_eff = 1.0 / (x(col[0]) * af.peak_flops);
    if (any_b) af.flash_bwd_eff = 1.0 / (x(col[1]) * af.peak_flops);
    if (any_m) af.materialized_bw_eff = 1.0 / (x(col[2]) * af.hbm_bandwidth);
    std::vector<double> pred, meas;
    for (auto& a : att) {
      const double knee = a.bwd ? bkb : bkf;
      double p = af.overhead_s + (a.flash ? flash_x(a, knee) / (af.peak_flops * (a.bwd ? af.flash_bwd_eff : af.flash_fwd_eff))
                                          : a.x / (af.hbm_bandwidth * af.materialized_bw_eff));
      pred.push_back(p);
      meas.push_back(a.t);
    }
    af.rms_rel_error = rms_rel(pred, meas);
    rep << label << ": " << att.size() << " samples (fused = " << impl_fit;
    if (!attention_intercept && !b2b) rep << ", no per-call intercept: each call timed alone with the host's dispatch";
    if (b2b) rep << ", back to back, " << host_bound << " host-bound left out";
    rep << "), flash fwd eff " << fmt("%.3f", af.flash_fwd_eff) << ", flash bwd eff " << fmt("%.3f", af.flash_bwd_eff);
    if (b2b)
      rep << " (tile knees " << fmt("%.0f", bkf) << " / " << fmt("%.0f", bkb) << ", diagonal tile weight " << fmt("%.1f", bw) << ")";
    else
      rep << " (seq knees " << fmt("%.0f", bkf) << " / " << fmt("%.0f", bkb) << ")";
    rep << ", materialized bw eff " << fmt("%.3f", af.materialized_bw_eff)
        << ", overhead " << fmt("%.1f", af.overhead_s * 1e6) << " us, rms rel error "
        << fmt("%.1f", af.rms_rel_error * 100) << "%\n";
    return true;
  };
  cal.has_attention = fit_attention(fused_impl, cal.attention, "attention");
  // FlashAttention-2 beside cuDNN's fused attention (run 31): its own fit, when measured back to back.
  // Or timed one call at a time in a table fitted without the per-call intercept (attention_intercept = false), or
  // as device times (attention_device_timed = true): cuDNN frontend's published tables, validation/cudnn_sdpa,
  // where both kernels were timed the same way.
  bool fa2_b2b = false, fa2_per_call = false;
  for (const Reader& r : rows("attention")) {
    fa2_b2b |= r.str("impl") == "flash" && r.str("timing") == "back_to_back";
    fa2_per_call |= r.str("impl") == "flash" && (!attention_intercept || attention_device_timed);
  }
  if (fused_impl == "cudnn_fused" && (fa2_b2b || fa2_per_call))
    cal.has_attention_fa2 = fit_attention("flash", cal.attention_fa2, "attention_fa2 (FlashAttention-2)");
  // FlashAttention in Triton as llm-foundry ran it (run 42, validation/attention_triton.py): its own fit.
  bool triton_b2b = false;
  for (const Reader& r : rows("attention")) triton_b2b |= r.str("impl") == "triton_flash" && r.str("timing") == "back_to_back";
  if (triton_b2b)
    cal.has_attention_triton =
        fit_attention("triton_flash", cal.attention_triton, "attention_triton (FlashAttention in Triton)", false);
  if (cal.has_attention_triton) {
    // Its backward's program form (calibration.h): each launch fitted on its own samples (a sample's
    // `launch` key, "per_head" or "split", written for both launches since run 43; before, the faster one
    // only, the split one named in its source), relative least squares on time = intercept + the launch's
    // tile columns; samples under 3 x the shortest backward left out as host-bound, as above. A tile time
    // that comes out negative is dropped and the rest refitted. Needs the probe's SM count.
    AttentionFit& a = cal.attention_triton;
    const toml::node* prov = root.get("provenance");
    const int sms = prov && prov->is_table() ? static_cast<int>(top.sub("provenance").num("sm_count", false, 0)) : 0;
    struct S { bool split; ProgramWork w; double t; };
    std::vector<S> bw;
    std::vector<Reader> samples;   // the back-to-back backward samples
    double shortest = 1e300;
    for (const Reader& r : rows("attention"))
      if (r.str("impl") == "triton_flash" && r.str("pass") == "bwd" && r.str("timing") == "back_to_back") {
        samples.push_back(r);
        shortest = std::min(shortest, r.num("seconds"));
      }
    for (const Reader& r : samples) {
      if (sms < 1) break;   // no program form without the SM count
      bool split = r.str("source").find("sequence-parallel") != std::string::npos;
      if (const toml::node* l = r.node("launch")) {
        const std::string launch = r.str("launch");
        if (launch != "per_head" && launch != "split")
          fail(probe_path, l->source(), "'launch' must be \"per_head\" or \"split\", not \"" + launch + "\"");
        split = launch == "split";
      }
      const double t = r.num("seconds");
      if (t < 3 * shortest) continue;
      if (!(r.num("head_dim") > 0)) fail(probe_path, r.where, "attention sample needs a positive head_dim");
      bool causal = true;
      if (const toml::node* c = r.node("causal")) causal = c->value_or(true);
      const double s = r.num("seq");
      ProgramWork w = program_work(r.num("batch"), r.num("heads"), s, r.num("seq_kv", false, s), causal, sms);
      const double scale = r.num("head_dim") / 128.0;
      w.head_waves *= scale;
      w.head_busy *= scale;
      w.split *= scale;
      bw.push_back({split, w, t});
    }
    // Columns: intercept, then the launch's tile columns; returns the coefficients (empty: too few samples).
    auto fit_launch = [&](bool split, int cols) {
      std::vector<const S*> use;
      for (const S& e : bw)
        if (e.split == split) use.push_back(&e);
      if (use.size() < std::size_t(cols) + 1) return Eigen::VectorXd();
      Eigen::MatrixXd M(Eigen::Index(use.size()), cols);
      Eigen::VectorXd t(Eigen::Index(use.size()));
      for (std::size_t i = 0; i < use.size(); ++i) {
        const auto k = Eigen::Index(i);
        M(k, 0) = 1;
        M(k, 1) = split ? use[i]->w.split : use[i]->w.head_waves;
        if (cols > 2) M(k, 2) = use[i]->w.head_busy;
        t(k) = use[i]->t;
      }
      return solve_rel(M, t);
    };
    Eigen::VectorXd head = fit_launch(false, 3);
    if (head.size() == 3 && !(head(2) >= 0)) head = fit_launch(false, 2);
    const Eigen::VectorXd split = fit_launch(true, 2);
    if (head.size() >= 2 && split.size() == 2 && head(1) > 0 && split(1) > 0) {
      a.program_sms = sms;
      a.bwd_program_overhead_s = std::max(0.0, head(0));
      a.bwd_program_tile_s = head(1);
      a.bwd_program_tile_busy_s = head.size() == 3 ? head(2) : 0.0;
      a.bwd_split_overhead_s = std::max(0.0, split(0));
      a.bwd_split_tile_s = split(1);
      double sq[2] = {0, 0};
      int n[2] = {0, 0};
      for (const S& e : bw) {
        const double p = launch_seconds(a, e.w, e.split, 1.0);
        sq[e.split] += (p - e.t) * (p - e.t) / (e.t * e.t);
        ++n[e.split];
      }
      rep << "attention_triton backward, program form on " << sms << " SMs: per (batch, head) "
          << fmt("%.1f", a.bwd_program_overhead_s * 1e6) << " us + tiles x (waves x "
          << fmt("%.2f", a.bwd_program_tile_s * 1e6) << " + busy share x " << fmt("%.2f", a.bwd_program_tile_busy_s * 1e6)
          << ") us over " << n[0] << " samples, rms rel error " << fmt("%.1f", 100 * std::sqrt(sq[0] / n[0]))
          << "%; split " << fmt("%.1f", a.bwd_split_overhead_s * 1e6) << " us + tiles x "
          << fmt("%.2f", a.bwd_split_tile_s * 1e6) << " us over " << n[1] << " samples, rms rel error "
          << fmt("%.1f", 100 * std::sqrt(sq[1] / n[1])) << "%\n";
    } else {
      rep << "attention_triton backward: no program form (" << (sms < 1 ? "the probe's provenance has no sm_count"
                                                                        : "too few samples of a launch")
          << "); the tile form prices it\n";
    }
  }

  // Dropout inside the fused attention (calibration.h AttentionFit, run 48): [[attention_dropout]] rows,
  // each one call's shape timed back to back with dropout (`seconds`) and without (`seconds_no_dropout`).
  // Per pass, the time per counted score (causal: half of seq x seq_kv) by relative least squares on the
  // time with dropout, seconds = seconds_no_dropout + scores x c, so
  //   c = sum(x (t - t0) / t^2) / sum(x^2 / t^2),
  // into the fit of the kernel the rows name (`impl` as in [[attention]]); on the probe's SM count.
  auto fit_dropout = [&](const std::string& impl_fit, AttentionFit& af, const char* label) {
    struct D { bool bwd; double x, t, t0; };
    std::vector<D> ds;
    for (const Reader& r : rows("attention_dropout")) {
      if (r.str("impl") != impl_fit) continue;
      const std::string pass = r.str("pass");
      if (pass != "fwd" && pass != "bwd")
        fail(probe_path, r.node("pass") ? r.node("pass")->source() : r.where, "'pass' must be \"fwd\" or \"bwd\"");
      const double b = r.num("batch"), h = r.num("heads"), sq = r.num("seq"), skv = r.num("seq_kv", false, sq);
      const double p = r.num("dropout"), t = r.num("seconds"), t0 = r.num("seconds_no_dropout");
      bool causal = true;
      if (const toml::node* c = r.node("causal")) {
        if (!c->is_boolean()) fail(probe_path, c->source(), "'causal' must be true or false");
        causal = c->value_or(true);
      }
      if (!(b > 0) || !(h > 0) || !(sq > 0) || !(skv > 0) || !(t > 0) || !(t0 > 0))
        fail(probe_path, r.where, "attention_dropout sample needs positive batch, heads, seq, seq_kv, seconds, seconds_no_dropout");
      if (!(p > 0) || !(p < 1)) fail(probe_path, r.node("dropout")->source(), "'dropout' must be above 0 and below 1");
      ds.push_back({pass == "bwd", b * h * sq * skv * (causal ? 0.5 : 1.0), t, t0});
    }
    if (ds.empty()) return;
    const toml::node* prov = root.get("provenance");
    const toml::node* sm = prov && prov->is_table() ? prov->as_table()->get("sm_count") : nullptr;
    if (!sm) fail(probe_path, "[[attention_dropout]] samples need the probe's provenance sm_count (the GPU they ran on)");
    const double smf = top.sub("provenance").num("sm_count");
    if (!(smf >= 1) || smf > 1e5 || smf != std::floor(smf))
      fail(probe_path, sm->source(), "'sm_count' must be a whole number of SMs, 1 to 100000");
    const int sms = static_cast<int>(smf);
    double c[2] = {0, 0}, sq = 0;
    int n[2] = {0, 0};
    for (int pass = 0; pass < 2; ++pass) {
      double num = 0, den = 0;
      for (const D& d : ds)
        if (d.bwd == (pass == 1)) {
          num += d.x * (d.t - d.t0) / (d.t * d.t);
          den += d.x * d.x / (d.t * d.t);
          ++n[pass];
        }
      if (n[pass] < 2)
        fail(probe_path, std::string("[[attention_dropout]] samples of impl \"") + impl_fit + "\": fewer than 2 " +
                             (pass ? "backward" : "forward") + " pairs (each pass is fitted on its own)");
      c[pass] = std::max(0.0, num / den);   // dropout never makes a call faster
    }
    for (const D& d : ds) {
      const double e = (d.t0 + d.x * c[d.bwd] - d.t) / d.t;
      sq += e * e;
    }
    af.dropout_fwd_s_per_score = c[0];
    af.dropout_bwd_s_per_score = c[1];
    af.dropout_sms = sms;
    af.dropout_rms_rel_error = std::sqrt(sq / static_cast<double>(ds.size()));
    rep << label << " dropout: " << n[0] << " + " << n[1] << " pairs, forward " << fmt("%.3f", c[0] * 1e12)
        << " ps / backward " << fmt("%.3f", c[1] * 1e12) << " ps per score on " << sms
        << " SMs, rms rel error " << fmt("%.1f", af.dropout_rms_rel_error * 100) << "%\n";
  };
  if (cal.has_attention) fit_dropout(fused_impl, cal.attention, "attention");
  if (cal.has_attention_fa2) fit_dropout("flash", cal.attention_fa2, "attention_fa2");
  // A pair of a kernel with no fit of its own to add it to is refused, not silently left out.
  for (const Reader& r : rows("attention_dropout")) {
    const std::string impl = r.str("impl");
    if (!((cal.has_attention && impl == fused_impl) || (cal.has_attention_fa2 && impl == "flash")))
      fail(probe_path, r.node("impl") ? r.node("impl")->source() : r.where,
           "[[attention_dropout]] sample of impl \"" + impl + "\": the fit has no fused attention of that kernel to add it to"
           " (its [[attention]] samples: cuDNN's as the fused attention, FlashAttention-2's timed back to back beside it)");
  }

  // Memory-bound kernels: time = bytes / bandwidth + fixed.
  std::vector<std::pair<double, double>> mem;
  // Eager PyTorch kernel families (kind "torch:<family>", validation/kernel_bw.py): one
  // bandwidth each, time = bytes / bandwidth, relative least squares (the samples are large,
  // launch-free sizes); they stay out of the copy fit.
  std::vector<std::pair<double, double>> fam[kMemFamilies];
  for (const Reader& r : rows("memory")) {
    std::string kind = r.str("kind");
    if (kind == "memcpy_d2d") continue;  // a copy-engine/driver path, not a kernel the model launches
    if (kind.rfind("torch:", 0) == 0) {
      const std::string name = kind.substr(6);
      int f = 0;
      for (int i = 1; i < kMemFamilies; ++i)
        if (name == kMemFamilyNames[i]) f = i;
      if (f > 0) fam[f].push_back({r.num("bytes"), r.num("seconds")});   // other torch kinds: reference only
      continue;
    }
    mem.push_back({r.num("bytes"), r.num("seconds")});
  }
  if (!mem.empty()) {
    std::set<double> sizes;
    for (auto& [b, sec] : mem) sizes.insert(b);
    need_samples(probe_path, "memory", sizes.size(), 2, "distinct sizes in bytes (bandwidth and fixed time)");
    std::vector<TwoTerm> copies;
    for (auto& [b, sec] : mem) copies.push_back({1.0, b, sec});
    const auto [copy_fixed, copy_inv_bw] = fit_two(copies);
    MemoryFit& mf = cal.memory;
    mf.achieved_bandwidth = 1.0 / copy_inv_bw;
    mf.fixed_overhead_s = std::max(0.0, copy_fixed);
    std::vector<double> pred, meas;
    for (auto& [b, s] : mem) { pred.push_back(mf.fixed_overhead_s + b / mf.achieved_bandwidth); meas.push_back(s); }
    mf.rms_rel_error = rms_rel(pred, meas);
    for (const Reader& r : rows("launch")) {
      std::string kind = r.str("kind");
      if (kind == "stream_back_to_back") mf.launch_overhead_s = r.nonneg("seconds_per_kernel");
      if (kind == "graph_replay") mf.graph_launch_overhead_s = r.nonneg("seconds_per_kernel");
    }
    for (int f = 1; f < kMemFamilies; ++f) {
      if (fam[f].empty()) continue;
      // Like the copy fit: time = fixed + bytes / bandwidth, relative least squares; the
      // intercept takes what does not scale with the bytes (a launch, the host gaps between
      // the kernels of a multi-kernel sample such as the norm backward), the slope is the
      // family's bandwidth, which the cost model uses (launch costs are charged separately).
      // Sizes spanning less than 4x (the intercept is not identifiable), or a negative
      // intercept: time = bytes / bandwidth through the origin.
      double fixed = 0, inv_bw = 0, lo = 1e300, hi = 0;
      for (auto& [b, sec] : fam[f]) { lo = std::min(lo, b); hi = std::max(hi, b); }
      if (fam[f].size() >= 2 && hi >= 4 * lo) {
        std::vector<TwoTerm> ts;
        for (auto& [b, sec] : fam[f]) ts.push_back({1.0, b, sec});
        std::tie(fixed, inv_bw) = fit_two(ts);
      }
      if (!(fixed >= 0) || !(inv_bw > 0)) {
        // minimise sum ((b x - t) / t)^2: x = sum(b / t) / sum((b / t)^2)
        double num = 0, den = 0;
        for (auto& [b, sec] : fam[f]) { num += b / sec; den += (b / sec) * (b / sec); }
        fixed = 0;
        inv_bw = num / den;
      }
      mf.family_bandwidth[f] = 1.0 / inv_bw;
      std::vector<double> fp, fm;
      for (auto& [b, sec] : fam[f]) { fp.push_back(fixed + b * inv_bw); fm.push_back(sec); }
      mf.family_rms_rel_error[f] = rms_rel(fp, fm);
      mf.family_samples[f] = static_cast<int>(fam[f].size());
    }
    cal.has_memory = true;
    rep << "memory: " << mem.size() << " samples, bandwidth " << fmt("%.0f", mf.achieved_bandwidth * 1e-9)
        << " GB/s, fixed " << fmt("%.2f", mf.fixed_overhead_s * 1e6) << " us, launch "
        << fmt("%.2f", mf.launch_overhead_s * 1e6) << " us (graph " << fmt("%.2f", mf.graph_launch_overhead_s * 1e6)
        << " us), rms rel error " << fmt("%.1f", mf.rms_rel_error * 100) << "%\n";
    for (int f = 1; f < kMemFamilies; ++f)
      if (mf.family_samples[f] > 0)
        rep << "  family " << kMemFamilyNames[f] << ": " << mf.family_samples[f] << " samples, bandwidth "
            << fmt("%.0f", mf.family_bandwidth[f] * 1e-9) << " GB/s (" << fmt("%.2f", mf.family_bandwidth[f] / mf.achieved_bandwidth)
            << " of the copy fit), rms rel error " << fmt("%.1f", mf.family_rms_rel_error[f] * 100) << "%\n";
  }

  // Collectives (>= 2 GPUs), in the form hardware/collectives.cpp charges them:
  // t = steps * latency + bus_bytes / bus_bandwidth, with the nccl-tests bus
  // factors and the ring's latency steps (all-reduce 2(n-1), all-gather /
  // reduce-scatter / all-to-all n-1, send/recv 1), so the fitted latency is
  // the per-step alpha the model multiplies.
  std::vector<TwoTerm> col;   // {steps, bus bytes, seconds}
  std::vector<TwoTerm> per_op[kCollectiveOps];   // the same samples, by operation
  for (const Reader& r : rows("collective")) {
    double g = r.num("gpus");
    if (!(g >= 1) || g != std::floor(g) || !(r.num("bytes") > 0) || !(r.num("seconds") > 0))
      fail(probe_path, r.where, "collective sample needs a whole number of gpus >= 1 and positive bytes and seconds");
    if (g < 2) continue;
    std::string op = r.str("op");
    double f = op == "all_reduce" ? 2 * (g - 1) / g : (op == "send_recv" ? 1.0 : (g - 1) / g);
    double steps = op == "all_reduce" ? 2 * (g - 1) : (op == "send_recv" ? 1.0 : g - 1);
    col.push_back({steps, r.num("bytes") * f, r.num("seconds")});
    for (int i = 0; i < kCollectiveOps; ++i)
      if (op == kCollectiveOpNames[i]) per_op[i].push_back(col.back());
  }
  if (!col.empty()) {
    std::set<double> sizes;
    for (const auto& c : col) sizes.insert(c.x);
    need_samples(probe_path, "collective", sizes.size(), 2, "distinct bus-byte sizes (bandwidth and latency)");
  }
  if (col.size() >= 2) {
    const auto [latency, inv_bw] = fit_two(col);
    CollectiveFit& cf = cal.collectives;
    cf.nvlink_bus_bandwidth = 1.0 / inv_bw;
    cf.nvlink_latency_s = std::max(0.0, latency);
    std::vector<double> pred, meas;
    for (const auto& c : col) {
      pred.push_back(c.u * cf.nvlink_latency_s + c.x / cf.nvlink_bus_bandwidth);
      meas.push_back(c.t);
    }
    cf.rms_rel_error = rms_rel(pred, meas);
    cal.has_collectives = true;
    rep << "collectives: " << col.size() << " samples, bus bandwidth " << fmt("%.0f", cf.nvlink_bus_bandwidth * 1e-9)
        << " GB/s, latency " << fmt("%.1f", cf.nvlink_latency_s * 1e6) << " us, rms rel error "
        << fmt("%.1f", cf.rms_rel_error * 100) << "%\n";
    // Per operation: the same line t = steps * latency + bus_bytes / bandwidth over that
    // operation's samples alone, when it has at least kMinOpSamples whose bus bytes span
    // 4x or more (else the latency is not identifiable). A negative latency: refit
    // through the origin, as the memory families. The overall line stays as fitted above.
    constexpr std::size_t kMinOpSamples = 4;
    for (int i = 0; i < kCollectiveOps; ++i) {
      const auto& s = per_op[i];
      if (s.empty()) continue;
      std::vector<double> overall_pred, op_meas;
      for (const auto& c : s) {
        overall_pred.push_back(c.u * cf.nvlink_latency_s + c.x / cf.nvlink_bus_bandwidth);
        op_meas.push_back(c.t);
      }
      const double overall_err = rms_rel(overall_pred, op_meas);
      double lo = 1e300, hi = 0;
      for (const auto& c : s) { lo = std::min(lo, c.x); hi = std::max(hi, c.x); }
      double op_latency = 0, op_inv_bw = 0;
      if (s.size() >= kMinOpSamples && hi >= 4 * lo) {
        std::tie(op_latency, op_inv_bw) = fit_two(s);
        if (!(op_latency >= 0)) {   // minimise sum ((x b - t) / t)^2: b = sum(x / t) / sum((x / t)^2)
          double num = 0, den = 0;
          for (const auto& c : s) { num += c.x / c.t; den += (c.x / c.t) * (c.x / c.t); }
          op_latency = 0;
          op_inv_bw = num / den;
        }
      }
      rep << "  " << kCollectiveOpNames[i] << ": " << s.size() << " samples, ";
      if (!(op_inv_bw > 0) || !std::isfinite(op_inv_bw)) {
        rep << "no fit of its own (needs " << kMinOpSamples << " spanning 4x in bytes); the one line for all: rms rel error "
            << fmt("%.1f", overall_err * 100) << "%\n";
        continue;
      }
      CollectiveOpFit& o = cf.op[i];
      o.nvlink_bus_bandwidth = 1.0 / op_inv_bw;
      o.nvlink_latency_s = op_latency;
      o.samples = static_cast<int>(s.size());
      std::vector<double> op_pred;
      for (const auto& c : s) op_pred.push_back(c.u * o.nvlink_latency_s + c.x / o.nvlink_bus_bandwidth);
      o.rms_rel_error = rms_rel(op_pred, op_meas);
      rep << "bus bandwidth " << fmt("%.0f", o.nvlink_bus_bandwidth * 1e-9) << " GB/s, latency "
          << fmt("%.1f", o.nvlink_latency_s * 1e6) << " us, rms rel error " << fmt("%.1f", o.rms_rel_error * 100)
          << "% (the one line for all: " << fmt("%.1f", overall_err * 100) << "%)\n";
    }
  } else {
    rep << "collectives: no multi-GPU samples; not fitted\n";
  }
  // GEMM time against the GEMM duty of the sequence it runs in ([[gemm_duty]]: duty, gemm_us).
  {
    std::vector<std::pair<double, double>> pts;
    for (const Reader& r : rows("gemm_duty")) {
      const double d = r.num("duty"), us = r.num("gemm_us");
      if (!(d > 0 && d <= 1) || !(us > 0 && us < 1e9))
        fail(probe_path, r.where, "gemm_duty sample needs duty in (0, 1] and gemm_us > 0");
      pts.push_back({d, us});
    }
    if (!pts.empty()) {
      need_samples(probe_path, "gemm_duty", pts.size(), 2, "duties (a curve)");
      std::sort(pts.begin(), pts.end());
      const double ref_us = pts.back().second;   // the largest duty: GEMMs only
      // Pool adjacent violators: the ratio may not fall as the duty grows (more GEMM power, no higher clock).
      std::vector<double> val, wt;
      std::vector<std::vector<double>> duties;
      for (const auto& [d, us] : pts) {
        val.push_back(us / ref_us); wt.push_back(1); duties.push_back({d});
        while (val.size() > 1 && val[val.size() - 2] > val.back()) {
          const double w = wt[wt.size() - 2] + wt.back();
          val[val.size() - 2] = (val[val.size() - 2] * wt[wt.size() - 2] + val.back() * wt.back()) / w;
          wt[wt.size() - 2] = w;
          duties[duties.size() - 2].insert(duties[duties.size() - 2].end(), duties.back().begin(), duties.back().end());
          val.pop_back(); wt.pop_back(); duties.pop_back();
        }
      }
      for (std::size_t i = 0; i < val.size(); ++i)
        for (double d : duties[i]) { cal.gemm_clock.duty.push_back(d); cal.gemm_clock.time_ratio.push_back(val[i]); }
      cal.gemm_clock.samples = static_cast<int>(pts.size());
      cal.has_gemm_clock = true;
      rep << "gemm clock: " << pts.size() << " duties " << fmt("%.2f", pts.front().first) << "-"
          << fmt("%.2f", pts.back().first) << ", time ratio " << fmt("%.3f", cal.gemm_clock.time_ratio.front())
          << " at the lowest\n";
    }
  }
  fit_grouped_gemm(probe_path, rows("grouped_gemm"), cal, rep);
  int gpu_sms = 0;
  if (const toml::node* p = root.get("provenance"); p && p->is_table())
    gpu_sms = static_cast<int>(top.sub("provenance").num("sm_count", false, 0));
  fit_gemm_power(probe_path, rows("gemm_power"), gpu_sms, cal, rep);
  fit_slowest_of_n(probe_path, rows("slowest_of_n"), cal, rep);
  fit_board_spread(probe_path, rows("board"), cal, rep);
  if (!cal.has_gemm && !cal.has_attention && !cal.has_memory && !cal.has_collectives && !cal.has_gemm_grouped &&
      !cal.has_power && !cal.has_slowest_of_n && !cal.has_board_spread)
    fail(probe_path,
         "no probe samples ([[gemm]], [[attention]], [[memory]], [[collective]], [[grouped_gemm]], [[gemm_power]], "
         "[[slowest_of_n]], [[board]]) found");
  check_fit(cal, probe_path);
  if (report) *report = rep.str();
  return cal;
}

AttentionTiles attention_tiles(double batch, double heads, double seq_q, double seq_kv, bool causal,
                               double diagonal_weight) {
  const double nq = std::ceil(seq_q / 128), nk = std::ceil(seq_kv / 128), bh = batch * heads;
  AttentionTiles t;
  t.counted = bh * (seq_q / 128) * (seq_kv / 128) * (causal ? 0.5 : 1.0);
  // Causal: half the tiles, each query block's diagonal tile at the weight instead of a half (a
  // square call of n blocks: n (n - 1) / 2 + w n; a context-parallel rank's load-balanced share of
  // S/cp queries on S keys alike, one diagonal tile per query block).
  t.executed = causal ? bh * (nq * nk / 2 + (diagonal_weight - 0.5) * nq) : bh * nq * nk;
  if (!(t.counted > 0)) t.counted = t.executed;
  return t;
}

double triton_bwd_program_seconds(const AttentionFit& a, double batch, double heads, double seq_q, double seq_kv,
                                  bool causal, double tile_scale, int sms) {
  if (!(a.bwd_program_tile_s > 0) || !(a.bwd_split_tile_s > 0) || sms < 1 || !(tile_scale > 0)) return 0;
  const ProgramWork w = program_work(batch, heads, seq_q, seq_kv, causal, sms);
  return std::min(launch_seconds(a, w, false, tile_scale), launch_seconds(a, w, true, tile_scale));
}

}  // namespace mfusim::hardware
