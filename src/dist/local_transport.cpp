#include "dist/local_transport.h"

#include <cstring>

#include "core/fail.h"

namespace ferrum::dist {

class LocalEndpoint : public Transport {
 public:
  LocalEndpoint(LocalWorld& w, int r) : w_(w), r_(r) {}
  int rank() const override { return r_; }
  int size() const override { return w_.size(); }
  void send(int to, Bytes msg) override {
    LocalWorld::Box& b = w_.box(r_, to);
    {
      std::lock_guard lk(b.mu);
      b.q.push_back(std::move(msg));
    }
    b.cv.notify_one();
  }
  Bytes recv(int from) override {
    LocalWorld::Box& b = w_.box(from, r_);
    std::unique_lock lk(b.mu);
    b.cv.wait(lk, [&] { return !b.q.empty(); });
    Bytes m = std::move(b.q.front());
    b.q.pop_front();
    return m;
  }
  void allgather(const void* mine, size_t n, void* all) override {
    w_.posted_[r_] = mine;
    w_.barrier();  // every rank's buffer posted
    for (int r = 0; r < w_.size(); ++r) std::memcpy(static_cast<uint8_t*>(all) + r * n, w_.posted_[r], n);
    w_.barrier();  // every rank done reading
  }
  std::unique_ptr<Transport> split(int, int) override {
    fail("in-process ranks are grouped when they are made, not split");
  }
  void gather(const void* mine, std::span<const size_t> bytes, void* all) override {
    w_.posted_[r_] = mine;
    w_.barrier();
    if (r_ == 0)
      for (size_t r = 0, at = 0; r < bytes.size(); at += bytes[r], ++r)
        std::memcpy(static_cast<uint8_t*>(all) + at, w_.posted_[r], bytes[r]);
    w_.barrier();
  }

 private:
  LocalWorld& w_;
  int r_;
};

void LocalWorld::barrier() {
  std::unique_lock lk(mu_);
  const uint64_t gen = generation_;
  if (++arrived_ == n_) {
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
  } else {
    cv_.wait(lk, [&] { return generation_ != gen; });
  }
}

LocalWorld::LocalWorld(int n) : n_(n), boxes_(static_cast<size_t>(n) * n), posted_(n) {
  for (int r = 0; r < n; ++r) endpoints_.push_back(std::make_unique<LocalEndpoint>(*this, r));
}

}  // namespace ferrum::dist
