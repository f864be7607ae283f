#include "core/thread_pool.h"

#include <sched.h>

#include <charconv>
#include <cstdlib>
#include <string_view>
#include <system_error>

#include "core/fail.h"
#include "core/profile.h"

namespace ferrum {
namespace {
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}
constexpr int kSpinIterations = 1 << 14;
}  // namespace

int ThreadPool::default_threads() {
  if (const char* env = std::getenv("FERRUM_THREADS")) {
    int n = 0;
    const std::string_view v(env);
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size() || n < 1 || n > kMaxThreads)
      fail("FERRUM_THREADS: expects a whole number from 1 to {}, got '{}'", kMaxThreads, v.substr(0, 20));
    return n;
  }
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  unsigned n = std::thread::hardware_concurrency();
  return n ? static_cast<int>(n) : 1;
}

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads > 0 ? n_threads : default_threads()) {
  if (n_threads_ > kMaxThreads) fail("{} threads asked for; at most {}", n_threads_, kMaxThreads);
  try {
    for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker(i); });
  } catch (const std::system_error& e) {  // the system refused a thread: stop those started, then say so
    const size_t started = workers_.size();
    stop_workers();
    fail("cannot start {} threads (the system refused after {}): {}", n_threads_, started + 1, e.what());
  }
}

ThreadPool::~ThreadPool() {
  stop_workers();
}

void ThreadPool::stop_workers() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

void ThreadPool::dispatch(Call call, void* ctx) {
  call_ = call;
  ctx_ = ctx;
  pending_.store(n_threads_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  call(ctx, 0, n_threads_);
  // Wait for the workers; they finish at about the same time as the caller.
  profile::Scope wait(profile::Op::PoolWait);
  int spins = 0;
  while (pending_.load(std::memory_order_acquire) != 0) {
    if (++spins < kSpinIterations) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
}

void ThreadPool::worker(int ith) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t g;
    int spins = 0;
    while ((g = generation_.load(std::memory_order_acquire)) == seen) {
      if (++spins < kSpinIterations) {
        cpu_relax();
      } else {
        generation_.wait(seen, std::memory_order_acquire);
      }
    }
    seen = g;
    if (stop_.load(std::memory_order_acquire)) return;
    call_(ctx_, ith, n_threads_);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace ferrum
