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
  return {it->second.blocks.data(), h};
}

uint64_t PrefixCache::offer(uint64_t parent, const int32_t* tokens, int n, std::span<const int32_t> blocks,
                            uint64_t root) {
  const uint64_t h = chain_hash(parent, tokens, n);
  auto it = entries_.find(h);
  if (it != entries_.end()) {
    lru_.splice(lru_.end(), lru_, it->second.lru);
    std::vector<int32_t>& have = it->second.blocks;
    for (size_t g = 1; g < have.size(); ++g)
      if (have[g] < 0 && blocks[g] >= 0) allocs_[g].incref(have[g] = blocks[g]);
    return h;
  }
  for (size_t g = 0; g < blocks.size(); ++g)
    if (blocks[g] >= 0) allocs_[g].incref(blocks[g]);
  lru_.push_back(h);
  entries_.emplace(h, Entry{std::vector<int32_t>(blocks.begin(), blocks.end()), parent, root,
                            std::vector<int32_t>(tokens, tokens + n), std::prev(lru_.end())});
  return h;
}

int32_t PrefixCache::evictable(int group) const {
  int32_t n = 0;
  for (const auto& [h, e] : entries_) n += sole(e, group);
  return n;
}

bool PrefixCache::make_free(int group, int32_t n) {
  const BlockAllocator& a = allocs_[group];
  if (a.free_count() >= n) return true;
  if (a.free_count() + evictable(group) < n) return false;
  free_until(group, n);
  return a.free_count() >= n;
}

void PrefixCache::trim(int group, int32_t max_used) {
  const BlockAllocator& a = allocs_[group];
  if (a.total() - a.free_count() > max_used) free_until(group, a.total() - max_used);
}

void PrefixCache::free_until(int group, int32_t n) {
  BlockAllocator& a = allocs_[group];
  for (auto it = lru_.begin(); it != lru_.end() && a.free_count() < n;) {
    auto e = entries_.find(*it);
    if (!sole(e->second, group)) {
      ++it;
    } else if (group > 0) {  // a windowed block: the entry stays
      a.decref(e->second.blocks[group]);
      e->second.blocks[group] = -1;
      ++it;
    } else {
      if (on_evict_) on_evict_(view(e->first, e->second));
      for (size_t g = 0; g < e->second.blocks.size(); ++g)
        if (e->second.blocks[g] >= 0) allocs_[g].decref(e->second.blocks[g]);
      entries_.erase(e);
      it = lru_.erase(it);
    }
  }
}

void PrefixCache::for_each(const std::function<void(const EntryView&)>& f) const {
  for (const auto& [h, e] : entries_) f(view(h, e));
}

void PrefixCache::clear() {
  if (on_evict_)
    for (const auto& [h, e] : entries_) on_evict_(view(h, e));
  for (auto& [h, e] : entries_)
    for (size_t g = 0; g < e.blocks.size(); ++g)
      if (e.blocks[g] >= 0) allocs_[g].decref(e.blocks[g]);
  entries_.clear();
  lru_.clear();
}

}  // namespace ferrum::runtime
