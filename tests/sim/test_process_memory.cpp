// sim/process_memory.h: the helpers only change where pages come from, so
// they must be safe on any input and leave memory contents alone.
#include <doctest/doctest.h>

#include <cstdint>
#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>
#include <vector>

#include "sim/process_memory.h"

using namespace mfusim;

TEST_CASE("tune_process_memory may be called more than once; allocation still works") {
  sim::tune_process_memory();
  sim::tune_process_memory();
  // A block above the 32 MiB mmap threshold and one below it, written and read back.
  for (std::size_t bytes : {std::size_t{40} << 20, std::size_t{20} << 20, std::size_t{100}}) {
    std::vector<std::uint8_t> v(bytes, 0xA5);
    CHECK(v.front() == 0xA5);
    CHECK(v.back() == 0xA5);
  }
}

TEST_CASE("advise_huge on null, empty, small, unaligned and overflowing ranges does nothing harmful") {
  sim::advise_huge(nullptr, 0);
  sim::advise_huge(nullptr, std::size_t{64} << 20);
  int x = 7;
  sim::advise_huge(&x, 0);
  sim::advise_huge(&x, sizeof x);
  CHECK(x == 7);
  // Stack memory (not a heap mapping) and a range that would wrap the address space.
  char stack[100];
  std::memset(stack, 1, sizeof stack);
  sim::advise_huge(stack + 1, sizeof stack - 1);
  sim::advise_huge(stack, SIZE_MAX);
  CHECK(stack[99] == 1);
}

TEST_CASE("advise_huge keeps the contents of a big written buffer, at any offset") {
  // 5 MiB holds at least one whole 2 MiB page at any alignment.
  std::vector<std::uint32_t> v((std::size_t{5} << 20) / sizeof(std::uint32_t));
  std::iota(v.begin(), v.end(), 0u);
  sim::advise_huge_storage(v);
  sim::advise_huge(reinterpret_cast<const char*>(v.data()) + 3, v.size() * sizeof(std::uint32_t) - 3);
  bool same = true;
  for (std::size_t i = 0; i < v.size(); ++i) same = same && v[i] == static_cast<std::uint32_t>(i);
  CHECK(same);
  // Advised before first touch (what the engine does after reserve()): still zero-filled by assign.
  std::vector<std::uint64_t> w;
  w.reserve(std::size_t{1} << 20);
  sim::advise_huge_storage(w);
  w.assign(std::size_t{1} << 20, 0);
  CHECK(std::all_of(w.begin(), w.end(), [](std::uint64_t e) { return e == 0; }));
}
