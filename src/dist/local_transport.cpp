#include "dist/local_transport.h"

namespace ferrum::dist {

class LocalEndpoint : public Transport {
 public:
  LocalEndpoint(LocalWorld& w, int r) : w_(w), r_(r) {}
  int rank() const override { return r_; }
  int size() const override { return w_.size(); }
  void send(int to, const Bytes& msg) override {
    LocalWorld::Box& b = w_.box(r_, to);
    {
      std::lock_guard lk(b.mu);
      b.q.push_back(msg);
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

 private:
  LocalWorld& w_;
  int r_;
};

LocalWorld::LocalWorld(int n) : n_(n), boxes_(static_cast<size_t>(n) * n) {
  for (int r = 0; r < n; ++r) endpoints_.push_back(std::make_unique<LocalEndpoint>(*this, r));
}

}  // namespace ferrum::dist
