#pragma once
// A model of PyTorch's CUDA caching allocator (the native one, expandable segments off, no
// max_split_size, no CUDA graphs): what turns a step's tensor allocations (allocated bytes) into the
// device memory the process holds (reserved bytes, torch.cuda.max_memory_reserved, the figure
// torchtitan publishes).
//
// The rules follow c10/cuda/CUDACachingAllocator.cpp of pytorch/pytorch at commit
// 001074d25084fdb87a799823e395a50f5ec044d3 (torch 2.x; functions named below are that file's):
//  - round_size: a request is rounded up to a multiple of 512 bytes (kMinBlockSize), at least 512
//    (roundup_power2_divisions off, the default).
//  - get_pool: rounded sizes <= 1 MiB (kSmallSize) go to the small pool, larger ones to the large pool;
//    each pool keeps its free blocks per stream (BlockComparatorSize orders by stream, size, address).
//  - get_free_block: best fit, the smallest free block of the same pool and stream that is at least the
//    rounded size, the lowest address among equals.
//  - get_allocation_size: when no free block fits, a new segment (cudaMalloc) of 2 MiB (kSmallBuffer)
//    for the small pool, 20 MiB (kLargeBuffer) for large requests < 10 MiB (kMinLargeAlloc), else the
//    size rounded up to 2 MiB (kRoundLarge).
//  - should_split: the chosen block is split when what remains is >= 512 bytes (small pool) or
//    > 1 MiB (large pool); otherwise the whole block is handed out (allocated bytes count the block).
//  - free_block / try_merge_blocks: a freed block merges with its free neighbours in the same segment.
//    A free takes effect when it completes (the trace's free_completed; a block used on another stream
//    completes once that stream's work is done).
//  - Segments are never returned (release_cached_blocks runs only on an out-of-memory retry or
//    empty_cache, neither modelled): reserved bytes = the sum of the segments created.
//
// Where cudaMalloc places a segment is the driver's choice; it only matters for ties in best fit
// (equal-size free blocks in different segments). The model places segments one after another unless
// the caller names the address (the replay test uses the recorded addresses to check the rules exactly).
#include <algorithm>
#include <cstdint>
#include <optional>
#include <tuple>
#include <vector>

namespace mfusim::sim {

class CachingAllocator {
 public:
  static constexpr std::int64_t kMinBlockSize = 512;
  static constexpr std::int64_t kSmallSize = 1 << 20;
  static constexpr std::int64_t kSmallBuffer = 2 << 20;
  static constexpr std::int64_t kLargeBuffer = 20 << 20;
  static constexpr std::int64_t kMinLargeAlloc = 10 << 20;
  static constexpr std::int64_t kRoundLarge = 2 << 20;

  static std::int64_t round_size(std::int64_t bytes);
  static std::int64_t segment_size(std::int64_t rounded);  // get_allocation_size

  struct Allocation {
    std::int64_t id = -1;       // the handle to pass to free()
    std::int64_t segment = -1;  // index of the segment it lies in (segments are numbered as created)
    std::int64_t offset = 0;    // bytes from the segment's start
    std::int64_t size = 0;      // the block's bytes (counted as allocated)
    bool new_segment = false;   // this request created a segment
  };

  // A request of `bytes` (> 0) on `stream`. `segment_address`, when given, is where a segment this
  // request creates starts (otherwise after every segment so far).
  Allocation allocate(std::int64_t bytes, int stream,
                      std::optional<std::int64_t> segment_address = std::nullopt);
  // The completed free of an allocation; throws std::invalid_argument for an unknown or freed id.
  void free(std::int64_t id);
  // What a segment the next request of `bytes` would create (0: it fits a cached block).
  std::int64_t would_create(std::int64_t bytes, int stream) const;

  std::int64_t allocated() const { return allocated_; }
  std::int64_t reserved() const { return reserved_; }
  std::int64_t peak_allocated() const { return peak_allocated_; }
  std::int64_t peak_reserved() const { return peak_reserved_; }
  // As torch.cuda.reset_peak_memory_stats: the peaks restart from the current values.
  void reset_peaks() { peak_allocated_ = allocated_, peak_reserved_ = reserved_; }
  struct Segment {
    std::int64_t address = 0, size = 0;
    int stream = 0;
    bool small = false;
  };
  const std::vector<Segment>& segments() const { return segments_; }

 private:
  struct Block {
    std::int64_t address = 0, size = 0, segment = -1;
    int stream = 0;
    bool small = false, allocated = false;
    std::int64_t prev = -1, next = -1;  // neighbours in the segment (block indices)
  };
  using Key = std::tuple<int, std::int64_t, std::int64_t, std::int64_t>;  // stream, size, address, block
  // A pool's free blocks, sorted (BlockComparatorSize's order); a flat vector: pools hold few blocks.
  using Pool = std::vector<Key>;
  Pool& pool(bool small) { return small ? small_free_ : large_free_; }
  const Pool& pool(bool small) const { return small ? small_free_ : large_free_; }
  static void insert(Pool& p, const Key& k) { p.insert(std::lower_bound(p.begin(), p.end(), k), k); }
  static void erase(Pool& p, const Key& k) { p.erase(std::lower_bound(p.begin(), p.end(), k)); }
  Key key(std::int64_t b) const { return {blocks_[b].stream, blocks_[b].size, blocks_[b].address, b}; }
  std::int64_t new_block(const Block& b);

  std::vector<Block> blocks_;
  std::vector<std::int64_t> free_slots_;
  Pool small_free_, large_free_;
  std::vector<Segment> segments_;
  std::vector<std::int64_t> live_;  // allocation id -> block (-1: freed)
  std::int64_t next_id_ = 0, next_address_ = 0;
  std::int64_t allocated_ = 0, reserved_ = 0, peak_allocated_ = 0, peak_reserved_ = 0;
};

}  // namespace mfusim::sim
