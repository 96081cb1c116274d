// The layers of each virtual pipeline stage (stage_split.h).
#include "models/stage_split.h"

#include <algorithm>

namespace mfusim::models {

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

}  // namespace mfusim::models
