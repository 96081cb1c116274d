// Imbalance apart from the bubble (see analysis.h): the schedule's own bubble
// is read off the same lowered step with every stage's work set to the mean.
#include <algorithm>
#include <map>
#include <tuple>

#include "step/analysis.h"
#include "step/steady.h"

namespace mfusim::step {

std::vector<double> balanced_bubble(const sim::TaskGraph& g, const Lowered* low, bool steady, int P) {
  const auto& tasks = g.tasks();
  const auto& streams = g.streams();
  // An op task's kind: its task kind, and for a merged task whether it holds backward work beside
  // forward work (DualPipe's F&B).
  auto key = [&](std::size_t t) {
    const auto& x = tasks[t];
    int fb = 0;
    if (low && t < low->info.size() && low->info[t].parts >= 0) {
      const auto& pt = low->parts[static_cast<std::size_t>(low->info[t].parts)];
      fb = x.kind == 'F' && pt[static_cast<std::size_t>(sim::Category::backward)] > 0 ? 1 : 0;
    }
    return std::make_pair(x.kind, fb);
  };
  auto balanced_kind = [&](std::size_t t) {
    const auto& x = tasks[t];
    if (!streams[static_cast<std::size_t>(x.stream)].compute) return false;
    return x.kind == 'F' || x.kind == 'B' || x.kind == 'W' || x.kind == 'R' || x.kind == 'O' || x.kind == 'X';
  };
  std::map<std::pair<char, int>, std::pair<double, double>> sum;   // kind -> (ns, count)
  for (std::size_t t = 0; t < tasks.size(); ++t)
    if (balanced_kind(t)) {
      auto& e = sum[key(t)];
      e.first += static_cast<double>(tasks[t].duration_ns);
      e.second += 1;
    }
  sim::TaskGraph b;
  b.copy_contention(g);
  for (const auto& st : streams) b.add_stream(st.rank, st.name, st.compute);
  for (const auto& rs : g.resources()) b.add_resource(rs.name, rs.capacity);
  std::vector<sim::TaskSpec> specs(tasks.begin(), tasks.end());
  for (std::size_t t = 0; t < specs.size(); ++t) {
    auto& x = specs[t];
    if (x.label == sim::Label::text || x.label == sim::Label::named) { x.label = sim::Label::text; x.text = 0; }
    if (!balanced_kind(t)) continue;
    const auto& e = sum[key(t)];
    const auto mean = static_cast<std::int64_t>(e.first / e.second + 0.5);
    // The host issue and the launch share scale with the work.
    if (x.duration_ns > 0) x.host_ns = static_cast<std::int64_t>(static_cast<double>(x.host_ns) * mean / x.duration_ns);
    x.duration_ns = mean;
  }
  b.reserve(specs.size());
  b.add_copies(specs.data(), specs.size());
  const auto& edges = g.edges();
  std::vector<std::pair<sim::TaskId, sim::TaskId>> e2(edges.begin(), edges.end());
  b.depend_all(e2.data(), e2.size());
  std::vector<double> out(static_cast<std::size_t>(P), 0.0);
  std::vector<RankParts> parts;
  if (steady) parts = steady_state(b, low ? scenario_links(b) : StepLinks{}, P, low).parts;
  else parts = analyze(b, sim::run(b), P, low);
  for (int r = 0; r < P; ++r) out[static_cast<std::size_t>(r)] = parts[static_cast<std::size_t>(r)].b.bubble;
  return out;
}

void split_imbalance(std::vector<RankParts>& parts, const std::vector<double>& balanced) {
  for (std::size_t r = 0; r < parts.size() && r < balanced.size(); ++r) {
    auto& b = parts[r].b;
    const double imb = std::clamp(b.bubble - balanced[r], 0.0, b.bubble);
    b.imbalance += imb;
    b.bubble -= imb;
  }
}

}  // namespace mfusim::step
