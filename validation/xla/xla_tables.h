#pragma once
// OpenXLA's published GPU performance tables (validation/xla/SOURCES.md) against the cost model.
// Header-only so that the `validation_xla` program and the doctest
// (tests/validation/test_xla_tables.cpp) run the very same comparison.
//
// matmul.csv: XLA's measured batched GEMMs b x [m, k] x [k, n] (b 1, 2, 4; m, n, k 256..4096),
// achieved FLOP/s = 2 b m n k / (median CUPTI kernel time), H100 (sm_90) and B200 (sm_100_B200).
// collectives.csv: XLA's measured collectives inside one 8-GPU node, throughput = the swept tensor
// size / the executable's median time (all-gather: the gathered output; reduce-scatter: the input;
// all-reduce and all-to-all: the buffer), which is the nccl-tests size S collective_time takes.
//
// A GEMM row is priced as one Kernel of m' = b x m, n, k (the same FLOPs; b = 1 rows are the exact
// measured shape) by a CostModel of the profile's hardware, precision and calibration, execution
// time without the launch (the kernel time XLA's CUPTI tracer records). ratio = model time /
// measured time: below 1 the model is faster than the measurement.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/loader.h"
#include "hardware/calibration.h"
#include "hardware/collectives.h"
#include "hardware/cost_model.h"
#include "hardware/kernel.h"

namespace mfusim::validation::xla {

struct GemmRow {
  std::string gpu, revision, dtype;   // "H100" / "B200"; "71feedd" (current) ...; "bf16" / "fp8_e4m3"
  long long b = 0, m = 0, n = 0, k = 0;
  double flops_per_s = 0;
  double flops() const { return 2.0 * static_cast<double>(b) * m * n * k; }
  double seconds() const { return flops() / flops_per_s; }
};

struct CollectiveRow {
  std::string gpu, op;   // op as XLA names it: all-reduce, all-gather, reduce-scatter, all-to-all
  int groups = 0, group_size = 0;
  double bytes = 0, throughput = 0;   // bytes: nccl-tests S; throughput: bytes / second as published
  double seconds() const { return bytes / throughput; }
};

inline std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string f;
  while (std::getline(ss, f, ',')) out.push_back(f);
  return out;
}

inline double number(const std::string& path, int line, const std::string& s) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || !std::isfinite(v) || v <= 0)
    throw std::runtime_error(path + ":" + std::to_string(line) + ":1: error: expected a positive number, got '" + s + "'");
  return v;
}

// Rows of a CSV with the given header; each with `columns` fields.
inline std::vector<std::pair<int, std::vector<std::string>>> read_csv(const std::string& path, const std::string& header) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ":1:1: error: cannot open");
  std::string line;
  if (!std::getline(in, line) || line != header)
    throw std::runtime_error(path + ":1:1: error: expected the header '" + header + "'");
  const std::size_t columns = split(header).size();
  std::vector<std::pair<int, std::vector<std::string>>> rows;
  int no = 1;
  while (std::getline(in, line)) {
    ++no;
    if (line.empty()) continue;
    auto f = split(line);
    if (f.size() != columns)
      throw std::runtime_error(path + ":" + std::to_string(no) + ":1: error: expected " + std::to_string(columns) +
                               " fields, got " + std::to_string(f.size()));
    rows.emplace_back(no, std::move(f));
  }
  return rows;
}

inline std::vector<GemmRow> read_matmul(const std::string& path) {
  std::vector<GemmRow> out;
  for (auto& [no, f] : read_csv(path, "gpu,revision,b,m,n,k,dtype,flops_per_s")) {
    GemmRow r;
    r.gpu = f[0];
    r.revision = f[1];
    r.b = static_cast<long long>(number(path, no, f[2]));
    r.m = static_cast<long long>(number(path, no, f[3]));
    r.n = static_cast<long long>(number(path, no, f[4]));
    r.k = static_cast<long long>(number(path, no, f[5]));
    r.dtype = f[6];
    r.flops_per_s = number(path, no, f[7]);
    if (r.dtype != "bf16" && r.dtype != "fp8_e4m3")
      throw std::runtime_error(path + ":" + std::to_string(no) + ":1: error: unknown dtype '" + r.dtype + "'");
    out.push_back(r);
  }
  return out;
}

// One row of cuDNN frontend's published SDPA training benchmark (validation/cudnn_sdpa, SOURCES.md): one
// attention shape and backend, its forward and backward rates as published (TFLOP/s on the benchmark's count,
// 4 b h_q s_q s_kv d, halved when causal, the backward 2.5 x: the count calibrate's fit divides by).
struct SdpaRow {
  std::string backend;
  long long batch = 0, seq_q = 0, seq_kv = 0, heads = 0, kv_heads = 0, head_dim = 0;
  bool causal = true;
  double fwd_tflops = 0, bwd_tflops = 0;   // 0: the backend did not run the shape
  double flops(bool bwd) const {
    return 4.0 * static_cast<double>(batch) * heads * seq_q * seq_kv * head_dim * (causal ? 0.5 : 1.0) * (bwd ? 2.5 : 1.0);
  }
  double seconds(bool bwd) const { return flops(bwd) / ((bwd ? bwd_tflops : fwd_tflops) * 1e12); }
};

inline std::vector<SdpaRow> read_sdpa(const std::string& path) {
  std::vector<SdpaRow> out;
  for (auto& [no, f] : read_csv(path, "batch_size,q_seqlen,kv_seqlen,num_q_heads,num_kv_heads,head_dim,is_causal,backend,"
                                      "forward_time,backward_time,fwd_tflops_per_sec,bwd_tflops_per_sec")) {
    SdpaRow r;
    r.batch = static_cast<long long>(number(path, no, f[0]));
    r.seq_q = static_cast<long long>(number(path, no, f[1]));
    r.seq_kv = static_cast<long long>(number(path, no, f[2]));
    r.heads = static_cast<long long>(number(path, no, f[3]));
    r.kv_heads = static_cast<long long>(number(path, no, f[4]));
    r.head_dim = static_cast<long long>(number(path, no, f[5]));
    if (f[6] != "True" && f[6] != "False")
      throw std::runtime_error(path + ":" + std::to_string(no) + ":1: error: is_causal must be True or False, got '" + f[6] + "'");
    r.causal = f[6] == "True";
    r.backend = f[7];
    // A shape the backend could not run is published as time inf, rate 0.000.
    if (f[8] != "inf") r.fwd_tflops = number(path, no, f[10]);
    if (f[9] != "inf") r.bwd_tflops = number(path, no, f[11]);
    out.push_back(r);
  }
  return out;
}

// The published table of cuDNN's SDPA for a GPU (validation/cudnn_sdpa/<gpu>_bf16.csv) and how its times were
// taken (SOURCES.md): `device_timed` when they are the kernels' own device times (the GB200 and GB300 tables:
// torch profiler, commit d48a60e), not when each is one call between CUDA events after a sleep, with the host's
// dispatch in it (the B200 table, bb37575; run 51's per_call.csv).
struct SdpaTable {
  std::string path;   // relative to the source tree; empty: no table for the GPU
  bool device_timed = false;
};
inline SdpaTable sdpa_table_of(const std::string& gpu) {
  static const std::map<std::string, SdpaTable> table = {{"B200", {"validation/cudnn_sdpa/b200_bf16.csv", false}},
                                                         {"GB200", {"validation/cudnn_sdpa/gb200_bf16.csv", true}},
                                                         {"GB300", {"validation/cudnn_sdpa/gb300_bf16.csv", true}}};
  const auto it = table.find(gpu);
  return it == table.end() ? SdpaTable{} : it->second;
}

// cuDNN's fused attention in a table: PyTorch's CUDNN_ATTENTION backend or cuDNN frontend's own call (bf16).
inline bool is_cudnn_bf16(const std::string& backend) { return backend == "pyt_cudnn" || backend == "cudnn_fe"; }
// FlashAttention-2 as PyTorch's SDPA builds it (SDPBackend.FLASH_ATTENTION), in every table: the kernel the
// H200's [attention_fa2] measured (run 31).
inline bool is_pytorch_fa2(const std::string& backend) { return backend == "pyt_flash_attention"; }
// The probe's impl of a table row: "cudnn_fused", "flash" (FlashAttention-2), or "" (not written).
inline std::string probe_impl(const std::string& backend) {
  return is_cudnn_bf16(backend) ? "cudnn_fused" : is_pytorch_fa2(backend) ? "flash" : "";
}

inline std::vector<CollectiveRow> read_collectives(const std::string& path) {
  std::vector<CollectiveRow> out;
  for (auto& [no, f] : read_csv(path, "gpu,op,groups,group_size,dtype,tensor_bytes,throughput_bytes_per_s")) {
    CollectiveRow r;
    r.gpu = f[0];
    r.op = f[1];
    r.groups = static_cast<int>(number(path, no, f[2]));
    r.group_size = static_cast<int>(number(path, no, f[3]));
    r.bytes = number(path, no, f[5]);
    r.throughput = number(path, no, f[6]);
    out.push_back(r);
  }
  return out;
}

inline hardware::Collective collective_of(const std::string& op) {
  if (op == "all-reduce") return hardware::Collective::all_reduce;
  if (op == "all-gather") return hardware::Collective::all_gather;
  if (op == "reduce-scatter") return hardware::Collective::reduce_scatter;
  if (op == "all-to-all") return hardware::Collective::all_to_all;
  throw std::runtime_error("unknown collective '" + op + "'");
}

// nccl-tests bus bandwidth of a measured time (the factor collective_time's ring model uses).
inline double bus_factor(const std::string& op, int n) {
  if (op == "all-reduce") return 2.0 * (n - 1) / n;
  return static_cast<double>(n - 1) / n;
}

// A hardware profile with an optional calibration, as validate_modern's profiles build them.
struct Profile {
  std::string name;
  hardware::HardwareSpec hw;
  std::optional<hardware::Calibration> cal;
  std::string cal_path;
  const hardware::Calibration* calibration() const { return cal ? &*cal : nullptr; }
};

inline std::string source_path(const std::string& rel) { return std::string(MFUSIM_SOURCE_DIR) + "/" + rel; }

// The data rows of a CSV file under the source tree (its header line skipped), each split at commas (no quoted
// fields); a row with another number of fields than `fields` is an error naming the file and line.
inline std::vector<std::vector<std::string>> csv_rows(const std::string& rel, std::size_t fields) {
  const std::string path = source_path(rel);
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ":1:1: error: cannot read the file");
  std::vector<std::vector<std::string>> rows;
  std::string line;
  std::getline(in, line);
  for (int n = 2; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    rows.push_back(split(line));
    if (rows.back().size() != fields)
      throw std::runtime_error(path + ":" + std::to_string(n) + ":1: error: " + std::to_string(rows.back().size()) +
                               " fields, expected " + std::to_string(fields));
  }
  return rows;
}

inline hardware::HardwareSpec hardware_of(const std::string& gpu) {
  static const std::map<std::string, std::string> file = {
      {"H100", "h100-sxm"}, {"H200", "h200"}, {"B200", "b200"}, {"GB200", "gb200-nvl72"}, {"GB300", "gb300-nvl72"}};
  const auto it = file.find(gpu);
  if (it == file.end()) throw std::runtime_error("no hardware profile for " + gpu);
  hardware::HardwareSpec hw = config::load_hardware(source_path("hardware/" + it->second + ".toml"));
  // XLA's and cuDNN frontend's tables time isolated calls at the unloaded clock: they are compared with (and
  // fitted as) the part's curves without its rates at a training step's clock (docs/cost-model.md §2h).
  hw.gemm_sustained_eff_bf16 = hw.gemm_sustained_eff_fp8 = hw.attention_sustained_ratio = 0;
  return hw;
}

// "datasheet": no calibration. "calibrated": the file `run` (and validate_modern's calibrated
// profile) picks for the GPU when a scenario names none (hardware::default_calibration_file);
// none for a GPU without one. `file`: a named calibration instead.
inline Profile make_profile(const std::string& gpu, const std::string& name, const std::string& file = "") {
  Profile p;
  p.name = name;
  p.hw = hardware_of(gpu);
  std::string rel = file;
  if (name == "calibrated" && rel.empty()) rel = hardware::default_calibration_file(p.hw);
  if (name != "datasheet" && !rel.empty()) {
    p.cal_path = rel;
    p.cal = hardware::read_calibration(source_path(rel));
  }
  return p;
}

// The cost model's execution time of a measured GEMM (no launch overhead).
inline double model_seconds(const Profile& p, const GemmRow& r) {
  const hardware::Precision prec = r.dtype == "fp8_e4m3" ? hardware::Precision::fp8 : hardware::Precision::bf16;
  const hardware::CostModel cost(p.hw, prec, p.calibration());
  hardware::Kernel g;
  g.kind = hardware::KernelKind::gemm;
  g.name = "xla_gemm";
  g.m = r.b * r.m;
  g.n = r.n;
  g.k = r.k;
  g.count = 1;
  g.flops = r.flops();
  return cost.time(g) - cost.launch_time(g);
}

inline double model_seconds(const Profile& p, const CollectiveRow& r) {
  hardware::Group g;
  g.size = r.group_size;
  g.domains = 1;
  g.per_domain = r.group_size;
  return hardware::collective_time(collective_of(r.op), r.bytes, g, p.hw, hardware::AlgoChoice::auto_, p.calibration())
      .seconds;
}

struct RatioSummary {
  int n = 0;
  double median = 0, geomean = 0, min = 0, max = 0;
  double time_ratio = 0;   // sum of model times / sum of measured times (weights the long shapes)
};

inline RatioSummary summarise(const std::vector<double>& model, const std::vector<double>& measured) {
  RatioSummary s;
  s.n = static_cast<int>(model.size());
  if (s.n == 0) return s;
  std::vector<double> r;
  double lsum = 0, tm = 0, tx = 0;
  for (std::size_t i = 0; i < model.size(); ++i) {
    r.push_back(model[i] / measured[i]);
    lsum += std::log(r.back());
    tm += model[i];
    tx += measured[i];
  }
  std::sort(r.begin(), r.end());
  s.median = r.size() % 2 ? r[r.size() / 2] : 0.5 * (r[r.size() / 2 - 1] + r[r.size() / 2]);
  s.geomean = std::exp(lsum / s.n);
  s.min = r.front();
  s.max = r.back();
  s.time_ratio = tm / tx;
  return s;
}

// The subsets the summary reports: every shape, b = 1 (the exact measured shape), and the
// training-size ones (b = 1, m, n, k >= 2048; the measured FLOP/s saturates there).
enum class Subset { all, single, large };
inline bool in_subset(const GemmRow& r, Subset s) {
  if (s == Subset::all) return true;
  if (r.b != 1) return false;
  return s == Subset::single || (r.m >= 2048 && r.n >= 2048 && r.k >= 2048);
}
inline const char* to_string(Subset s) {
  return s == Subset::all ? "all (b x m priced as one GEMM)" : s == Subset::single ? "b = 1" : "b = 1, m,n,k >= 2048";
}

inline RatioSummary gemm_summary(const Profile& p, const std::vector<GemmRow>& rows, const std::string& gpu,
                                 const std::string& dtype, const std::string& revision, Subset subset) {
  std::vector<double> model, measured;
  for (const GemmRow& r : rows) {
    if (r.gpu != gpu || r.dtype != dtype || r.revision != revision || !in_subset(r, subset)) continue;
    model.push_back(model_seconds(p, r));
    measured.push_back(r.seconds());
  }
  return summarise(model, measured);
}

// Large messages (>= 256 MiB: the alpha-beta line's bandwidth term; below it XLA's per-execution
// overhead, tens of microseconds at 1 KiB, dominates the published time).
inline RatioSummary collective_summary(const Profile& p, const std::vector<CollectiveRow>& rows, const std::string& gpu,
                                       const std::string& op, int group_size, double min_bytes = 256.0 * (1 << 20)) {
  std::vector<double> model, measured;
  for (const CollectiveRow& r : rows) {
    if (r.gpu != gpu || r.op != op || r.group_size != group_size || r.bytes < min_bytes) continue;
    model.push_back(model_seconds(p, r));
    measured.push_back(r.seconds());
  }
  return summarise(model, measured);
}

// The table as a probe output (probe/ TOML, "mfusim-probe-1"): one [[gemm]] sample per measured GEMM of
// `gpu` (revision 71feedd, bf16 and fp8_e4m3), a batched one as m' = b x m as it is priced above; and one
// [[attention]] sample per pass of each cuDNN bf16 and PyTorch FlashAttention-2 row of `sdpa` (cuDNN frontend's
// published table for the GPU, validation/cudnn_sdpa), fitted in calibrate's per-call (seq) form. A table of
// device times (`device_timed`) is written whole, its intercept the kernels' own; one of calls timed with the
// host's dispatch leaves out the host-bound calls and is fitted without the intercept (attention_intercept = false).
inline void write_probe(const std::vector<GemmRow>& rows, const std::string& gpu, const std::string& path,
                        const std::vector<SdpaRow>& sdpa = {}, bool device_timed = false) {
  std::ofstream f(path);
  if (!f) throw std::runtime_error(path + ": error: cannot write");
  f << "# Published " << gpu << " measurements as a probe output: OpenXLA's GEMMs (validation/xla/matmul.csv, SOURCES.md)"
    << (sdpa.empty() ? "" : " and cuDNN frontend's SDPA training benchmark (validation/cudnn_sdpa, SOURCES.md)") << ";\n"
    << "# written by validation_xla --fit. Fit with: mfusim calibrate " << path << " --out FILE\n"
    << "format = \"mfusim-probe-1\"\n\n[provenance]\n"
    << "gpu = \"" << hardware_of(gpu).name << "\"\n";
  const bool gemms = std::any_of(rows.begin(), rows.end(), [&](const GemmRow& r) { return r.gpu == gpu && r.revision == "71feedd"; });
  if (gemms)
    f << "source = \"openxla/xla xla/service/gpu/model/matmul_interpolator_data.h @71feeddf7cc3c9c7878eee18ea43c983631e6e84\"\n"
      << "timing = \"XLA matmul_perf_table_gen: 1 warm-up, 10 runs, median CUPTI kernel time; XLA-autotuned kernel\"\n"
      << "gemm_layout = \"lhs[b,m,k] x rhs[b,k,n] -> [b,m,n]; batched rows as m = b x m\"\n";
  if (!sdpa.empty()) {
    f << "attention_source = \"NVIDIA/cudnn-frontend benchmark/sdpa_benchmark_training/artifacts (validation/cudnn_sdpa/SOURCES.md)\"\n";
    if (device_timed)
      f << "attention_timing = \"torch profiler: the kernels' device time, 30 calls, median of calls 5-29, L2 flushed\"\n"
        << "attention_device_timed = true\n";
    else
      f << "attention_timing = \"5 warm-up, 10 calls, median; each call alone between CUDA events after a sleep\"\n"
        << "attention_intercept = false\n";
  }
  char buf[64];
  for (const GemmRow& r : rows) {
    if (r.gpu != gpu || r.revision != "71feedd") continue;
    std::snprintf(buf, sizeof buf, "%.6e", r.seconds());
    f << "\n[[gemm]]\nlabel = \"xla b=" << r.b << "\"\ndtype = \"" << r.dtype << "\"\nm = " << r.b * r.m << "\nn = " << r.n
      << "\nk = " << r.k << "\nseconds = " << buf << "\n";
  }
  // In a table of host-timed calls, calls under 3 x the shortest of their kernel and pass are the host's dispatch
  // (a 512-token forward takes 102 us through PyTorch on the B200, against 19-21 us of kernel on the GB200 and
  // GB300): left out, as calibrate leaves out such back-to-back samples (run 22).
  std::map<std::pair<std::string, bool>, double> shortest;   // (impl, backward) -> shortest call
  for (const SdpaRow& r : device_timed ? std::vector<SdpaRow>{} : sdpa)
    for (const bool bwd : {false, true})
      if (const std::string impl = probe_impl(r.backend); !impl.empty() && (bwd ? r.bwd_tflops : r.fwd_tflops) > 0) {
        auto [it, fresh] = shortest.emplace(std::make_pair(impl, bwd), r.seconds(bwd));
        if (!fresh) it->second = std::min(it->second, r.seconds(bwd));
      }
  for (const SdpaRow& r : sdpa) {
    const std::string impl = probe_impl(r.backend);
    if (impl.empty()) continue;
    for (const bool bwd : {false, true}) {
      if (!((bwd ? r.bwd_tflops : r.fwd_tflops) > 0) || (!device_timed && r.seconds(bwd) < 3 * shortest.at({impl, bwd})))
        continue;
      std::snprintf(buf, sizeof buf, "%.6e", r.seconds(bwd));
      f << "\n[[attention]]\nimpl = \"" << impl << "\"\nsource = \"cuDNN frontend sdpa_benchmark_training, backend " << r.backend
        << "\"\npass = \"" << (bwd ? "bwd" : "fwd") << "\"\nbatch = " << r.batch << "\nheads = " << r.heads
        << "\nkv_heads = " << r.kv_heads << "\nseq = " << r.seq_q << "\nseq_kv = " << r.seq_kv << "\nhead_dim = " << r.head_dim
        << "\ncausal = " << (r.causal ? "true" : "false") << "\nseconds = " << buf << "\n";
    }
  }
  if (!f) throw std::runtime_error(path + ": error: write failed");
}

// cuDNN frontend's published normalisation benchmark (validation/cudnn_norms, SOURCES.md there): the same
// RMSNorm / LayerNorm calls (cuDNN, PyTorch eager and torch.compile kernels, bf16) timed on an H200, a GB200 and a
// GB300 with one software stack (cuDNN 9.19.1), each call's kernels from HBM (the L2 flushed before each).
struct NormRow {
  std::string name, backend;
  double n = 0, c = 0;              // rows (batch x tokens) and hidden size
  double tensor_bytes = 0;          // N x C bf16 elements: the size of the input, the output and each gradient
  double fwd_gbps = 0, bwd_gbps = 0;
};

inline std::vector<NormRow> read_norms(const std::string& table) {   // "h200", "gb200", "gb300"
  std::vector<NormRow> out;
  const std::string rel = "validation/cudnn_norms/" + table + ".csv";
  for (const auto& f : csv_rows(rel, 13)) {
    if (f[4] != "bfloat16") continue;
    NormRow r;
    r.name = f[1];
    r.backend = f[3];
    r.n = std::stod(f[5]);
    r.c = std::stod(f[6]);
    r.tensor_bytes = 2.0 * r.n * r.c;
    r.fwd_gbps = std::stod(f[10]);
    r.bwd_gbps = std::stod(f[11]);
    out.push_back(r);
  }
  return out;
}

// The published table a GPU's memory-bound rate is carried by: its own; the B200 the GB200's (the same die and
// HBM3e stacks; no B200 table is published: an assumption, carried as the fraction of each part's datasheet
// bandwidth, the B200 profile's 7.7 TB/s against the GB200's 8; the air-cooled B200 runs at 1,000 W against
// 1,200 W, which a memory-bound kernel's rate depends on little); "" for any other GPU (its own measurement or
// the datasheet's bandwidth applies).
inline std::string norm_table_of(const std::string& gpu) {
  if (gpu == "GB200" || gpu == "B200") return "gb200";
  if (gpu == "GB300") return "gb300";
  return "";
}
inline std::string norm_table_gpu(const std::string& table) { return table == "gb300" ? "GB300" : "GB200"; }

// Calls whose tensors are at least this large give the ratio: the tables' largest (134 MB), where the call's
// fixed time is about a tenth of it or less on every GPU (cuDNN's and torch.compile's a few percent, PyTorch's
// eager backward ~12%), so that the ratio is nearly of the bandwidths. A fit of time = fixed + bytes / bandwidth
// per GPU, backend and pass over every size instead gives ratios 4% higher (docs/cost-model.md §1).
constexpr double kNormRatioMinBytes = 100e6;

// The GPU's achieved HBM bandwidth over the H200's for the same kernels: the geometric mean, over the calls of
// both tables at kNormRatioMinBytes or more (every backend), of the forward and backward rate ratios. 0: no table.
inline double norm_bandwidth_ratio(const std::string& gpu, int* pairs = nullptr) {
  const std::string table = norm_table_of(gpu);
  if (table.empty()) return 0;
  const auto h200 = read_norms("h200"), other = read_norms(table);
  double logs = 0;
  int n = 0;
  for (const NormRow& a : h200) {
    if (a.tensor_bytes < kNormRatioMinBytes) continue;
    for (const NormRow& b : other) {
      if (b.name != a.name || b.backend != a.backend || b.n != a.n || b.c != a.c) continue;
      if (!(a.fwd_gbps > 0 && b.fwd_gbps > 0 && a.bwd_gbps > 0 && b.bwd_gbps > 0)) continue;
      logs += std::log(b.fwd_gbps / a.fwd_gbps) + std::log(b.bwd_gbps / a.bwd_gbps);
      n += 2;
    }
  }
  if (pairs) *pairs = n;
  if (n == 0) throw std::runtime_error(source_path("validation/cudnn_norms/" + table + ".csv") + ":1:1: error: no call shared with the H200's table");
  return std::exp(logs / n);
}

// The shipped H200 calibration's memory-bound fits (the copy fit and the eager kernel families, measured by the
// probe) carried to the GPU by norm_bandwidth_ratio (times the GPU's datasheet bandwidth over its table GPU's,
// 1 but for the B200): its memory section where it has no measurement of its own. The per-launch host costs stay
// the GPU profile's (left 0: a property of the host, not of HBM); the top-k's rate, bound by the SMs, stays the
// H200's (the cost model scales it by the profile's `sms` where one is given; the Blackwell profiles give none).
// No fit is made here: the fixed time and the rms error are left 0.
inline std::optional<hardware::MemoryFit> carried_memory(const std::string& gpu) {
  const double ratio = norm_bandwidth_ratio(gpu);
  if (!(ratio > 0)) return std::nullopt;
  const std::string from = norm_table_gpu(norm_table_of(gpu));
  const double own_hbm = hardware_of(gpu).hbm_bandwidth, from_hbm = hardware_of(from).hbm_bandwidth;
  const double r = ratio * own_hbm / from_hbm;
  const auto h200 = hardware::read_calibration(source_path("hardware/calibration/h200.toml"));
  if (!h200.has_memory) throw std::runtime_error(source_path("hardware/calibration/h200.toml") + ":1:1: error: no [memory] section");
  hardware::MemoryFit m = h200.memory;
  m.achieved_bandwidth *= r;
  m.launch_overhead_s = m.graph_launch_overhead_s = 0;
  m.fixed_overhead_s = m.rms_rel_error = 0;
  char note[320];
  std::snprintf(note, sizeof note,
                "carried: hardware/calibration/h200.toml's fits x %.4f, the same kernels' rate on the %s over the "
                "H200's in cuDNN frontend's norm benchmark (validation/cudnn_norms)",
                ratio, from.c_str());
  m.note = note;
  if (r != ratio) {
    std::snprintf(note, sizeof note, ", x %.0f / %.0f GB/s (this GPU's datasheet bandwidth over the %s's)",
                  own_hbm * 1e-9, from_hbm * 1e-9, from.c_str());
    m.note += note;
  }
  for (int i = 1; i < hardware::kMemFamilies; ++i) {
    if (i != static_cast<int>(hardware::MemFamily::topk)) m.family_bandwidth[i] *= r;
    m.family_samples[i] = 0;   // carried, not fitted here
    m.family_rms_rel_error[i] = 0;
  }
  return m;
}

// `mfusim calibrate`'s fit (hardware::fit_probe) of such a probe, with each fit re-expressed against the GPU's
// datasheet dense peak: fit_probe knows the Hopper and Blackwell peaks and uses the best measured rate for any
// other GPU, while the cost model multiplies the efficiencies by the hardware profile's own peak.
// peak x eff_max is what the fit determines, so eff_max' = eff_max x peak_fit / peak_datasheet gives the
// same curve, and the exact-shape table is then used as measured (table_seconds: equal peaks).
inline hardware::Calibration fit_from_probe(const std::string& probe, const std::string& gpu, std::string* report) {
  hardware::Calibration cal = hardware::fit_probe(probe, report);
  const hardware::HardwareSpec hw = hardware_of(gpu);
  auto rebase = [](hardware::GemmFit& f, double peak) {
    if (!(f.peak_flops > 0) || !(peak > 0)) return;
    f.eff_max *= f.peak_flops / peak;
    f.peak_flops = peak;
  };
  if (cal.has_gemm) rebase(cal.gemm, hw.peak_flops_bf16);
  if (cal.has_gemm_fp8) rebase(cal.gemm_fp8, hw.peak_flops_fp8);
  // Attention efficiencies are fractions of the fit's peak, applied by the cost model to the profile's bf16 peak.
  auto rebase_attention = [&](hardware::AttentionFit& a) {
    if (!(a.peak_flops > 0) || !(hw.peak_flops_bf16 > 0)) return;
    const double r = a.peak_flops / hw.peak_flops_bf16;
    a.flash_fwd_eff *= r;
    a.flash_bwd_eff *= r;
    a.peak_flops = hw.peak_flops_bf16;
  };
  if (cal.has_attention) rebase_attention(cal.attention);
  if (cal.has_attention_fa2) rebase_attention(cal.attention_fa2);
  // Memory-bound kernels: the H200's fits carried by the published same-kernel ratio (norm_bandwidth_ratio),
  // where the probe output has no memory samples of its own (the Blackwell tables have none).
  if (!cal.has_memory)
    if (const auto m = carried_memory(gpu)) {
      cal.memory = *m;
      cal.has_memory = true;
    }
  return cal;
}

}  // namespace mfusim::validation::xla
