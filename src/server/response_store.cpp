#include "server/response_store.h"

namespace ferrum::server {

void ResponseStore::expire(Clock::time_point now) {
  while (!order_.empty()) {
    auto it = map_.find(order_.front());
    if (it->second.expires > now && map_.size() <= max_) break;
    map_.erase(it);
    order_.pop_front();
  }
}

void ResponseStore::put(const std::string& id, StoredResponse r) {
  if (max_ == 0 || ttl_.count() <= 0) return;
  std::lock_guard lk(mu_);
  const auto now = Clock::now();
  if (auto it = map_.find(id); it != map_.end()) {
    order_.erase(it->second.order);
    map_.erase(it);
  }
  order_.push_back(id);
  map_.emplace(id, Entry{std::move(r), now + ttl_, std::prev(order_.end())});
  expire(now);
}

std::optional<StoredResponse> ResponseStore::get(const std::string& id) {
  std::lock_guard lk(mu_);
  expire(Clock::now());
  auto it = map_.find(id);
  if (it == map_.end()) return std::nullopt;
  return it->second.r;
}

bool ResponseStore::erase(const std::string& id) {
  std::lock_guard lk(mu_);
  auto it = map_.find(id);
  if (it == map_.end()) return false;
  order_.erase(it->second.order);
  map_.erase(it);
  return true;
}

size_t ResponseStore::size() {
  std::lock_guard lk(mu_);
  expire(Clock::now());
  return map_.size();
}

}  // namespace ferrum::server
