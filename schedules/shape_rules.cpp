// Names and shape rules of the schedules: shared by the loader (which reports
// them as config errors) and the generators (which assert them).
#include <string>
#include <vector>

#include "schedules/schedule.h"

namespace mfusim::schedules {

const std::vector<std::string>& schedule_names() {
  static const std::vector<std::string> names = {"gpipe", "1f1b",  "interleaved-1f1b", "zb-h1",
                                                 "zb-h2", "zb-v", "dualpipe",         "dualpipev",
                                                 "zb-auto", "v-half", "v-min"};
  return names;
}

int chunks_for(const std::string& name, int vpp) {
  if (name == "interleaved-1f1b") return vpp;
  if (name == "zb-v" || name == "dualpipev" || name == "v-half" || name == "v-min") return 2;
  return 1;
}

bool splits_w(const std::string& name) {
  return name == "zb-h1" || name == "zb-h2" || name == "zb-v" || name == "dualpipe" || name == "dualpipev" ||
         name == "zb-auto" || name == "v-half" || name == "v-min";
}

bool combined_1f1b_applies(const std::string& name, int pp) {
  return name == "interleaved-1f1b" || (name == "1f1b" && pp == 1);
}

std::vector<std::string> shape_errors(const std::string& name, const PipelineShape& s) {
  std::vector<std::string> errors;
  const std::string p = "pp=" + std::to_string(s.ranks);
  const std::string m = "micro-batches per step=" + std::to_string(s.microbatches);
  if (s.ranks < 1) errors.push_back("pipeline ranks must be >= 1 (" + p + ")");
  if (s.microbatches < 1) errors.push_back("at least one micro-batch per step is needed (" + m + ")");
  if (!errors.empty()) return errors;
  if (name == "interleaved-1f1b") {
    // Narayanan et al. 2021 §2.2.2: the number of micro-batches must be an integer multiple of p.
    if (s.chunks < 2) errors.push_back("interleaved-1f1b needs vpp >= 2 (vpp=" + std::to_string(s.chunks) + ")");
    if (s.microbatches % s.ranks != 0)
      errors.push_back("interleaved-1f1b needs micro-batches to be a multiple of pp (" + m + ", " + p + ")");
  } else if (name == "zb-h1") {
    // Qi et al. 2024 §3.1: ZB-H1 keeps 1F1B's warm-up, so it needs at least p micro-batches.
    if (s.microbatches < s.ranks)
      errors.push_back(name + " needs at least pp micro-batches (" + m + ", " + p + ")");
  } else if (name == "zb-h2" || name == "zb-v") {
    // Qi et al. 2024 §3.1 / §6: rank 0 warms up with 2p-1 forwards (ZB-H2: 2(p-1) before its first B;
    // ZB-V: 2p-1 chunk-0 forwards before its first chunk-1 forward), so at least 2p-1 micro-batches.
    if (s.microbatches < 2 * s.ranks - 1)
      errors.push_back(name + " needs at least 2*pp-1 micro-batches (" + m + ", " + p + ")");
  } else if (name == "dualpipe") {
    // deepseek-ai/DualPipe dualpipe.py: even number of ranks, num_chunks >= 2 * num_ranks, even.
    if (s.ranks % 2 != 0) errors.push_back("dualpipe needs an even pp (" + p + ")");
    if (s.microbatches % 2 != 0) errors.push_back("dualpipe needs an even number of micro-batches (" + m + ")");
    if (s.microbatches < 2 * s.ranks)
      errors.push_back("dualpipe needs at least 2*pp micro-batches (" + m + ", " + p + ")");
  } else if (name == "dualpipev") {
    // deepseek-ai/DualPipe dualpipev.py: num_chunks >= 2 * num_ranks.
    if (s.microbatches < 2 * s.ranks)
      errors.push_back("dualpipev needs at least 2*pp micro-batches (" + m + ", " + p + ")");
  } else if (name != "gpipe" && name != "1f1b" && name != "zb-auto" && name != "v-half" && name != "v-min") {
    // zb-auto plans any (p, m); v-half / v-min (Qi et al. 2024, arXiv:2405.15362) repeat their building
    // block for any m >= 1, the warm-up and cool-down shortened by the greedy reordering.
    errors.push_back("unknown schedule '" + name + "'");
  }
  if (s.combined_1f1b && !combined_1f1b_applies(name, s.ranks))
    errors.push_back("the combined 1F1B (overlapped EP all-to-all) runs with interleaved-1f1b, or 1f1b at pp=1 (" + name +
                     ", " + p + ")");
  return errors;
}

}  // namespace mfusim::schedules
