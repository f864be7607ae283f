// The prefix cache's blocks on disk (KvCacheOptions::store, prefix_store.h): what a block's file
// holds is, for each group that still has the block, each of its layers' K block then V block.
#include <cstring>

#include "runtime/kv_cache.h"

namespace ferrum::runtime {

void KvCache::save_entry(const PrefixCache::EntryView& e) {
  if (e.root != 0) return;  // an adapter's blocks: its id is this process's own
  if (e.blocks.empty() || e.blocks[0] < 0 || opts_.store->has(e.hash)) return;
  thread_local std::vector<std::span<const uint8_t>> parts;
  parts.clear();
  uint32_t mask = 0;
  for (size_t g = 0; g < groups_.size() && g < 32; ++g) {
    if (e.blocks[g] < 0) continue;
    mask |= 1u << g;
    const size_t at = static_cast<size_t>(e.blocks[g]) * block_bytes_;
    for (size_t i = 0; i < groups_[g].layers.size(); ++i) {
      parts.emplace_back(groups_[g].k_pool[i].get() + at, block_bytes_);
      parts.emplace_back(groups_[g].v_pool[i].get() + at, block_bytes_);
    }
  }
  opts_.store->save(e.hash, e.parent, e.tokens, mask, parts);
}

PrefixCache::Hit KvCache::restore(uint64_t parent, const int32_t* tokens) {
  const int bt = opts_.block_tokens;
  const uint64_t h = PrefixCache::chain_hash(parent, tokens, bt);
  if (!opts_.store->has(h)) return {};
  uint32_t mask = 0;
  thread_local std::vector<uint8_t> data;
  if (!opts_.store->load(h, parent, std::span(tokens, bt), mask, data)) return {};
  size_t need = 0;
  for (size_t g = 0; g < groups_.size() && g < 32; ++g)
    if (mask & (1u << g)) need += groups_[g].layers.size() * 2 * block_bytes_;
  if (!(mask & 1u) || (groups_.size() < 32 && (mask >> groups_.size())) || data.size() != need) return {};
  // A block of each group the file has, where the pool has room (group 0's is required).
  std::vector<int32_t> blocks(groups_.size(), -1), got;
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (!(mask & (1u << g)) || !prefix_.make_free(static_cast<int>(g), 1)) continue;
    got.clear();
    if (allocs_[g].allocate(1, got)) blocks[g] = got[0];
  }
  if (blocks[0] < 0) {
    for (size_t g = 1; g < groups_.size(); ++g)
      if (blocks[g] >= 0) allocs_[g].decref(blocks[g]);
    return {};
  }
  const uint8_t* p = data.data();
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (!(mask & (1u << g))) continue;
    const size_t at = blocks[g] < 0 ? 0 : static_cast<size_t>(blocks[g]) * block_bytes_;
    for (size_t i = 0; i < groups_[g].layers.size(); ++i, p += 2 * block_bytes_) {
      if (blocks[g] < 0) continue;
      std::memcpy(groups_[g].k_pool[i].get() + at, p, block_bytes_);
      std::memcpy(groups_[g].v_pool[i].get() + at, p + block_bytes_, block_bytes_);
    }
  }
  prefix_.offer(parent, tokens, bt, blocks, /*root=*/0);
  for (size_t g = 0; g < groups_.size(); ++g)
    if (blocks[g] >= 0) allocs_[g].decref(blocks[g]);  // the prefix cache holds them now
  return prefix_.find(parent, tokens, bt);
}

}  // namespace ferrum::runtime
