// Stage-to-stage sends of the pipeline.
#include "models/accounting.h"
#include "sim/time.h"
#include "step/builder.h"

namespace mfusim::step {

using hardware::Collective;

// An op's output as its consumer sees it. When the consumer (F of the next
// stage, B of the previous one) runs on another rank, the stage-to-stage send
// is emitted here, right after the producing op, so each rank's send stream
// holds its sends in the order its compute stream produces them (Megatron and
// DualPipe post the P2P send right after the step that produced it). Emitting
// it when the receiver's op was lowered instead queued sends in the
// receivers' order: with two directions (DualPipe) or two peers a send could
// wait behind one whose input was not computed yet.
void Builder::publish(int rank, OpKind kind, int mb, int stage, TaskId last) {
  const bool fwd = kind == OpKind::F;
  const int next = fwd ? stage + 1 : stage - 1;
  TaskId out = last;
  if (next >= 0 && next < S_) {
    const int dst = fwd ? f_runner_[mb * S_ + next] : b_runner_[mb * S_ + next];
    if (dst >= 0 && dst != rank) {
      if (pp_send_ns_ < 0) {   // the same for every send: computed once
        const double bytes = models::layer_comm(s_.model, 0, layers_.shape()).pp_bytes;
        pp_send_ns_ = sim::checked_ns(layers_.coll(Collective::send_recv, bytes, layers_.placement().pp_link), "a pipeline send");
      }
      out = add_task(rank, fwd ? pp_fwd_stream_[rank] : pp_bwd_stream_[rank], pp_send_ns_, Category::pp_comm,
                     Name(fwd ? sim::Label::send_forward : sim::Label::send_backward), mb, -1, 'S', 0, 0, 0,
                     {layers_.placement().pp_link.crosses_domains() ? nic_[rank] : nvl_[rank]},
                     interference_class(layers_.comm_contention(Collective::send_recv, layers_.placement().pp_link)));
      out_.graph.depend(last, out);
      send_target_.emplace_hint(send_target_.end(), out, dst);   // ids only grow: appended at the end
      if (!s_.features.overlap_p2p_comm) p2p_wait_[rank].push_back(out);
    }
  }
  (fwd ? f_out_ : b_out_)[mb * S_ + stage] = out;
}

}  // namespace mfusim::step
