#pragma once
// Runs f(i) for i in [0, n) on all cores, with an optional progress callback
// (called from the worker threads under a lock, with the number done).
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace mfusim::study {

inline void parallel_for(std::size_t n, const std::function<void(std::size_t)>& f,
                         const std::function<void(std::size_t done, std::size_t total)>& progress = {},
                         unsigned threads = 0) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<std::size_t>(threads, std::max<std::size_t>(1, n)));
  std::atomic<std::size_t> next{0}, done{0};
  std::mutex mu;
  auto worker = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < n;) {
      f(i);
      const std::size_t d = done.fetch_add(1) + 1;
      if (progress) {
        std::lock_guard<std::mutex> lock(mu);
        progress(d, n);
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
}

}  // namespace mfusim::study
