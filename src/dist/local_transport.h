// Pipeline ranks as threads of one process: one mailbox per (from, to) pair.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>

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
  int n_;
  std::vector<Box> boxes_;
  std::vector<std::unique_ptr<Transport>> endpoints_;
};

}  // namespace ferrum::dist
