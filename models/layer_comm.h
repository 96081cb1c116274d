#pragma once
// Bytes of the collectives one layer needs per micro-batch on one rank (tensor, expert,
// context and pipeline parallelism).
#include "models/model_spec.h"
#include "models/rank_shape.h"

namespace mfusim::models {

// Communication one layer needs per micro-batch on one rank (bytes per collective call).
struct LayerComm {
  int tp_collectives = 0;         // per pass (F or B): 2 all-reduces, or 2 all-gathers + 2 reduce-scatters with SP
  double tp_bytes = 0;            // full buffer per collective (b*s*h*2 / cp)
  // The sequence-parallel all-gather's full buffer: tp_bytes, or half of it where Transformer Engine's
  // per-tensor fp8 recipes gather the quantised tensor (1 byte per element; MXFP8 gathers its two copies,
  // as many bytes as bf16; docs/cost-model.md 2b).
  double tp_gather_bytes = 0;
  double ep_all_to_all_bytes = 0; // per all-to-all (dispatch or combine); 2 per pass for MoE layers
  double cp_bytes = 0;            // K,V chunk passed per ring step (cp > 1)
  double pp_bytes = 0;            // activation sent to the next stage (b*s*h*2 / cp, / tp with SP)
};
LayerComm layer_comm(const ModelSpec&, int layer, const RankShape&);

}  // namespace mfusim::models
