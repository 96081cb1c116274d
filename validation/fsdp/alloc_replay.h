#pragma once
// Replay of run 25's caching-allocator traces (validation/runs/run25-alloc-trace/replay/*.txt, derived by
// derive_replay.py from the recorded torch.cuda.memory._record_memory_history traces) through the model
// sim::CachingAllocator: the recorded requests and completed frees go in, the model's segments, placements
// and peaks come out, next to torch's own (the trace's segment_alloc lines and results/summary.csv).
#include <cstdint>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/caching_allocator.h"

namespace mfusim::validation {

struct AllocTraceLine {
  char kind = 0;            // 's' segment created by torch, 'a' request, 'f' completed free, 'x' other
  int step = -1;
  std::int64_t size = 0;    // 's', 'a'
  int stream = 0;           // 's', 'a'
  std::int64_t address = 0; // 's': bytes above the trace's lowest segment
  std::int64_t segment = 0, offset = 0;  // 'a': where torch placed it
  std::int64_t id = 0;      // 'f': allocation number
};

inline std::vector<AllocTraceLine> read_alloc_trace(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::vector<AllocTraceLine> out;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    AllocTraceLine l;
    ss >> l.kind >> l.step;
    if (l.kind == 's') ss >> l.size >> l.stream >> l.address;
    else if (l.kind == 'a') ss >> l.size >> l.stream >> l.segment >> l.offset;
    else if (l.kind == 'f') ss >> l.id;
    else if (l.kind != 'x') ss.setstate(std::ios::failbit);
    if (!ss) throw std::runtime_error(path + ":" + std::to_string(n) + ": unreadable line");
    out.push_back(l);
  }
  return out;
}

struct AllocReplay {
  // torch (the trace; peaks from summary.csv are the caller's)
  std::int64_t torch_segments = 0, torch_segment_bytes = 0;
  std::int64_t torch_segments_after_step1 = 0;  // created in steps 2-4
  // the model
  std::int64_t model_segments = 0;
  std::int64_t model_peak_reserved = 0, model_peak_allocated = 0;  // over steps 3-4 (peaks reset at step 3)
  std::int64_t model_reserved_end = 0;
  // agreement, request by request
  std::int64_t requests = 0;
  std::int64_t segment_mismatches = 0;    // requests where the model did / did not create a segment unlike torch,
                                          // or created one of another size
  std::int64_t placement_mismatches = 0;  // requests placed at another (segment, offset) than torch's
  std::int64_t first_mismatch = -1;       // line number (0-based, over non-comment lines) of the first one
};

// Feed the trace through the model. `recorded_addresses`: a segment the model creates starts where torch's
// segment of the same number did (the driver's placement, which decides ties in best fit); otherwise the model
// places segments one after another, as the simulator does.
inline AllocReplay replay_alloc_trace(const std::vector<AllocTraceLine>& lines, bool recorded_addresses) {
  AllocReplay r;
  sim::CachingAllocator a;
  std::vector<std::int64_t> torch_seg_address, torch_seg_size;
  for (const auto& l : lines)
    if (l.kind == 's') torch_seg_address.push_back(l.address), torch_seg_size.push_back(l.size);
  std::vector<std::int64_t> model_id;  // allocation number -> model id
  bool reset = false;
  std::int64_t pending_segment = -1;   // torch created a segment just before this request
  std::int64_t torch_seg_seen = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto& l = lines[i];
    if (!reset && l.step >= 3) a.reset_peaks(), reset = true;
    auto mismatch = [&](std::int64_t& counter) {
      ++counter;
      if (r.first_mismatch < 0) r.first_mismatch = static_cast<std::int64_t>(i);
    };
    if (l.kind == 'x') throw std::runtime_error("allocator trace: an action the replay does not model");
    if (l.kind == 's') {
      ++r.torch_segments;
      r.torch_segment_bytes += l.size;
      if (l.step >= 2) ++r.torch_segments_after_step1;
      pending_segment = torch_seg_seen++;
      continue;
    }
    if (l.kind == 'f') {
      a.free(model_id.at(static_cast<std::size_t>(l.id)));
      continue;
    }
    ++r.requests;
    std::optional<std::int64_t> where;
    const auto next_model_seg = static_cast<std::size_t>(a.segments().size());
    if (recorded_addresses && next_model_seg < torch_seg_address.size()) where = torch_seg_address[next_model_seg];
    const auto got = a.allocate(l.size, l.stream, where);
    model_id.push_back(got.id);
    const bool torch_new = pending_segment >= 0;
    if (got.new_segment != torch_new ||
        (torch_new && a.segments().back().size != torch_seg_size[static_cast<std::size_t>(pending_segment)]))
      mismatch(r.segment_mismatches);
    if (got.segment != l.segment || got.offset != l.offset) mismatch(r.placement_mismatches);
    pending_segment = -1;
  }
  r.model_segments = static_cast<std::int64_t>(a.segments().size());
  r.model_peak_reserved = a.peak_reserved();
  r.model_peak_allocated = a.peak_allocated();
  r.model_reserved_end = a.reserved();
  return r;
}

}  // namespace mfusim::validation
