// validation_cp_ring [RESULTS.csv] [--calibration FILE] [--hardware FILE] [--flash2] [--cases run21|nemols]
// --flash2: every call priced as FlashAttention-2 (the calibration's [attention_fa2], features.attention =
// "flash2"), as run 47 measured it; --cases nemols: the shapes of NeMo's H100 long-sequence rows (Llama 2 7B,
// 4k-1M tokens, heads per rank 32/tp, validation/modern), cp 1 rows as the whole causal call only.
// Context parallelism's attention compute as Transformer Engine's ring runs it, run 21
// (validation/runs/run21-cp-ring): the cost model's price of each ring-step call (the causal diagonal,
// the lower and upper halves, at their own shapes) and of the whole sequence's call, beside the measured
// medians when RESULTS.csv is given; "ring" is the measured ring's calls (the diagonal, then per step the
// slower half, as the synchronous ring runs) against the simulator's ring (layer::cp_step_times: the
// same calls at their own shapes, with the merge passes' device time), "rank_whole" the rank's attention
// priced as one call of S/cp queries on S keys (the simulator before the ring lowering).
// The merge passes are left out of the measured ring: their measured time is the host's dispatch of a
// Python call (README there), their device time a few microseconds.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "config/loader.h"
#include "hardware/calibration.h"
#include "hardware/cost_model.h"
#include "hardware/kernel.h"
#include "layer/pass_cost.h"
#include "models/kernel_builders.h"

using namespace mfusim;

namespace {
struct Case {
  const char* name;
  int b, H, Hk;
  long S;
  int cp;
};
// The same cases as cp_ring.py (validation/modern rows' CP layouts, per-rank heads).
const Case kCases[] = {
    {"llama3-8b tp1 cp2", 1, 32, 8, 8192, 2},       {"llama3-8b tp1 cp4", 1, 32, 8, 8192, 4},
    {"llama3-70b tp4 cp2", 1, 16, 2, 8192, 2},      {"llama3.1-405b tp8 cp2", 1, 16, 1, 8192, 2},
    {"llama3.1-405b tp4 cp2", 1, 32, 2, 8192, 2},   {"llama2-7b tp2 cp2 32k", 1, 16, 16, 32768, 2},
    {"llama2-7b tp4 cp4 128k", 1, 8, 8, 131072, 4},
};
// NeMo's H100 long-sequence rows (validation/modern/rows.csv NEMOLS-H100-LLAMA2_7B-*): heads per rank 32 / tp,
// MHA; the same list as validation/runs/run47-fa2-ring/fa2_ring.py.
const Case kNemols[] = {
    {"nemols 4k tp1", 1, 32, 32, 4096, 1},         {"nemols 8k tp1", 1, 32, 32, 8192, 1},
    {"nemols 16k tp2", 1, 16, 16, 16384, 1},       {"nemols 32k tp2 cp2", 1, 16, 16, 32768, 2},
    {"nemols 64k tp4 cp2", 1, 8, 8, 65536, 2},     {"nemols 128k tp4 cp4", 1, 8, 8, 131072, 4},
    {"nemols 256k tp4 cp8", 1, 8, 8, 262144, 8},   {"nemols 512k tp8 cp16", 1, 4, 4, 524288, 16},
    {"nemols 1m tp8 cp32", 1, 4, 4, 1048576, 32},
};

hardware::Kernel attn(config::Attention a, bool bwd, const Case& c, double sq, double skv, bool causal) {
  const models::detail::AttnShape s{static_cast<double>(c.b), static_cast<double>(c.H), static_cast<double>(c.Hk), sq, skv,
                                    128.0, 128.0};
  std::vector<hardware::Kernel> f, b;
  models::detail::attention_kernels(models::ModelSpec{}, s, 2, a, f, b);
  hardware::Kernel k = bwd ? b.front() : f.front();
  k.causal = causal;
  return k;
}
}  // namespace

int main(int argc, char** argv) {
  const std::string src = MFUSIM_SOURCE_DIR;
  std::string cal_path = src + "/hardware/calibration/h200.toml", hw_path = src + "/hardware/h200.toml", csv;
  bool nemols = false;
  config::Attention variant = config::Attention::flash;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--calibration" || a == "--hardware") && i + 1 < argc) {
      (a == "--calibration" ? cal_path : hw_path) = argv[++i];
    } else if (a == "--flash2") {
      variant = config::Attention::flash2;
    } else if (a == "--cases" && i + 1 < argc && (std::string(argv[i + 1]) == "run21" || std::string(argv[i + 1]) == "nemols")) {
      nemols = std::string(argv[++i]) == "nemols";
    } else if (a.rfind("--", 0) == 0) {
      std::fprintf(stderr, "usage: %s [RESULTS.csv] [--calibration FILE] [--hardware FILE] [--flash2] [--cases run21|nemols]\n",
                   argv[0]);
      return 2;
    } else {
      csv = a;
    }
  }
  try {
    const hardware::HardwareSpec hw = config::load_hardware(hw_path);
    const hardware::Calibration cal = hardware::read_calibration(cal_path);
    const hardware::CostModel cm(hw, hardware::Precision::bf16, &cal, false);
    auto dev = [&](const hardware::Kernel& k) { return 1e3 * (cm.time(k) - cm.launch_time(k)); };
    std::map<std::pair<std::string, std::string>, double> meas;
    if (!csv.empty()) {
      std::ifstream in(csv);
      if (!in) throw std::runtime_error("cannot read " + csv);
      std::string line;
      std::getline(in, line);
      while (std::getline(in, line)) {
        std::vector<std::string> f;
        std::stringstream ss(line);
        for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
        if (f.size() == 8) meas[{f[0], f[6]}] = std::stod(f[7]);
      }
    }
    auto m = [&](const std::string& c, const std::string& item) {
      const auto it = meas.find({c, item});
      return it == meas.end() ? -1.0 : it->second;
    };
    std::printf("%-24s %-8s %10s %10s %7s\n", "case", "item", "measured", "model", "ratio");
    std::vector<Case> cases(std::begin(kCases), std::end(kCases));
    if (nemols) cases.assign(std::begin(kNemols), std::end(kNemols));
    for (const Case& c : cases) {
      const double S = static_cast<double>(c.S), L = S / c.cp;
      auto call = [&](bool bwd, double sq, double skv, bool causal) { return attn(variant, bwd, c, sq, skv, causal); };
      for (bool bwd : {false, true}) {
        const char* p = bwd ? "_b" : "_f";
        std::vector<std::tuple<std::string, double, double>> rows;
        auto row = [&](const std::string& item, double model) { rows.emplace_back(item, m(c.name, item), model); };
        auto print = [&] {
          for (const auto& [item, me, mo] : rows) {
            if (me > 0)
              std::printf("%-24s %-12s %10.3f %10.3f %7.3f\n", c.name, item.c_str(), me, mo, mo / me);
            else
              std::printf("%-24s %-12s %10s %10.3f %7s\n", c.name, item.c_str(), "-", mo, "-");
          }
        };
        row(std::string("whole") + p, dev(call(bwd, S, S, true)));
        if (c.cp == 1) {   // no ring: the whole causal call
          print();
          continue;
        }
        row(std::string("diag") + p, dev(call(bwd, L, L, true)));
        row(std::string("lower") + p, dev(call(bwd, L, L / 2, false)));
        row(std::string("upper") + p, dev(call(bwd, L / 2, L, false)));
        // The rank's attention as the simulator prices it, against the measured ring's calls.
        const hardware::Kernel rank = call(bwd, L, S, true);
        double mring = -1;
        const double d = m(c.name, std::string("diag") + p), lo = m(c.name, std::string("lower") + p),
                     up = m(c.name, std::string("upper") + p);
        if (d > 0 && lo > 0 && up > 0) mring = d + (c.cp - 1) * std::max(lo, up);
        double ring = 0;
        for (double x : layer::cp_step_times(cm, rank, c.cp, 2.0)) ring += 1e3 * x;
        rows.emplace_back(std::string("rank_whole") + p, -1.0, dev(rank));
        rows.emplace_back(std::string("ring") + p, mring, ring);
        print();
        // The quantity the mechanism adds: the ring over the rank's share of one whole call.
        const double mw = m(c.name, std::string("whole") + p), w = std::get<2>(rows.front());
        if (mw > 0 && mring > 0)
          std::printf("%-24s %-12s %10.3f %10.3f\n", c.name, (std::string("ring/share") + p).c_str(), mring / (mw / c.cp),
                      ring / (w / c.cp));
        else
          std::printf("%-24s %-12s %10s %10.3f\n", c.name, (std::string("ring/share") + p).c_str(), "-", ring / (w / c.cp));
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "validation_cp_ring: error: %s\n", e.what());
    return 2;
  }
  return 0;
}
