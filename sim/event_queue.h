#pragma once
// A binary-heap event queue keyed by (time, seq) in the manner of ns-3's
// Scheduler (Insert, IsEmpty, PeekNext, RemoveNext): equal times come out in
// insertion (FIFO) order, so runs are deterministic. Removal is lazy: callers
// stamp payloads with a version and drop stale events when they surface.
// Storage is one flat vector; after reserve() no allocation happens.
#include <algorithm>
#include <cstdint>
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
    heap_.push_back(Event{time, next_seq_++, p});
    std::push_heap(heap_.begin(), heap_.end(), later);
  }
  bool empty() const { return heap_.empty(); }
  const Event& peek_next() const { return heap_.front(); }
  Event remove_next() {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    Event e = heap_.back();
    heap_.pop_back();
    return e;
  }
  std::size_t size() const { return heap_.size(); }

 private:
  // (time, seq) compared as one 128-bit unsigned key (the sign bit of time
  // flipped so that signed order is kept): one compare, no branch on ties.
  __extension__ using Key = unsigned __int128;
  static Key key(const Event& e) {
    const auto t = static_cast<std::uint64_t>(e.time) ^ (std::uint64_t{1} << 63);
    return (static_cast<Key>(t) << 64) | e.seq;
  }
  struct Later {
    bool operator()(const Event& a, const Event& b) const { return key(a) > key(b); }
  };
  static constexpr Later later{};
  std::vector<Event> heap_;
  std::uint64_t next_seq_ = 0;
};

}  // namespace mfusim::sim
