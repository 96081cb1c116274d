// Bytes of the collectives one layer needs per micro-batch on one rank.
#include "models/layer_comm.h"

#include "models/conventions.h"

namespace mfusim::models {

using namespace detail;

LayerComm layer_comm(const ModelSpec& m, int layer, const RankShape& r) {
  LayerComm c;
  const double h = static_cast<double>(m.hidden);
  const double e = r.bytes_per_element;
  const double T = static_cast<double>(r.micro_batch) * static_cast<double>(r.seq_len) / r.cp;
  if (r.tp > 1) {
    c.tp_collectives = r.sequence_parallel ? 4 : 2;
    c.tp_bytes = T * h * e;
    c.tp_gather_bytes = r.sequence_parallel && r.te_per_tensor_fp8() ? T * h : c.tp_bytes;
  }
  if (m.is_moe_layer(layer) && r.ep > 1) {
    const double local = r.sequence_parallel ? T / r.tp : T;
    c.ep_all_to_all_bytes = local * m.moe->top_k * h * e;
  }
  if (r.cp > 1) {
    const double kv = m.mla ? static_cast<double>(m.heads) / r.tp : kv_heads_per_rank(m.kv_heads, r.tp);
    c.cp_bytes = T * kv * (qk_head_dim(m) + v_head_dim(m)) * e;
  }
  c.pp_bytes = T * h * e / (r.sequence_parallel ? r.tp : 1);
  return c;
}

}  // namespace mfusim::models
