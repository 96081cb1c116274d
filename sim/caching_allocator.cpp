#include "sim/caching_allocator.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace mfusim::sim {

std::int64_t CachingAllocator::round_size(std::int64_t bytes) {
  if (bytes < kMinBlockSize) return kMinBlockSize;
  return kMinBlockSize * ((bytes + kMinBlockSize - 1) / kMinBlockSize);
}

std::int64_t CachingAllocator::segment_size(std::int64_t rounded) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return kRoundLarge * ((rounded + kRoundLarge - 1) / kRoundLarge);
}

std::int64_t CachingAllocator::new_block(const Block& b) {
  if (!free_slots_.empty()) {
    const std::int64_t i = free_slots_.back();
    free_slots_.pop_back();
    blocks_[static_cast<std::size_t>(i)] = b;
    return i;
  }
  blocks_.push_back(b);
  return static_cast<std::int64_t>(blocks_.size()) - 1;
}

std::int64_t CachingAllocator::would_create(std::int64_t bytes, int stream) const {
  const std::int64_t size = round_size(bytes);
  const bool small = size <= kSmallSize;
  const auto& p = pool(small);
  const auto it = std::lower_bound(p.begin(), p.end(), Key{stream, size, std::numeric_limits<std::int64_t>::min(), -1});
  if (it != p.end() && std::get<0>(*it) == stream) return 0;
  return segment_size(size);
}

CachingAllocator::Allocation CachingAllocator::allocate(std::int64_t bytes, int stream,
                                                        std::optional<std::int64_t> segment_address) {
  if (bytes <= 0) throw std::invalid_argument("caching allocator: a request of " + std::to_string(bytes) + " bytes");
  const std::int64_t size = round_size(bytes);
  const bool small = size <= kSmallSize;
  auto& p = pool(small);
  Allocation out;
  // get_free_block: the smallest free block of this pool and stream that fits, lowest address first.
  std::int64_t b = -1;
  const auto it = std::lower_bound(p.begin(), p.end(), Key{stream, size, std::numeric_limits<std::int64_t>::min(), -1});
  if (it != p.end() && std::get<0>(*it) == stream) {
    b = std::get<3>(*it);
    p.erase(it);
  } else {
    // alloc_block: a new segment.
    Segment s;
    s.size = segment_size(size);
    s.stream = stream;
    s.small = small;
    s.address = segment_address ? *segment_address : next_address_;
    next_address_ = std::max(next_address_, s.address + s.size);
    segments_.push_back(s);
    reserved_ += s.size;
    peak_reserved_ = std::max(peak_reserved_, reserved_);
    Block nb;
    nb.address = s.address;
    nb.size = s.size;
    nb.segment = static_cast<std::int64_t>(segments_.size()) - 1;
    nb.stream = stream;
    nb.small = small;
    b = new_block(nb);
    out.new_segment = true;
  }
  // should_split + alloc_found_block: the front part is handed out, the rest stays cached.
  const std::int64_t remaining = blocks_[static_cast<std::size_t>(b)].size - size;
  if (small ? remaining >= kMinBlockSize : remaining > kSmallSize) {
    Block rest = blocks_[static_cast<std::size_t>(b)];
    rest.address += size;
    rest.size = remaining;
    rest.prev = b;
    const std::int64_t r = new_block(rest);
    Block& blk = blocks_[static_cast<std::size_t>(b)];
    if (blk.next >= 0) blocks_[static_cast<std::size_t>(blk.next)].prev = r;
    blk.next = r;
    blk.size = size;
    insert(p, key(r));
  }
  Block& blk = blocks_[static_cast<std::size_t>(b)];
  blk.allocated = true;
  allocated_ += blk.size;
  peak_allocated_ = std::max(peak_allocated_, allocated_);
  out.id = next_id_++;
  out.segment = blk.segment;
  out.offset = blk.address - segments_[static_cast<std::size_t>(blk.segment)].address;
  out.size = blk.size;
  live_.push_back(b);
  return out;
}

void CachingAllocator::free(std::int64_t id) {
  if (id < 0 || id >= next_id_ || live_[static_cast<std::size_t>(id)] < 0)
    throw std::invalid_argument("caching allocator: free of allocation " + std::to_string(id) +
                                ", which is not live");
  const std::int64_t b = live_[static_cast<std::size_t>(id)];
  live_[static_cast<std::size_t>(id)] = -1;
  Block& blk = blocks_[static_cast<std::size_t>(b)];
  blk.allocated = false;
  allocated_ -= blk.size;
  auto& p = pool(blk.small);
  // try_merge_blocks with the previous, then the next neighbour, when free.
  for (const bool before : {true, false}) {
    Block& cur = blocks_[static_cast<std::size_t>(b)];
    const std::int64_t n = before ? cur.prev : cur.next;
    if (n < 0 || blocks_[static_cast<std::size_t>(n)].allocated) continue;
    erase(p, key(n));
    const Block other = blocks_[static_cast<std::size_t>(n)];
    if (before) {
      cur.address = other.address;
      cur.prev = other.prev;
      if (cur.prev >= 0) blocks_[static_cast<std::size_t>(cur.prev)].next = b;
    } else {
      cur.next = other.next;
      if (cur.next >= 0) blocks_[static_cast<std::size_t>(cur.next)].prev = b;
    }
    cur.size += other.size;
    free_slots_.push_back(n);
  }
  insert(p, key(b));
}

}  // namespace mfusim::sim
