// The prefix cache over the paged KV block pools (the role of vLLM's cached blocks beside its
// block pool): full blocks of token ids, each keyed by the hash chain of the blocks before it and
// holding one reference to its block in every cache group (runtime/kv_cache.h). A sequence whose
// prompt starts with cached blocks attaches them instead of recomputing; when a pool runs short,
// the least recently used entries that no sequence holds are evicted. Group 0's block is the
// entry; a windowed group's block is an extra the entry may lose on its own (set to -1) when that
// group's pool runs short: the entry still serves hits whose window does not reach it.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <span>
#include <unordered_map>
#include <vector>

#include "runtime/block_allocator.h"

namespace ferrum::runtime {

class PrefixCache {
 public:
  // One allocator per cache group; the vector must outlive the cache and keep its size.
  explicit PrefixCache(std::vector<BlockAllocator>& allocs) : allocs_(allocs) {}
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  // The chain hash of a block of `n` tokens after the blocks hashed into `parent`.
  static uint64_t chain_hash(uint64_t parent, const int32_t* tokens, int n);

  struct Hit {
    const int32_t* blocks = nullptr;  // nullptr: not cached; else one block per group (-1: lost)
    uint64_t hash = 0;                // the chain hash of the block (valid on a hit)
  };
  // The cached blocks holding these `n` tokens after `parent`; a hit becomes the most recently
  // used. The caller takes its own references to the blocks.
  Hit find(uint64_t parent, const int32_t* tokens, int n);
  // Offers a full block of a sequence (its block in each group, -1 where it has none): cached with
  // references of its own unless an entry with this hash exists (which becomes the most recently
  // used and takes the blocks it lost from this offer). Returns the block's chain hash. `root`:
  // the namespace the chain started from (0: the base model).
  uint64_t offer(uint64_t parent, const int32_t* tokens, int n, std::span<const int32_t> blocks,
                 uint64_t root = 0);

  // An entry about to lose its blocks (evicted as a whole, or dropped by clear()), or visited.
  struct EntryView {
    uint64_t hash, parent, root;
    std::span<const int32_t> tokens, blocks;  // blocks: per group, -1 where lost
  };
  // Called with each entry before it is evicted or cleared (the disk store saves it then).
  void set_on_evict(std::function<void(const EntryView&)> f) { on_evict_ = std::move(f); }
  void for_each(const std::function<void(const EntryView&)>& f) const;

  // Blocks of `group` only the cache holds (they count as free).
  int32_t evictable(int group) const;
  // Frees least recently used blocks of `group` only the cache holds until its pool has `n` free
  // (group 0: whole entries; others: the entries' blocks of that group); false (and nothing
  // freed) when even all of them would not be enough.
  bool make_free(int group, int32_t n);
  // Windowed group: gives up the least recently used blocks only the cache holds until the pool
  // has at most `max_used` blocks in use (or none are left to give up).
  void trim(int group, int32_t max_used);
  // Drops every entry (and its references).
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
    std::vector<int32_t> blocks;  // per group
    uint64_t parent, root;
    std::vector<int32_t> tokens;  // checked on a hit: a hash collision is a miss
    std::list<uint64_t>::iterator lru;
  };
  bool sole(const Entry& e, int g) const { return e.blocks[g] >= 0 && allocs_[g].refcount(e.blocks[g]) == 1; }
  void free_until(int group, int32_t n);  // make_free's loop

  static EntryView view(uint64_t h, const Entry& e) { return {h, e.parent, e.root, e.tokens, e.blocks}; }

  std::vector<BlockAllocator>& allocs_;
  std::function<void(const EntryView&)> on_evict_;
  std::unordered_map<uint64_t, Entry> entries_;
  std::list<uint64_t> lru_;  // front = least recently used
  int64_t hits_ = 0, misses_ = 0, saved_ = 0;
};

}  // namespace ferrum::runtime
