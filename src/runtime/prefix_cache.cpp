#include "runtime/prefix_cache.h"

#include <algorithm>

namespace ferrum::runtime {
namespace {

inline uint64_t mix64(uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t PrefixCache::chain_hash(uint64_t parent, const int32_t* tokens, int n) {
  uint64_t h = mix64(parent ^ 0x5eed);
  for (int i = 0; i < n; ++i) h = mix64(h ^ static_cast<uint32_t>(tokens[i]));
  return h;
}

PrefixCache::Hit PrefixCache::find(uint64_t parent, const int32_t* tokens, int n) {
  const uint64_t h = chain_hash(parent, tokens, n);
  auto it = entries_.find(h);
  if (it == entries_.end() || it->second.parent != parent ||
      !std::equal(tokens, tokens + n, it->second.tokens.begin(), it->second.tokens.end()))
    return {};
  lru_.splice(lru_.end(), lru_, it->second.lru);
  return {it->second.block, h};
}

uint64_t PrefixCache::offer(uint64_t parent, const int32_t* tokens, int n, int32_t block) {
  const uint64_t h = chain_hash(parent, tokens, n);
  auto it = entries_.find(h);
  if (it != entries_.end()) {
    lru_.splice(lru_.end(), lru_, it->second.lru);
    return h;
  }
  alloc_.incref(block);
  lru_.push_back(h);
  entries_.emplace(h, Entry{block, parent, std::vector<int32_t>(tokens, tokens + n), std::prev(lru_.end())});
  return h;
}

int32_t PrefixCache::evictable() const {
  int32_t n = 0;
  for (const auto& [h, e] : entries_) n += alloc_.refcount(e.block) == 1;
  return n;
}

bool PrefixCache::make_free(int32_t n) {
  if (alloc_.free_count() >= n) return true;
  if (alloc_.free_count() + evictable() < n) return false;
  for (auto it = lru_.begin(); it != lru_.end() && alloc_.free_count() < n;) {
    auto e = entries_.find(*it);
    if (alloc_.refcount(e->second.block) == 1) {
      alloc_.decref(e->second.block);
      entries_.erase(e);
      it = lru_.erase(it);
    } else {
      ++it;
    }
  }
  return alloc_.free_count() >= n;
}

void PrefixCache::clear() {
  for (auto& [h, e] : entries_) alloc_.decref(e.block);
  entries_.clear();
  lru_.clear();
}

}  // namespace ferrum::runtime
