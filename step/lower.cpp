// Lowering a scenario to a task graph (see lower.h for the contract): the
// entry point and the split of layers into stages. The builder is split by
// concern over step/ (builder.h lists which file owns what).
#include "step/lower.h"

#include <algorithm>

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
  const int L = s.model.layers;
  std::vector<int> counts(stages, 0);
  const auto& P = s.parallel;
  const int emb = P.account_for_embedding_in_pipeline_split ? 1 : 0;
  const int loss = P.account_for_loss_in_pipeline_split ? 1 : 0;
  if (!P.stage_layers.empty() && static_cast<int>(P.stage_layers.size()) == stages) {
    counts = P.stage_layers;
  } else if ((emb || loss) && stages > 0) {
    // Megatron-LM's account_for_embedding/loss_in_pipeline_split: the embedding and the loss
    // take one layer slot each in the even split over the virtual stages (config checks that
    // it divides); the first (last) virtual stage builds one transformer layer fewer.
    const int per = (L + emb + loss) / stages;
    for (int& c : counts) c = per;
    counts[0] -= emb;
    counts[stages - 1] -= loss;
    for (int& c : counts) c = std::max(0, c);
  } else {
    int first = P.first_stage_layers, last = P.last_stage_layers;
    int rest = L, lo = 0, hi = stages;
    if (stages > 1 && first > 0) { counts[0] = first; rest -= first; lo = 1; }
    if (stages > 1 && last > 0) { counts[stages - 1] = last; rest -= last; hi = stages - 1; }
    const int n = hi - lo;
    for (int i = lo; i < hi; ++i) counts[i] = n > 0 ? rest / n + (i - lo < rest % n ? 1 : 0) : 0;
  }
  std::vector<std::vector<int>> out(stages);
  int l = 0;
  for (int st = 0; st < stages; ++st)
    for (int k = 0; k < counts[st] && l < L; ++k) out[st].push_back(l++);
  return out;
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

