// What the trace shows of an op's tasks: after emit_op has added an op's tasks
// (replayed, item by item, FSDP's or merged), each compute task is matched to
// the item it came from, in emission order, and given the item's layer, its
// segment's HBM bytes, and longest kernel (TaskInfo); a TP or EP collective gets
// the layer of the segment it follows. The match is checked: an op whose
// compute tasks do not pair with its items one by one (a shape this file does
// not know) keeps no layer or kernel rather than wrong ones. A merged op task
// (coarse lowering) gets the bytes of all its items and no layer.
#include <string>
#include <vector>

#include "step/builder.h"

namespace mfusim::step {

void Builder::describe_op(int rank, const Op& op, TaskId first) {
  const auto end = static_cast<TaskId>(out_.graph.size());
  if (first >= end) return;
  auto& g = out_.graph;
  const sim::StreamId cs = out_.compute_stream[static_cast<std::size_t>(rank)];
  // The items in emission order: an F&B op alternates one forward and one backward item.
  std::vector<const Item*> seq;
  const auto& fi = items_of(rank, op, true);
  if (op.kind == OpKind::FB) {
    const auto& bi = items_of(rank, op, false);
    for (std::size_t i = 0, j = 0; i < fi.size() || j < bi.size();) {
      if (i < fi.size()) seq.push_back(&fi[i++]);
      if (j < bi.size()) seq.push_back(&bi[j++]);
    }
  } else {
    for (const Item& it : fi) seq.push_back(&it);
  }
  if (!opt_.per_layer) {   // one merged task holds the op's items
    double bytes = 0;
    for (const Item* it : seq) bytes += it->seg->bytes;
    for (TaskId id = first; id < end; ++id) {
      auto& info = out_.info[static_cast<std::size_t>(id)];
      if (info.parts >= 0 && g.task(id).stream == cs) info.bytes = bytes;
    }
    return;
  }
  const sim::StreamId tp = tp_stream_[static_cast<std::size_t>(rank)], ep = ep_stream_[static_cast<std::size_t>(rank)];
  std::size_t i = 0;
  int sub = 0;                  // compute tasks of seq[i] already matched
  const Item* last = nullptr;   // the item whose segment came last (its collective follows it)
  for (TaskId id = first; id < end; ++id) {
    const sim::TaskSpec& t = g.task(id);
    auto& info = out_.info[static_cast<std::size_t>(id)];
    if (t.stream == cs) {
      if (i >= seq.size() || t.kind != seq[i]->kind || t.category != seq[i]->cat) continue;   // not an item's (load batch, ...)
      if (!(info.flops > 0) && seq[i]->seg->flops > 0) continue;   // a copy beside the items (FSDP2's copy-out)
      const Item& it = *seq[i];
      const layer::Seg& sg = *it.seg;
      const bool split = sg.comm_ns > 0 && sg.comm_overlappable && s_.features.tp_comm_overlap && sg.ns > 0;
      info.layer = it.layer;
      info.kernel = sg.kernel;
      // A segment split around its overlapped collective: each part holds its share (as split_overlap).
      info.bytes = split ? sg.bytes * static_cast<double>(t.duration_ns) / static_cast<double>(sg.ns) : sg.bytes;
      last = &it;
      if (++sub == (split ? 2 : 1)) {
        ++i;
        sub = 0;
      }
    } else if (last && t.kind == 'C' && (t.stream == tp || t.stream == ep)) {
      info.layer = last->layer;
    }
  }
  if (i != seq.size() || sub != 0) {   // not paired one by one: leave the op undescribed
    for (TaskId id = first; id < end; ++id) {
      auto& info = out_.info[static_cast<std::size_t>(id)];
      info.layer = -1;
      info.kernel = nullptr;
      info.bytes = 0;
    }
  }
}

}  // namespace mfusim::step
