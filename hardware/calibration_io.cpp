// Calibration files: reading (with positions and physical bounds) and writing
// hardware/calibration/*.toml, and which calibration a GPU uses by default. The fit of a probe
// output: calibration.cpp.
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
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <utility>
#include "hardware/calibration_toml.h"

namespace mfusim::hardware {
using detail::fail;
using detail::fmt;
using detail::parse_file;
using detail::Reader;
namespace {

// A section's non-empty array of numbers `key`, each within (lo, hi] (open_low) or [lo, hi].
std::vector<double> number_list(const std::string& path, const Reader& r, const char* key, double lo, double hi, bool open_low) {
  const toml::node* n = r.node(key);
  if (!n) fail(path, r.where, std::string("missing key '") + key + "'");
  const toml::array* a = n->as_array();
  if (!a || a->empty()) fail(path, n->source(), std::string("'") + key + "' must be a non-empty array of numbers");
  std::vector<double> out;
  for (const toml::node& e : *a) {
    const auto v = e.value<double>();
    if (!v || !std::isfinite(*v) || (open_low ? *v <= lo : *v < lo) || *v > hi)
      fail(path, e.source(), std::string("'") + key + "' values must be numbers in " + (open_low ? "(" : "[") + fmt("%g", lo) +
                                 ", " + fmt("%g", hi) + "]");
    out.push_back(*v);
  }
  return out;
}

void write_grouped_gemm(std::ostream& f, const GroupedGemmFit& g, bool fp8 = false) {
  f << (fp8 ? "\n[gemm_grouped_fp8]  # fp8 per-expert GEMMs' rate / one fp8 GEMM of the same total size, by tokens per expert\n"
            : "\n[gemm_grouped]  # grouped expert GEMM rate / one dense GEMM of the same total size, by tokens per expert\n")
    << "tokens_per_expert = [";
  for (std::size_t i = 0; i < g.tokens_per_expert.size(); ++i) f << (i ? ", " : "") << fmt("%.9g", g.tokens_per_expert[i]);
  f << "]\nefficiency = [";
  for (std::size_t i = 0; i < g.efficiency.size(); ++i) f << (i ? ", " : "") << fmt("%.9g", g.efficiency[i]);
  f << "]\nrms_rel_error = " << fmt("%.9g", g.rms_rel_error) << "\nsamples = " << g.samples << "\n";
}

void read_grouped_gemm(const std::string& path, const Reader& r, Calibration& c, bool fp8 = false) {
  r.only({"tokens_per_expert", "efficiency", "rms_rel_error", "samples"});
  GroupedGemmFit& g = fp8 ? c.gemm_grouped_fp8 : c.gemm_grouped;
  g.tokens_per_expert = number_list(path, r, "tokens_per_expert", 0, 1e9, true);
  g.efficiency = number_list(path, r, "efficiency", 0, 1, true);
  if (g.tokens_per_expert.size() != g.efficiency.size())
    fail(path, r.node("efficiency")->source(), "'efficiency' needs one value per 'tokens_per_expert' value");
  for (std::size_t i = 1; i < g.tokens_per_expert.size(); ++i)
    if (!(g.tokens_per_expert[i] > g.tokens_per_expert[i - 1]))
      fail(path, r.node("tokens_per_expert")->source(), "'tokens_per_expert' must be strictly ascending");
  g.rms_rel_error = r.bounded("rms_rel_error", kRmsBound, false);
  g.samples = static_cast<int>(r.bounded("samples", CalibrationBound{"samples", 0, false, 1e9}, false));
  (fp8 ? c.has_gemm_grouped_fp8 : c.has_gemm_grouped) = true;
}

void write_slowest_of_n(std::ostream& f, const SlowestOfN& t) {
  f << "\n[slowest_of_n]  # expected slowest of N identical compute intervals / their mean, by group size N\ngroup = [";
  for (std::size_t i = 0; i < t.group.size(); ++i) f << (i ? ", " : "") << fmt("%.9g", t.group[i]);
  f << "]\nratio = [";
  for (std::size_t i = 0; i < t.ratio.size(); ++i) f << (i ? ", " : "") << fmt("%.9g", t.ratio[i]);
  f << "]\nunits = " << t.units << "\n";
}

void read_slowest_of_n(const std::string& path, const Reader& r, Calibration& c) {
  r.only({"group", "ratio", "units"});
  SlowestOfN& t = c.slowest_of_n;
  t.group = number_list(path, r, "group", 2, 1e6, false);
  t.ratio = number_list(path, r, "ratio", 1, 2, false);
  if (t.group.size() != t.ratio.size()) fail(path, r.node("ratio")->source(), "'ratio' needs one value per 'group' value");
  for (double g : t.group)
    if (g != std::floor(g)) fail(path, r.node("group")->source(), "'group' values must be whole numbers of ranks");
  for (std::size_t i = 1; i < t.group.size(); ++i) {
    if (!(t.group[i] > t.group[i - 1])) fail(path, r.node("group")->source(), "'group' must be strictly ascending");
    if (t.ratio[i] < t.ratio[i - 1]) fail(path, r.node("ratio")->source(), "'ratio' must not fall as the group grows");
  }
  const double units = r.nonneg("units", false);
  if (units > 1e9 || units != std::floor(units))
    fail(path, r.node("units")->source(), "'units' must be a whole number of at most 1e9");
  t.units = static_cast<int>(units);
  c.has_slowest_of_n = true;
}


void write_board_spread(std::ostream& f, const BoardSpread& b) {
  f << "\n[board_spread]  # standard deviation of a board's sustained time for the same work over the boards' mean\n"
    << "sd = " << fmt("%.9g", b.sd) << "\nboards = " << b.boards << "\n";
}

void read_board_spread(const std::string& path, const Reader& r, Calibration& c) {
  r.only({"sd", "boards"});
  c.board_spread.sd = r.num("sd");
  if (!(c.board_spread.sd > 0 && c.board_spread.sd <= 0.2))
    fail(path, r.node("sd")->source(), "'sd' must be in (0, 0.2] (a fraction of the mean)");
  const double boards = r.num("boards");
  if (!(boards >= 3 && boards <= 1e9 && boards == std::floor(boards)))
    fail(path, r.node("boards")->source(), "'boards' must be a whole number in [3, 1e9]");
  c.board_spread.boards = static_cast<int>(boards);
  c.has_board_spread = true;
}

}  // namespace

// ------------------------------------------------------------------ write / read
void write_calibration(const Calibration& c, const std::string& path) {
  std::ostringstream f;
  auto g = [](double v) { return fmt("%.9g", v).find_first_of(".en") == std::string::npos ? fmt("%.9g", v) + ".0" : fmt("%.9g", v); };
  f << "# mfusim calibration (hardware/calibration.h), fitted by `mfusim calibrate` from a probe output.\n"
    << "# Units as named: tflops = 1e12 FLOP/s, gbs = 1e9 bytes/s, us = microseconds; efficiencies are fractions.\n"
    << "format = \"mfusim-calibration-1\"\n"
    << "gpu = \"" << c.gpu_name << "\"\n";
  auto gemm = [&](const char* name, const GemmFit& fit, const std::vector<GemmSample>& table) {
    f << "\n[" << name << "]  # time = overhead + 2mnk / (peak * eff_max * (1 - exp(-cbrt(mnk) / knee)))\n"
      << "peak_tflops = " << g(fit.peak_flops * 1e-12) << "\n"
      << "eff_max = " << g(fit.eff_max) << "\n"
      << "knee = " << g(fit.knee) << "\n"
      << "overhead_us = " << g(fit.overhead_s * 1e6) << "\n"
      << "rms_rel_error = " << g(fit.rms_rel_error) << "\n"
      << "table = [  # measured exact shapes: [m, n, k, microseconds]\n";
    for (const auto& s : table) f << "  [" << s.m << ", " << s.n << ", " << s.k << ", " << g(s.seconds * 1e6) << "],\n";
    f << "]\n";
  };
  if (c.has_gemm) gemm("gemm", c.gemm, c.gemm_table);
  if (c.has_gemm_fp8) gemm("gemm_fp8", c.gemm_fp8, c.gemm_fp8_table);
  auto attention = [&](const char* section, const AttentionFit& a) {
    f << "\n[" << section << "]\npeak_tflops = " << g(a.peak_flops * 1e-12) << "\nhbm_bandwidth_gbs = " << g(a.hbm_bandwidth * 1e-9)
      << "\nflash_fwd_eff = " << g(a.flash_fwd_eff) << "\nflash_bwd_eff = " << g(a.flash_bwd_eff)
      << "\nflash_fwd_seq_knee = " << g(a.flash_fwd_seq_knee) << "\nflash_bwd_seq_knee = " << g(a.flash_bwd_seq_knee)
      << "\nmaterialized_bw_eff = " << g(a.materialized_bw_eff) << "\noverhead_us = " << g(a.overhead_s * 1e6)
      << "\nrms_rel_error = " << g(a.rms_rel_error) << "\n";
    if (a.tile_form)
      f << "form = \"tiles\"\nflash_fwd_tile_knee = " << g(a.flash_fwd_tile_knee) << "\nflash_bwd_tile_knee = "
        << g(a.flash_bwd_tile_knee) << "\ndiagonal_tile_weight = " << g(a.diagonal_tile_weight) << "\n";
    if (a.bwd_program_tile_s > 0)
      f << "bwd_program_overhead_us = " << g(a.bwd_program_overhead_s * 1e6) << "\nbwd_program_tile_us = "
        << g(a.bwd_program_tile_s * 1e6) << "\nbwd_program_tile_busy_us = " << g(a.bwd_program_tile_busy_s * 1e6)
        << "\nbwd_split_overhead_us = " << g(a.bwd_split_overhead_s * 1e6) << "\nbwd_split_tile_us = "
        << g(a.bwd_split_tile_s * 1e6) << "\nprogram_sms = " << a.program_sms << "\n";
    if (a.dropout_sms > 0)
      f << "dropout_fwd_ps_per_score = " << g(a.dropout_fwd_s_per_score * 1e12) << "\ndropout_bwd_ps_per_score = "
        << g(a.dropout_bwd_s_per_score * 1e12) << "\ndropout_sms = " << a.dropout_sms
        << "\ndropout_rms_rel_error = " << g(a.dropout_rms_rel_error) << "\n";
  };
  if (c.has_attention) attention("attention", c.attention);
  if (c.has_attention_fa2) attention("attention_fa2", c.attention_fa2);
  if (c.has_attention_triton) attention("attention_triton", c.attention_triton);
  if (c.has_memory) {
    const auto& m = c.memory;
    f << "\n[memory]" << (m.note.empty() ? "" : "  # " + m.note) << "\nachieved_bandwidth_gbs = " << g(m.achieved_bandwidth * 1e-9)
      << "\nlaunch_overhead_us = " << g(m.launch_overhead_s * 1e6)
      << "\ngraph_launch_overhead_us = " << g(m.graph_launch_overhead_s * 1e6)
      << "\nfixed_overhead_us = " << g(m.fixed_overhead_s * 1e6) << "\nrms_rel_error = " << g(m.rms_rel_error) << "\n";
    bool any = false;
    for (int i = 1; i < kMemFamilies; ++i) any = any || m.family_bandwidth[i] > 0;
    if (any) {
      f << "\n[memory_families]  # eager PyTorch kernel families: GB/s on mfusim's byte count (validation/kernel_bw.py)\n";
      for (int i = 1; i < kMemFamilies; ++i)
        if (m.family_bandwidth[i] > 0) {
          f << kMemFamilyNames[i] << "_gbs = " << g(m.family_bandwidth[i] * 1e-9);
          if (m.family_samples[i] > 0)   // fitted here (a rate carried from another GPU's fit has no samples)
            f << "  # " << m.family_samples[i] << " samples, rms rel error " << fmt("%.3f", m.family_rms_rel_error[i]);
          f << "\n";
        }
    }
  }
  if (c.has_collectives) {
    const auto& k = c.collectives;
    f << "\n[collectives]\nnvlink_bus_bandwidth_gbs = " << g(k.nvlink_bus_bandwidth * 1e-9)
      << "\nnvlink_latency_us = " << g(k.nvlink_latency_s * 1e6) << "\nnic_bus_bandwidth_gbs = "
      << g(k.nic_bus_bandwidth * 1e-9) << "\nnic_latency_us = " << g(k.nic_latency_s * 1e6)
      << "\nrms_rel_error = " << g(k.rms_rel_error) << "\n";
    for (int i = 0; i < kCollectiveOps; ++i) {
      const CollectiveOpFit& o = k.op[i];
      if (!(o.nvlink_bus_bandwidth > 0)) continue;
      f << "\n[collectives." << kCollectiveOpNames[i] << "]  # this operation's own NVLink fit, used for it in place of the [collectives] line\n"
        << "nvlink_bus_bandwidth_gbs = " << g(o.nvlink_bus_bandwidth * 1e-9) << "\nnvlink_latency_us = "
        << g(o.nvlink_latency_s * 1e6) << "\nrms_rel_error = " << g(o.rms_rel_error) << "\nsamples = " << o.samples
        << "\n";
    }
  }
  if (c.has_gemm_clock) {
    f << "\n[gemm_clock]  # GEMM time / its time with GEMMs only, against the GEMM duty of the sequence ("
      << c.gemm_clock.samples << " samples)\nduty = [";
    for (std::size_t i = 0; i < c.gemm_clock.duty.size(); ++i) f << (i ? ", " : "") << g(c.gemm_clock.duty[i]);
    f << "]\ntime_ratio = [";
    for (std::size_t i = 0; i < c.gemm_clock.time_ratio.size(); ++i) f << (i ? ", " : "") << g(c.gemm_clock.time_ratio[i]);
    f << "]\nsamples = " << c.gemm_clock.samples << "\n";
  }
  if (c.has_gemm_grouped) write_grouped_gemm(f, c.gemm_grouped);
  if (c.has_gemm_grouped_fp8) write_grouped_gemm(f, c.gemm_grouped_fp8, true);
  if (c.has_power) {
    const PowerFit& w = c.power;
    f << "\n[power]  # board power = base_w + k * sm_w * (clock / max_clock_mhz)^exponent with k SMs running GEMMs"
         " (the clock under a power limit)\nlimit_w = "
      << g(w.limit_w) << "\nbase_w = " << g(w.base_w) << "\nsm_w = " << g(w.sm_w) << "\nmax_clock_mhz = "
      << g(w.max_clock_mhz) << "\nmin_clock_mhz = " << g(w.min_clock_mhz) << "\nexponent = " << g(w.exponent)
      << "\nsms = " << w.sms << "\nrms_rel_error = " << g(w.rms_rel_error) << "\nsamples = " << w.samples << "\n";
  }
  if (c.has_slowest_of_n) write_slowest_of_n(f, c.slowest_of_n);
  if (c.has_board_spread) write_board_spread(f, c.board_spread);
  io::write_file(path, f.str(), "the calibration file");   // atomically: a failed write leaves the old file
}

Calibration read_calibration(const std::string& path) {
  toml::table root = parse_file(path);
  Reader top{path, &root, root.source()};
  top.only({"format", "gpu", "gemm", "gemm_fp8", "attention", "attention_fa2", "attention_triton", "memory", "memory_families", "collectives", "gemm_clock",
            "gemm_grouped", "gemm_grouped_fp8", "power", "slowest_of_n", "board_spread"});
  if (top.str("format", "mfusim-calibration-1") != "mfusim-calibration-1")
    fail(path, top.node("format")->source(), "unsupported format '" + top.str("format") + "'");
  Calibration c;
  c.source = path;
  c.gpu_name = top.str("gpu");
  auto gemm = [&](const char* key, GemmFit& fit, std::vector<GemmSample>& table) {
    Reader r = top.sub(key);
    r.only({"peak_tflops", "eff_max", "knee", "overhead_us", "rms_rel_error", "table"});
    fit.peak_flops = r.bounded("peak_tflops", kPeakTflopsBound) * 1e12;
    fit.eff_max = r.bounded("eff_max", kEfficiencyBound);
    fit.knee = r.bounded("knee", kKneeBound);
    fit.overhead_s = r.bounded("overhead_us", kOverheadUsBound) * 1e-6;
    fit.rms_rel_error = r.bounded("rms_rel_error", kRmsBound, false);
    if (fit.peak_flops <= 0) fail(path, r.node("peak_tflops")->source(), "'peak_tflops' must be > 0");
    if (fit.eff_max <= 0 || fit.eff_max > 1.5) fail(path, r.node("eff_max")->source(), "'eff_max' must be in (0, 1.5]");
    if (fit.knee <= 0) fail(path, r.node("knee")->source(), "'knee' must be > 0");
    if (const toml::node* t = r.node("table")) {
      const toml::array* a = t->as_array();
      if (!a) fail(path, t->source(), "'table' must be an array of [m, n, k, microseconds]");
      for (const toml::node& e : *a) {
        const toml::array* row = e.as_array();
        if (!row || row->size() != 4) fail(path, e.source(), "table rows must be [m, n, k, microseconds]");
        GemmSample s;
        auto v = [&](std::size_t i) {
          auto x = (*row)[i].value<double>();
          if (!x || !std::isfinite(*x) || *x <= 0 || *x > (i < 3 ? 1e9 : 1e12))
            fail(path, (*row)[i].source(),
                 "table values must be positive numbers (m, n, k at most 1e9, microseconds at most 1e12)");
          return *x;
        };
        s.m = (long long)v(0); s.n = (long long)v(1); s.k = (long long)v(2); s.seconds = v(3) * 1e-6;
        table.push_back(s);
      }
    }
  };
  if (top.node("gemm")) { gemm("gemm", c.gemm, c.gemm_table); c.has_gemm = true; }
  if (top.node("gemm_fp8")) { gemm("gemm_fp8", c.gemm_fp8, c.gemm_fp8_table); c.has_gemm_fp8 = true; }
  // `programs`: the section may hold the backward's program form (only [attention_triton], calibration.h).
  auto attention = [&](const char* section, AttentionFit& a, bool programs = false) {
    Reader r = top.sub(section);
    std::set<std::string> keys = {"peak_tflops", "hbm_bandwidth_gbs", "flash_fwd_eff", "flash_bwd_eff", "flash_fwd_seq_knee",
                                  "flash_bwd_seq_knee", "materialized_bw_eff", "overhead_us", "rms_rel_error", "form",
                                  "flash_fwd_tile_knee", "flash_bwd_tile_knee", "diagonal_tile_weight"};
    const std::vector<std::string> program_keys = {"bwd_program_overhead_us", "bwd_program_tile_us", "bwd_program_tile_busy_us",
                                                   "bwd_split_overhead_us", "bwd_split_tile_us", "program_sms"};
    if (programs) keys.insert(program_keys.begin(), program_keys.end());
    // The dropout times (calibration.h): fitted for cuDNN's and FlashAttention-2's sections only; a Triton call takes
    // [attention_fa2]'s (cost_model.cpp), so [attention_triton] refuses them.
    const std::vector<std::string> dropout_keys = {"dropout_fwd_ps_per_score", "dropout_bwd_ps_per_score", "dropout_sms",
                                                   "dropout_rms_rel_error"};
    if (!programs) keys.insert(dropout_keys.begin(), dropout_keys.end());
    r.only(keys);
    a.peak_flops = r.bounded("peak_tflops", kPeakTflopsBound) * 1e12;
    a.hbm_bandwidth = r.bounded("hbm_bandwidth_gbs", kBandwidthGbsBound) * 1e9;
    a.flash_fwd_eff = r.bounded("flash_fwd_eff", kEfficiencyBound);
    a.flash_bwd_eff = r.bounded("flash_bwd_eff", kEfficiencyBound);
    a.flash_fwd_seq_knee = r.bounded("flash_fwd_seq_knee", kKneeBound, false);
    a.flash_bwd_seq_knee = r.bounded("flash_bwd_seq_knee", kKneeBound, false);
    a.materialized_bw_eff = r.bounded("materialized_bw_eff", kEfficiencyBound);
    a.overhead_s = r.bounded("overhead_us", kOverheadUsBound) * 1e-6;
    a.rms_rel_error = r.bounded("rms_rel_error", kRmsBound, false);
    if (r.node("form")) {
      const std::string form = r.str("form");
      if (form != "tiles" && form != "seq")
        fail(r.file, r.node("form")->source(), "'form' must be \"tiles\" or \"seq\", not \"" + form + "\"");
      a.tile_form = form == "tiles";
    }
    if (a.tile_form) {
      a.flash_fwd_tile_knee = r.bounded("flash_fwd_tile_knee", kKneeBound, false);
      a.flash_bwd_tile_knee = r.bounded("flash_bwd_tile_knee", kKneeBound, false);
      a.diagonal_tile_weight = r.bounded("diagonal_tile_weight", kDiagonalWeightBound);
    }
    bool any_program = false;
    for (const std::string& k : program_keys) any_program |= programs && r.node(k.c_str()) != nullptr;
    if (any_program) {
      // The backward's program form (calibration.h): all six keys or none.
      a.bwd_program_overhead_s = r.bounded("bwd_program_overhead_us", kOverheadUsBound) * 1e-6;
      a.bwd_program_tile_s = r.bounded("bwd_program_tile_us", kOverheadUsBound) * 1e-6;
      a.bwd_program_tile_busy_s = r.bounded("bwd_program_tile_busy_us", kOverheadUsBound) * 1e-6;
      a.bwd_split_overhead_s = r.bounded("bwd_split_overhead_us", kOverheadUsBound) * 1e-6;
      a.bwd_split_tile_s = r.bounded("bwd_split_tile_us", kOverheadUsBound) * 1e-6;
      const double sms = r.nonneg("program_sms");
      if (!(sms >= 1) || sms > 1e5 || sms != std::floor(sms))
        fail(r.file, r.node("program_sms")->source(), "'program_sms' must be a whole number of SMs, 1 to 100000");
      if (!(a.bwd_program_tile_s > 0) || !(a.bwd_split_tile_s > 0))
        fail(r.file, r.node(a.bwd_program_tile_s > 0 ? "bwd_split_tile_us" : "bwd_program_tile_us")->source(),
             "the backward's program form needs tile times above 0");
      a.program_sms = static_cast<int>(sms);
    }
    bool any_dropout = false;
    for (const std::string& k : dropout_keys) any_dropout |= !programs && r.node(k.c_str()) != nullptr;
    if (any_dropout) {
      // Dropout inside the fused call (calibration.h): the per-score times and the measured GPU's SMs, together.
      a.dropout_fwd_s_per_score = r.bounded("dropout_fwd_ps_per_score", kPerScorePsBound) * 1e-12;
      a.dropout_bwd_s_per_score = r.bounded("dropout_bwd_ps_per_score", kPerScorePsBound) * 1e-12;
      const double sms = r.nonneg("dropout_sms");
      if (!(sms >= 1) || sms > 1e5 || sms != std::floor(sms))
        fail(r.file, r.node("dropout_sms")->source(), "'dropout_sms' must be a whole number of SMs, 1 to 100000");
      a.dropout_sms = static_cast<int>(sms);
      a.dropout_rms_rel_error = r.bounded("dropout_rms_rel_error", kRmsBound, false);
    }
  };
  if (top.node("attention")) { attention("attention", c.attention); c.has_attention = true; }
  if (top.node("attention_fa2")) { attention("attention_fa2", c.attention_fa2); c.has_attention_fa2 = true; }
  if (top.node("attention_triton")) { attention("attention_triton", c.attention_triton, true); c.has_attention_triton = true; }
  if (top.node("memory")) {
    Reader r = top.sub("memory");
    r.only({"achieved_bandwidth_gbs", "launch_overhead_us", "graph_launch_overhead_us", "fixed_overhead_us", "rms_rel_error"});
    auto& m = c.memory;
    m.achieved_bandwidth = r.bounded("achieved_bandwidth_gbs", kBandwidthGbsBound) * 1e9;
    m.launch_overhead_s = r.bounded("launch_overhead_us", kOverheadUsBound) * 1e-6;
    m.graph_launch_overhead_s = r.bounded("graph_launch_overhead_us", kOverheadUsBound, false) * 1e-6;
    m.fixed_overhead_s = r.bounded("fixed_overhead_us", kOverheadUsBound, false) * 1e-6;
    m.rms_rel_error = r.bounded("rms_rel_error", kRmsBound, false);
    c.has_memory = true;
  }
  if (top.node("memory_families")) {
    if (!c.has_memory) fail(path, top.node("memory_families")->source(), "[memory_families] needs a [memory] table");
    Reader r = top.sub("memory_families");
    std::vector<std::string> keys;
    for (int i = 1; i < kMemFamilies; ++i) keys.push_back(std::string(kMemFamilyNames[i]) + "_gbs");
    r.only(std::set<std::string>(keys.begin(), keys.end()));
    for (int i = 1; i < kMemFamilies; ++i) {
      c.memory.family_bandwidth[i] = r.bounded(keys[std::size_t(i - 1)].c_str(), kBandwidthGbsBound, false) * 1e9;
      if (r.node(keys[std::size_t(i - 1)].c_str())) c.memory.family_samples[i] = 1;
    }
  }
  if (top.node("collectives")) {
    Reader r = top.sub("collectives");
    std::set<std::string> keys = {"nvlink_bus_bandwidth_gbs", "nvlink_latency_us", "nic_bus_bandwidth_gbs",
                                  "nic_latency_us", "rms_rel_error"};
    keys.insert(kCollectiveOpNames, kCollectiveOpNames + kCollectiveOps);
    r.only(keys);
    auto& k = c.collectives;
    k.nvlink_bus_bandwidth = r.bounded("nvlink_bus_bandwidth_gbs", kBandwidthGbsBound) * 1e9;
    k.nvlink_latency_s = r.bounded("nvlink_latency_us", kOverheadUsBound) * 1e-6;
    k.nic_bus_bandwidth = r.nonneg("nic_bus_bandwidth_gbs", false) * 1e9;   // 0: not measured
    if (k.nic_bus_bandwidth > 0) r.bounded("nic_bus_bandwidth_gbs", kBandwidthGbsBound);
    k.nic_latency_s = r.bounded("nic_latency_us", kOverheadUsBound, false) * 1e-6;
    k.rms_rel_error = r.bounded("rms_rel_error", kRmsBound, false);
    for (int i = 0; i < kCollectiveOps; ++i) {   // [collectives.<op>]: that operation's own fit
      if (!r.node(kCollectiveOpNames[i])) continue;
      Reader o = r.sub(kCollectiveOpNames[i]);
      o.only({"nvlink_bus_bandwidth_gbs", "nvlink_latency_us", "rms_rel_error", "samples"});
      CollectiveOpFit& of = k.op[i];
      of.nvlink_bus_bandwidth = o.bounded("nvlink_bus_bandwidth_gbs", kBandwidthGbsBound) * 1e9;
      of.nvlink_latency_s = o.bounded("nvlink_latency_us", kOverheadUsBound) * 1e-6;
      of.rms_rel_error = o.bounded("rms_rel_error", kRmsBound, false);
      if (const toml::node* n = o.node("samples")) {
        const auto v = n->value<std::int64_t>();
        if (!n->is_integer() || !v || *v < 1 || *v > 1000000000)
          fail(path, n->source(), "'samples' must be a positive integer");
        of.samples = static_cast<int>(*v);
      }
    }
    c.has_collectives = true;
  }
  if (top.node("gemm_clock")) {
    Reader r = top.sub("gemm_clock");
    r.only({"duty", "time_ratio", "samples"});
    auto arr = [&](const char* key, double lo, double hi, std::vector<double>& out) {
      const toml::node* n = r.node(key);
      if (!n || !n->as_array()) fail(path, n ? n->source() : top.node("gemm_clock")->source(),
                                     std::string("[gemm_clock] needs '") + key + "' as an array of numbers");
      for (const toml::node& e : *n->as_array()) {
        const auto x = e.value<double>();
        if (!x || !std::isfinite(*x) || !(*x > lo) || *x > hi)
          fail(path, e.source(), std::string("'") + key + "' values must be in (" + fmt("%g", lo) + ", " + fmt("%g", hi) + "]");
        out.push_back(*x);
      }
    };
    arr("duty", 0, 1, c.gemm_clock.duty);
    arr("time_ratio", 0, 1.5, c.gemm_clock.time_ratio);
    const toml::node* dn = r.node("duty");
    if (c.gemm_clock.duty.size() != c.gemm_clock.time_ratio.size() || c.gemm_clock.duty.size() < 2)
      fail(path, dn->source(), "'duty' and 'time_ratio' need the same length, at least 2");
    for (std::size_t i = 1; i < c.gemm_clock.duty.size(); ++i)
      if (c.gemm_clock.duty[i] < c.gemm_clock.duty[i - 1] || c.gemm_clock.time_ratio[i] < c.gemm_clock.time_ratio[i - 1])
        fail(path, dn->source(), "'duty' and 'time_ratio' must both be non-decreasing");
    if (const toml::node* n = r.node("samples")) {
      const auto v = n->value<std::int64_t>();
      if (!n->is_integer() || !v || *v < 1 || *v > 1000000) fail(path, n->source(), "'samples' must be a positive integer");
      c.gemm_clock.samples = static_cast<int>(*v);
    }
    c.has_gemm_clock = true;
  }
  if (top.node("gemm_grouped")) read_grouped_gemm(path, top.sub("gemm_grouped"), c);
  if (top.node("gemm_grouped_fp8")) read_grouped_gemm(path, top.sub("gemm_grouped_fp8"), c, true);
  if (top.node("slowest_of_n")) read_slowest_of_n(path, top.sub("slowest_of_n"), c);
  if (top.node("board_spread")) read_board_spread(path, top.sub("board_spread"), c);
  if (top.node("power")) {
    Reader r = top.sub("power");
    r.only({"limit_w", "base_w", "sm_w", "max_clock_mhz", "min_clock_mhz", "exponent", "sms", "rms_rel_error", "samples"});
    PowerFit& w = c.power;
    constexpr CalibrationBound watts{"power (W)", 0, false, 1e5}, mhz{"clock (MHz)", 0, true, 1e5},
        exponent{"exponent", kPowerExponentMin, false, kPowerExponentMax};
    w.limit_w = r.bounded("limit_w", watts);
    w.base_w = r.bounded("base_w", watts);
    w.sm_w = r.bounded("sm_w", watts);
    w.max_clock_mhz = r.bounded("max_clock_mhz", mhz);
    w.min_clock_mhz = r.bounded("min_clock_mhz", mhz);
    w.exponent = r.bounded("exponent", exponent);
    w.rms_rel_error = r.bounded("rms_rel_error", kRmsBound, false);
    auto count = [&](const char* key, int lo, int& out) {
      const toml::node* n = r.node(key);
      const auto v = n ? n->value<std::int64_t>() : std::nullopt;
      if (!n || !n->is_integer() || !v || *v < lo || *v > 1000000)
        fail(path, n ? n->source() : top.node("power")->source(), std::string("[power] needs '") + key + "' as an integer >= " + std::to_string(lo));
      out = static_cast<int>(*v);
    };
    count("sms", 1, w.sms);
    if (w.sms > 100000) fail(path, r.node("sms")->source(), "'sms' must be at most 100000");
    count("samples", 2, w.samples);
    if (!(w.sm_w > 0)) fail(path, r.node("sm_w")->source(), "'sm_w' must be > 0");
    if (!(w.limit_w > w.base_w)) fail(path, r.node("limit_w")->source(), "'limit_w' must be above 'base_w'");
    if (w.min_clock_mhz > w.max_clock_mhz) fail(path, r.node("min_clock_mhz")->source(), "'min_clock_mhz' must be <= 'max_clock_mhz'");
    // The fit must describe its own samples: all the GPU's SMs at its own limit ran at about the lowest clock
    // measured (a hand-edited limit_w or base_w would make every GEMM faster than measured). 0.8 allows a
    // probe whose sweep did not reach all SMs.
    const double own = power_limited_clock_mhz(w, w.limit_w, w.sms);
    if (own < 0.8 * w.min_clock_mhz || own > 1.1 * w.min_clock_mhz)
      fail(path, r.node("limit_w")->source(), "[power] gives " + fmt("%.0f", own) + " MHz at its own limit_w with all " +
                                                  std::to_string(w.sms) + " SMs, far from the lowest clock it was measured at (" +
                                                  fmt("%.0f", w.min_clock_mhz) + " MHz)");
    c.has_power = true;
  }
  return c;
}

double power_limited_clock_mhz(const PowerFit& w, double limit_w, int sms) {
  if (!(w.sm_w > 0) || !(w.exponent > 0) || !(w.max_clock_mhz > 0) || sms < 1) return 0;
  const double headroom = limit_w - w.base_w;
  if (!(headroom > 0)) return 0;
  const double at_max = sms * w.sm_w;   // the SMs' power at the maximum clock
  if (headroom >= at_max) return w.max_clock_mhz;
  return w.max_clock_mhz * std::pow(headroom / at_max, 1.0 / w.exponent);
}

bool power_fit_applies(const PowerFit& w, const HardwareSpec& hw) {
  return hw.power_limit_w > 0 && hw.sms > 0 && hw.sms == w.sms;
}

std::string power_extrapolation_warning(const Calibration* cal, const HardwareSpec& hw) {
  if (!cal || !cal->has_power || !(hw.power_limit_w > 0)) return "";
  if (!power_fit_applies(cal->power, hw))
    return std::abs(hw.power_limit_w - cal->power.limit_w) < 1e-9
               ? ""
               : "power limit " + fmt("%.0f", hw.power_limit_w) + " W not modelled: the calibration's [power] fit is of a GPU with " +
                     std::to_string(cal->power.sms) + " SMs, this profile gives " +
                     (hw.sms > 0 ? std::to_string(hw.sms) : std::string("none")) + " (hardware.sms)";
  // At the limit the calibration was measured at, the curve is not consulted (power_time_scale is 1).
  if (std::abs(hw.power_limit_w - cal->power.limit_w) < 1e-9) return "";
  const double f = power_limited_clock_mhz(cal->power, hw.power_limit_w, hw.sms);
  if (!(f > 0) || f >= cal->power.min_clock_mhz) return "";
  return "power limit " + fmt("%.0f", hw.power_limit_w) + " W: its clock (" + fmt("%.0f", f) +
         " MHz) is below the lowest the calibration measured (" + fmt("%.0f", cal->power.min_clock_mhz) +
         " MHz): the power curve is extrapolated";
}

double power_time_scale(const Calibration* cal, const HardwareSpec& hw) {
  if (!cal || !cal->has_power || !power_fit_applies(cal->power, hw)) return 1.0;
  const PowerFit& w = cal->power;
  if (std::abs(hw.power_limit_w - w.limit_w) < 1e-9) return 1.0;
  const double ref = power_limited_clock_mhz(w, w.limit_w, w.sms), f = power_limited_clock_mhz(w, hw.power_limit_w, hw.sms);
  return ref > 0 && f > 0 ? ref / f : 1.0;
}

double gemm_clock_ratio(const Calibration* cal, double duty) {
  if (!cal || !cal->has_gemm_clock || cal->gemm_clock.duty.empty()) return 1.0;
  const auto& d = cal->gemm_clock.duty;
  const auto& t = cal->gemm_clock.time_ratio;
  if (!(duty > d.front())) return t.front();
  if (duty >= d.back()) return t.back();
  const std::size_t i = static_cast<std::size_t>(std::upper_bound(d.begin(), d.end(), duty) - d.begin());
  const double span = d[i] - d[i - 1];
  return span > 0 ? t[i - 1] + (t[i] - t[i - 1]) * (duty - d[i - 1]) / span : t[i];
}

namespace {
std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
bool has(const std::string& s, const char* w) { return s.find(w) != std::string::npos; }
// The GPU model in a name ("h100", "h200", "h800", "h20", ...): the first token that names one.
std::string gpu_model(const std::string& name) {
  const std::string n = lower(name);
  for (const char* m : {"gb300", "gb200", "b300", "b200", "b100", "h100", "h200", "h800", "h20", "a100", "a800",
                        "mi300x", "mi325x", "mi355x"})
    if (has(n, m)) return m;
  return n;
}
// The part whose measurements a calibration holds: the GPU model, with the H800 as the H100 (the H100 SXM's GH100
// and 80 GB of HBM3 with NVLink and FP64 cut, hardware/h800-sxm.toml: the same for every kernel a calibration
// measures).
std::string measured_part(const std::string& name) {
  const std::string m = gpu_model(name);
  return m == "h800" ? std::string("h100") : m;
}
}  // namespace

std::string gpu_family(const std::string& gpu_name) {
  const std::string m = gpu_model(gpu_name);
  if (m == "h100" || m == "h200" || m == "h800" || m == "h20") return "hopper";
  if (m == "a100" || m == "a800") return "ampere";
  if (m == "b100" || m == "b200" || m == "b300" || m == "gb200" || m == "gb300") return "blackwell";
  if (m == "mi300x" || m == "mi325x" || m == "mi355x") return "cdna3";
  return "";
}

std::string default_calibration_file(const HardwareSpec& hw) {
  // Hopper: the H100's own measured file for the H100 and the H800 (run 54), the H200's for the H200 and the H20.
  const std::string m = measured_part(hw.name);
  if (m == "h100") return "hardware/calibration/h100.toml";
  if (gpu_family(hw.name) == "hopper") return "hardware/calibration/h200.toml";
  // Blackwell: the published measured tables of each part (validation/xla, validation/cudnn_sdpa), where one
  // exists: the B200's GEMMs and attention, the GB200's and GB300's attention; each with the H200's memory fits
  // carried by the same kernels' published rates (validation/cudnn_norms).
  if (m == "b200") return "hardware/calibration/b200-xla.toml";
  if (m == "gb200") return "hardware/calibration/gb200-cudnn.toml";
  if (m == "gb300") return "hardware/calibration/gb300-cudnn.toml";
  return "";
}

std::string calibration_transfer_note(const Calibration& cal, const HardwareSpec& hw) {
  if (cal.gpu_name.empty() || measured_part(cal.gpu_name) == measured_part(hw.name)) return "";
  const std::string from = gpu_family(cal.gpu_name), to = gpu_family(hw.name);
  if (!from.empty() && from == to)
    return "calibration measured on " + cal.gpu_name + ", applied to " + hw.name +
           " as fractions of its own peaks and HBM bandwidth";
  return "calibration measured on " + cal.gpu_name + " (another architecture than " + hw.name +
         "): its efficiencies are applied to this GPU's peaks unverified";
}


}  // namespace mfusim::hardware
