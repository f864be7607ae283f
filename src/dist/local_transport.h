// Ranks as threads of one process: one mailbox per (from, to) pair; collectives read the other
// threads' buffers between two barriers.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <vector>

#include "dist/transport.h"

namespace ferrum::dist {

class LocalWorld {
 public:
  explicit LocalWorld(int n);
  int size() const { return n_; }
  // The endpoint of rank r (owned by the world).
  Transport& endpoint(int r) { return *endpoints_[r]; }

 private:
  friend class LocalEndpoint;
  struct Box {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Bytes> q;
  };
  Box& box(int from, int to) { return boxes_[from * n_ + to]; }
  void barrier();
  int n_;
  std::vector<Box> boxes_;
  std::mutex mu_;  // the barrier's
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  std::vector<const void*> posted_;  // each rank's buffer during a collective
  std::vector<std::unique_ptr<Transport>> endpoints_;
};

}  // namespace ferrum::dist
