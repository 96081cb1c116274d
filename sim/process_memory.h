#pragma once
// Process-level memory tuning for the simulator's big per-task arrays.
//
// One simulated step allocates ~20 MB of per-task arrays (tasks, edges,
// executor state, timeline, analysis codes) and frees them at its end; a
// sweep, plan or what-if ladder does that again for every step. With glibc's
// defaults each array above the (dynamic) mmap threshold is mmapped and
// unmapped per step, so every page of it faults in afresh, and 4 KiB pages
// cost one TLB entry each. Two helpers, both no-ops off Linux/glibc:
//
//   tune_process_memory(): keep freed memory in the process (mmap threshold
//     at glibc's maximum, 32 MiB, trim threshold and top pad large), so the
//     next step reuses already-faulted pages. Call once at the start of main().
//   advise_huge(p, bytes): ask for transparent huge pages (MADV_HUGEPAGE) on
//     the 2 MiB-aligned interior of [p, p + bytes). Call right after a big
//     reserve(), before the memory is written. Ranges without a whole 2 MiB
//     page inside (small, null) are left alone.
//
// Neither changes any result: they only change where and how pages come from.
#include <cstddef>

namespace mfusim::sim {

void tune_process_memory();
void advise_huge(const void* p, std::size_t bytes);

// The storage of a vector after reserve()/assign(), advised as above.
template <class Vector>
void advise_huge_storage(const Vector& v) {
  advise_huge(v.data(), v.capacity() * sizeof(typename Vector::value_type));
}

}  // namespace mfusim::sim
