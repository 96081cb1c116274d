// Megatron's activation CPU offloading (features.activation_offload_layers = N; Megatron's
// --cpu-offloading with cpu_offloading_num_layers, through Transformer Engine's
// AsyncDoubleBufferGroupOffloadHandler, transformer_engine/pytorch/cpu_offload.py):
//   * the saved activations of the block's first N layers (one group each) go to host memory;
//   * the offloads run one at a time on their own stream: group 0's after layer 0's forward; at the
//     end of the forward of layer window[k] (TE's layer_window_map, spreading the N groups over the
//     block's L layers) the compute stream waits for group k's offload, TE frees the group's GPU
//     copy there, and group k + 1's offload starts;
//   * in the backward, when layer window[k] is reached (k from N - 1 down), the compute stream waits
//     for the reloads started so far and group k's reload starts; before layer 0's backward it waits
//     for all of them.
// Each transfer takes its bytes over the hardware's host link (pcie_bandwidth_gbs, one direction;
// the two directions on their own streams). Megatron runs it with pp = 1 and no recompute
// (config/checks.cpp), so the block is the model and a layer's index its position.
#include "sim/time.h"
#include "step/builder.h"

namespace mfusim::step {

void Builder::act_offload_plan() {
  d2h_stream_.assign(p_, -1);
  h2d_stream_.assign(p_, -1);
  offload_.assign(p_, {});
  offload_window_.clear();
  if (!act_offload_on()) return;
  for (int r = 0; r < p_; ++r) {
    d2h_stream_[r] = out_.graph.add_stream(r, "offload to host", false);
    h2d_stream_[r] = out_.graph.add_stream(r, "reload from host", false);
  }
  // transformer_engine/pytorch/cpu_offload.py, AsyncDoubleBufferGroupOffloadHandler.__init__.
  const int L = s_.model.layers, N = s_.features.activation_offload_layers;
  int constant = 0;
  for (int i = 0; i < N; ++i) {
    int w = (L / N) * (i + 1) - 1;
    if (i < L % N) {
      w += i + 1;
      constant = i + 1;
    } else {
      w += constant;
    }
    offload_window_.push_back(w);
  }
}

namespace {
// The chain's current output: what a transfer started now follows.
std::vector<sim::TaskId> chain_now(const Chain& ch) {
  if (ch.last >= 0) return {ch.last};
  return ch.pending;
}
}  // namespace

void Builder::act_offload_forward(int rank, Chain& ch, const std::vector<Item>& items, std::size_t i, int mb) {
  const int x = items[i].layer;
  if (x < 0 || (i + 1 < items.size() && items[i + 1].layer == x)) return;   // not the end of a layer's forward
  auto& st = offload_[rank][mb];
  const int N = static_cast<int>(offload_window_.size());
  auto offload = [&](int g) {
    const double bytes = layers_.layer_cost(g).act_bytes;
    const TaskId t = add_task(rank, d2h_stream_[rank],
                              sim::checked_ns(bytes / s_.hardware.pcie_bandwidth, "an activation offload"),
                              Category::other, "offload to host", mb, -1, 'C');
    for (TaskId d : chain_now(ch)) out_.graph.depend(d, t);
    st.d2h[g] = t;
  };
  if (x == 0) offload(0);
  for (int k = 0; k < N; ++k) {
    if (offload_window_[static_cast<std::size_t>(k)] != x) continue;
    // The compute stream waits for group k's offload; TE then frees its GPU copy (a zero-time task in
    // the compute stream's order, after the layer's forward).
    auto f = st.d2h.find(k);
    if (f != st.d2h.end()) {
      const auto bytes = static_cast<std::int64_t>(layers_.layer_cost(k).act_bytes);
      const TaskId fr = add_task(rank, out_.compute_stream[rank], 0, Category::other, Name(), mb, -1, 'M', 0, 0, -bytes);
      out_.graph.depend(f->second, fr);
    }
    if (k + 1 < N) offload(k + 1);
  }
}

void Builder::act_offload_backward(int rank, Chain& ch, const std::vector<Item>& items, std::size_t i, int mb) {
  const int x = items[i].layer;
  if (x < 0 || (i > 0 && items[i - 1].layer == x)) return;   // not the start of a layer's backward
  auto it = offload_[rank].find(mb);
  if (it == offload_[rank].end()) return;
  auto& st = it->second;
  if (st.offloaded < 0) st.offloaded = static_cast<int>(offload_window_.size());
  const int k = st.offloaded - 1;
  if (k >= 0 && offload_window_[static_cast<std::size_t>(k)] == x) {
    if (st.last_h2d >= 0) ch.pending.push_back(st.last_h2d);   // waits for the reloads started so far
    const double bytes = layers_.layer_cost(k).act_bytes;
    const TaskId t = add_task(rank, h2d_stream_[rank],
                              sim::checked_ns(bytes / s_.hardware.pcie_bandwidth, "an activation reload"),
                              Category::other, "reload from host", mb, -1, 'C', 0, 0, static_cast<std::int64_t>(bytes));
    for (TaskId d : chain_now(ch)) out_.graph.depend(d, t);
    st.last_h2d = t;
    st.offloaded = k;
  }
  if (x == 0) {   // the block's first layer: every reload done before its backward
    if (st.last_h2d >= 0) ch.pending.push_back(st.last_h2d);
    offload_[rank].erase(it);
  }
}

}  // namespace mfusim::step
