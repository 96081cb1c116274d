#include "sim/process_memory.h"

#include <cstdint>

#if defined(__linux__) && defined(__GLIBC__)
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#endif

namespace mfusim::sim {

void tune_process_memory() {
#if defined(__linux__) && defined(__GLIBC__)
  // glibc caps M_MMAP_THRESHOLD at HEAP_MAX / 2 = 32 MiB on 64-bit; setting it
  // also switches off the dynamic threshold. Larger blocks are still mmapped.
  mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
  mallopt(M_TRIM_THRESHOLD, 1024 * 1024 * 1024);
  mallopt(M_TOP_PAD, 64 * 1024 * 1024);
  // Grow the main heap once by ~96 MiB (a block just under the mmap threshold
  // plus the top pad), advise all of it to huge pages while it is untouched,
  // and give the block back: it stays in the heap (trim threshold), so the
  // step arrays later carved from it fault in as 2 MiB pages, as
  // GLIBC_TUNABLES=glibc.malloc.hugetlb=1 would do.
  if (void* block = std::malloc(std::size_t{32} * 1024 * 1024 - 4096)) {
    const void* top = sbrk(0);
    if (top != reinterpret_cast<void*>(-1) && top > block)
      advise_huge(block, static_cast<std::size_t>(static_cast<const char*>(top) - static_cast<const char*>(block)));
    std::free(block);
  }
#endif
}

void advise_huge(const void* p, std::size_t bytes) {
#if defined(__linux__) && defined(__GLIBC__) && defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} * 1024 * 1024;
  if (p == nullptr) return;
  const auto begin = reinterpret_cast<std::uintptr_t>(p);
  if (bytes > UINTPTR_MAX - begin) return;
  const std::uintptr_t first = (begin + kHuge - 1) & ~(kHuge - 1);
  const std::uintptr_t last = (begin + bytes) & ~(kHuge - 1);
  if (first < begin || last <= first) return;
  // Advice only: failure (no THP in this kernel, not a mapping) changes nothing.
  (void)madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

}  // namespace mfusim::sim
