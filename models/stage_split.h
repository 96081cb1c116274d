#pragma once
// The transformer layers of each virtual pipeline stage (Megatron's pipeline split): an even split over
// the stages, or the scenario's explicit stage_layers, first / last_stage_layers, or Megatron's
// account_for_embedding / account_for_loss_in_pipeline_split. step::split_layers is this function; the
// rank's shape (models::rank_shape) reads it for recompute of the first layers of each chunk.
#include <vector>

#include "config/scenario.h"

namespace mfusim::models {

// The global layer indices of each of `stages` virtual stages, in order.
std::vector<std::vector<int>> split_layers(const config::Scenario&, int stages);

}  // namespace mfusim::models
