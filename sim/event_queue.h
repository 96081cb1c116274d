#pragma once
// A binary-heap event queue keyed by (time, seq) in the manner of ns-3's
// Scheduler (Insert, IsEmpty, PeekNext, RemoveNext): equal times come out in
// insertion (FIFO) order, so runs are deterministic. Removal is lazy: callers
// stamp payloads with a version and drop stale events when they surface.
// Storage is one flat vector; after reserve() no allocation happens.
//
// take_next() / done() split RemoveNext in two for the executor's loop: the
// first event inserted while the taken event is being handled replaces it at
// the root (one sift-down instead of a pop and a push). Keys are unique, so
// the order in which events come out is the same either way.
#include <cstdint>
#include <utility>
#include <vector>

namespace mfusim::sim {

template <class Payload>
class EventQueue {
 public:
  struct Event {
    std::int64_t time;
    std::uint64_t seq;
    Payload payload;
  };

  void reserve(std::size_t n) { heap_.reserve(n); }
  void insert(std::int64_t time, Payload p) {
    const Node e{static_cast<std::uint64_t>(time) ^ kSign, next_seq_++, p};
    if (taken_) {   // the root is the taken event: put e there instead
      taken_ = false;
      sift_down(e);
      return;
    }
    heap_.push_back(e);
    sift_up(heap_.size() - 1);
  }
  bool empty() const { return heap_.empty(); }
  Event peek_next() const { return event(heap_.front()); }
  Event remove_next() {
    const Event e = event(heap_.front());
    pop_root();
    return e;
  }
  // The next event, left in place until done() (or replaced by the next insert).
  Event take_next() {
    taken_ = true;
    return event(heap_.front());
  }
  void done() {
    if (!taken_) return;
    taken_ = false;
    pop_root();
  }
  std::size_t size() const { return heap_.size(); }

 private:
  // (time, seq) compared as one 128-bit unsigned key: the time is stored with
  // its sign bit flipped (so that unsigned order is signed order), once, at
  // insert: one compare, no branch on ties.
  static constexpr std::uint64_t kSign = std::uint64_t{1} << 63;
  struct Node {
    std::uint64_t time_key;   // time ^ kSign
    std::uint64_t seq;
    Payload payload;
  };
  __extension__ using Key = unsigned __int128;
  static Key key(const Node& e) { return (static_cast<Key>(e.time_key) << 64) | e.seq; }
  static Event event(const Node& e) { return Event{static_cast<std::int64_t>(e.time_key ^ kSign), e.seq, e.payload}; }
  void pop_root() {
    const Node last = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) sift_down(last);
  }
  // Place e at the root's hole and move it down to its place.
  void sift_down(const Node& e) {
    const std::size_t n = heap_.size();
    const Key k = key(e);
    std::size_t hole = 0;
    for (;;) {
      std::size_t c = 2 * hole + 1;
      if (c >= n) break;
      Key kc = key(heap_[c]);
      if (c + 1 < n) {
        const Key k2 = key(heap_[c + 1]);
        if (k2 < kc) { ++c; kc = k2; }
      }
      if (!(kc < k)) break;
      heap_[hole] = heap_[c];
      hole = c;
    }
    heap_[hole] = e;
  }
  void sift_up(std::size_t hole) {
    const Node e = heap_[hole];
    const Key k = key(e);
    while (hole > 0) {
      const std::size_t parent = (hole - 1) / 2;
      if (!(k < key(heap_[parent]))) break;
      heap_[hole] = heap_[parent];
      hole = parent;
    }
    heap_[hole] = e;
  }

  std::vector<Node> heap_;
  std::uint64_t next_seq_ = 0;
  bool taken_ = false;
};

}  // namespace mfusim::sim
