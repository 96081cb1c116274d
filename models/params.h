#pragma once
// Parameter counts of a ModelSpec from its shapes (docs/accounting.md).
#include "models/model_spec.h"

namespace mfusim::models {

struct ParamCount {
  double total = 0;               // every parameter (all experts)
  double activated = 0;           // per token (top_k + shared experts)
  double embedding = 0;           // vocab * hidden
  double lm_head = 0;             // 0 when tied
  double final_norm = 0;
  double per_layer_dense = 0;     // attention + dense MLP + norms
  double per_layer_moe = 0;       // attention + router + all experts + shared + norms (0 for dense models)
  double per_layer_moe_active = 0;
  // Multi-token prediction modules (mtp_depth, DeepSeek-V3 §2.2): their blocks, projections
  // and norms (the embedding and output head are shared). Not in total or activated, which
  // count the main model as the report's 671B / 37B and HF's figures without MTP do.
  double mtp = 0, mtp_active = 0;
};
ParamCount count_params(const ModelSpec&);
double layer_params(const ModelSpec&, int layer);         // all parameters of layer `layer`
double layer_params_active(const ModelSpec&, int layer);

namespace detail {
// One layer's parameters split by how they are distributed over ranks.
struct ParamParts {
  double tp_sharded = 0;   // column/row-parallel matrices and column biases
  double replicated = 0;   // norms, row-parallel biases, router, MLA down-projections
  double experts = 0;      // routed experts (sharded by tp * ep)
  double experts_active = 0;
  double router = 0;       // included in replicated
  double total() const { return tp_sharded + replicated + experts; }
  double active() const { return tp_sharded + replicated + experts_active; }
};
ParamParts layer_parts(const ModelSpec& m, int layer);
// All mtp_depth MTP modules: each the last layer's block, a projection 2h -> h (tp-sharded)
// and two RMSNorms (of the hidden state and of the embedding; replicated). Zero without MTP.
ParamParts mtp_parts(const ModelSpec& m);
}  // namespace detail

}  // namespace mfusim::models
