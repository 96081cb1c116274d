// Lowering a scenario to a task graph (see lower.h for the contract): the
// entry point and the split of layers into stages. The builder is split by
// concern over step/ (builder.h lists which file owns what).
#include "step/lower.h"

#include <algorithm>

#include "models/stage_split.h"
#include "step/builder.h"

namespace mfusim::step {

schedules::PipelineShape pipeline_shape(const config::Scenario& s) {
  const std::string name = config::to_string(s.schedule.name);
  return schedules::PipelineShape{s.parallel.pp, s.microbatches(), schedules::chunks_for(name, s.parallel.vpp),
                                  s.moe.overlap_ep_comm && schedules::combined_1f1b_applies(name, s.parallel.pp)};
}

bool overlap_ep_comm_applies(const config::Scenario& s) {
  return s.model.is_moe() && s.parallel.ep > 1 && s.features.recompute != config::Recompute::full &&
         schedules::combined_1f1b_applies(config::to_string(s.schedule.name), s.parallel.pp);
}

std::vector<std::vector<int>> split_layers(const config::Scenario& s, int stages) {
  return models::split_layers(s, stages);
}

HeldLayers held_layers(const std::vector<std::vector<int>>& stage_layers, const std::vector<int>& stages) {
  const int last = static_cast<int>(stage_layers.size()) - 1;
  HeldLayers h;
  for (int st : stages) {
    const auto& l = stage_layers[static_cast<std::size_t>(st)];
    h.layers.insert(h.layers.end(), l.begin(), l.end());
    h.embedding = h.embedding || st == 0;
    h.head = h.head || st == last;
  }
  return h;
}

Lowered lower(const config::Scenario& s, const LowerOptions& o) { return Builder(s, o).run(); }

}  // namespace mfusim::step

