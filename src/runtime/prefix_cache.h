// The prefix cache over the paged KV block pool (the role of vLLM's cached blocks beside its
// block pool): full blocks of token ids, each keyed by the hash chain of the blocks before it and
// holding one reference to its block. A sequence whose prompt starts with cached blocks attaches
// them instead of recomputing; when the pool runs short, the least recently used entries that no
// sequence holds are evicted.
#pragma once

#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

#include "runtime/block_allocator.h"

namespace ferrum::runtime {

class PrefixCache {
 public:
  explicit PrefixCache(BlockAllocator& alloc) : alloc_(alloc) {}
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  // The chain hash of a block of `n` tokens after the blocks hashed into `parent`.
  static uint64_t chain_hash(uint64_t parent, const int32_t* tokens, int n);

  struct Hit {
    int32_t block = -1;  // -1: not cached
    uint64_t hash = 0;   // the chain hash of the block (valid on a hit)
  };
  // The cached block holding these `n` tokens after `parent`; a hit becomes the most recently
  // used. The caller takes its own reference to the block.
  Hit find(uint64_t parent, const int32_t* tokens, int n);
  // Offers a full block of a sequence: cached with a reference of its own unless an entry with
  // this hash exists (which becomes the most recently used). Returns the block's chain hash.
  uint64_t offer(uint64_t parent, const int32_t* tokens, int n, int32_t block);

  // Entries whose block only the cache holds (they count as free).
  int32_t evictable() const;
  // Evicts least recently used evictable entries until the pool has `n` free blocks; false (and
  // nothing evicted) when even all of them would not be enough.
  bool make_free(int32_t n);
  // Drops every entry (and its reference).
  void clear();

  // A sequence's lookup: hits count those that reused blocks, saved the tokens they skipped.
  void count(int64_t saved_tokens) {
    if (saved_tokens > 0)
      ++hits_, saved_ += saved_tokens;
    else
      ++misses_;
  }
  int64_t entries() const { return static_cast<int64_t>(entries_.size()); }
  int64_t hits() const { return hits_; }
  int64_t misses() const { return misses_; }
  int64_t saved_tokens() const { return saved_; }

 private:
  struct Entry {
    int32_t block;
    uint64_t parent;
    std::vector<int32_t> tokens;  // checked on a hit: a hash collision is a miss
    std::list<uint64_t>::iterator lru;
  };
  BlockAllocator& alloc_;
  std::unordered_map<uint64_t, Entry> entries_;
  std::list<uint64_t> lru_;  // front = least recently used
  int64_t hits_ = 0, misses_ = 0, saved_ = 0;
};

}  // namespace ferrum::runtime
