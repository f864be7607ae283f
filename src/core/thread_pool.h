// A persistent pool of worker threads for the hot path. `run(fn)` calls fn(ith, nth) on every
// thread (the caller is thread 0) and returns when all are done. No allocation per call: the
// callable is passed by pointer. Workers spin briefly before sleeping so back-to-back kernels
// in one forward pass do not pay a wake-up each.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace ferrum {

class ThreadPool {
 public:
  // n_threads <= 0 picks the number of available cores. Throws ferrum::Error when the system
  // cannot start the threads.
  explicit ThreadPool(int n_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  template <typename F>
  void run(F&& fn) {
    if (n_threads_ == 1) {
      fn(0, 1);
      return;
    }
    auto call = [](void* ctx, int ith, int nth) { (*static_cast<std::remove_reference_t<F>*>(ctx))(ith, nth); };
    dispatch(call, const_cast<void*>(static_cast<const void*>(&fn)));
  }

  // Splits [0, n) into contiguous ranges, one per thread: fn(begin, end, ith).
  template <typename F>
  void parallel_for(int64_t n, F&& fn) {
    run([&](int ith, int nth) {
      const int64_t per = (n + nth - 1) / nth;
      const int64_t b = per * ith, e = b + per < n ? b + per : n;
      if (b < e) fn(b, e, ith);
    });
  }

  // The available cores, or FERRUM_THREADS when set (a bad value throws ferrum::Error).
  static int default_threads();
  static constexpr int kMaxThreads = 4096;

 private:
  void stop_workers();
  using Call = void (*)(void*, int, int);
  void dispatch(Call call, void* ctx);
  void worker(int ith);

  int n_threads_;
  std::vector<std::thread> workers_;
  Call call_ = nullptr;
  void* ctx_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace ferrum
