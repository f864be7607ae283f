// Per-sequence KV caches for all layers of a model, contiguous or paged.
//
// Paged: every layer has a pool of fixed-size blocks (block_tokens rows each); a sequence owns a
// table of block ids shared by all layers of a group. Blocks are reference counted, so sequences
// and the prefix cache can share full blocks; a block is written only when exactly one owner holds
// it (otherwise it is copied first). Contiguous: each sequence gets one private region of
// seq_capacity rows (a table of one block). Callers never see the difference.
//
// Groups (the role of vLLM's KV cache groups): group 0 is the layers that see every position, in
// the layout asked for; each sliding-window size makes one more group, always paged, whose tables
// give up the blocks every query still to come has passed (table entry -1), so a windowed layer
// holds about its window (plus rollback_tokens, so that speculative decoding can roll back) however
// long the sequence grows.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/huge_pages.h"
#include "core/thread_pool.h"
#include "ferrum/kv_cache.h"
#include "kernels/cpu/kv_format.h"
#include "runtime/block_allocator.h"
#include "runtime/prefix_cache.h"
#include "runtime/prefix_store.h"

namespace ferrum::runtime {

using ferrum::KvLayout;

struct KvCacheOptions {
  KvLayout layout = KvLayout::Contiguous;
  kernels::KvType type = kernels::KvType::F32;
  int64_t seq_capacity = 4096;  // max tokens of one sequence
  int64_t pool_tokens = 0;      // total tokens over all sequences (0: derived, see kv_cache.cpp)
  int64_t pool_sequences = 4;   // the derived pool: room for this many full-length sequences
  int block_tokens = 16;        // paged block size
  bool prefix_cache = false;    // paged only
  // Per layer (empty: none): 0 = the layer sees every position; W > 0 = a query at p sees the keys
  // at p-W < j <= p, so the layer keeps only its last W + rollback_tokens positions.
  std::vector<int32_t> layer_windows;
  int64_t rollback_tokens = 64;  // how far truncate() may go back from the newest position
  // Paged + prefix_cache: the prefix cache's blocks are also kept on disk (prefix_store.h): saved
  // when evicted and when the cache goes, read back on a lookup that misses in memory.
  std::shared_ptr<PrefixStore> store;
};

// One layer's K or V rows of a contiguous sequence (grown by resizing; huge pages when large).
using KvBytes = std::vector<uint8_t, HugePageAllocator<uint8_t>>;

class KvCache {
 public:
  KvCache(int n_layer, int n_head_kv, int head_dim, KvCacheOptions opts);
  ~KvCache();                        // with a disk store: saves every cached block first
  KvCache(const KvCache&) = delete;  // the prefix cache refers to the block allocators
  KvCache& operator=(const KvCache&) = delete;

  const KvCacheOptions& options() const { return opts_; }
  int n_layer() const { return n_layer_; }
  int n_head_kv() const { return n_head_kv_; }
  int head_dim() const { return head_dim_; }
  bool has(int seq) const { return seqs_.count(seq) != 0; }
  int64_t len(int seq) const;
  uint64_t ns(int seq) const;  // the prefix namespace of a sequence (append), 0 if unknown

  // Makes room for positions [len, new_len) of every (seq, new_len) pair together, creating
  // sequences on first use. All or nothing: throws CapacityError and changes nothing when the
  // pool (after evicting unused prefix-cache blocks) cannot hold them all, or Error when a
  // sequence would exceed seq_capacity.
  void reserve(std::span<const std::pair<int, int64_t>> requests);
  void reserve(int seq, int64_t new_len) {
    std::pair<int, int64_t> r{seq, new_len};
    reserve(std::span(&r, 1));
  }
  // Whether reserve() would succeed now (for admission control).
  bool can_reserve(std::span<const std::pair<int, int64_t>> requests) const;

  // Stores K and V of one token (floats, n_head_kv*head_dim each). pos < reserved length.
  void write(int layer, int seq, int64_t pos, const float* k, const float* v);
  // The rows of one sequence for write_rows(): token t at position pos[t], its key at
  // k + t * stride and its value at v + t * stride.
  struct Rows {
    int seq = 0;
    int64_t n = 0;
    const int64_t* pos = nullptr;
    const float* k = nullptr;
    const float* v = nullptr;
    int64_t stride = 0;
  };
  // Stores the K and V rows of a whole batch for one layer, the tokens split over `pool`'s threads
  // (each sequence looked up once, not once per token).
  void write_rows(int layer, std::span<const Rows> batch, ThreadPool& pool);
  // Records that tokens [len, len + ids.size()) are now in the cache. An id of -1 marks a
  // position computed from input rows rather than a token: blocks holding one are never offered
  // to the prefix cache. `ns`: the prefix-cache namespace of what computed the rows (0 for the
  // base model, a LoRA adapter's id otherwise): blocks are only shared within one namespace, and
  // a sequence keeps the namespace it started with.
  void append(int seq, std::span<const int32_t> ids, uint64_t ns = 0);
  void truncate(int seq, int64_t new_len);
  void release(int seq);
  void reset();

  kernels::KvSeqView view(int layer, int seq) const;

  // Prefix cache (paged + prefix_cache): attaches the longest run of cached full blocks matching
  // the start of `prompt` to the empty sequence `seq`, always leaving at least one token to
  // compute. Returns the number of tokens reused (then len(seq) == that number).
  int64_t reuse_prefix(int seq, std::span<const int32_t> prompt, uint64_t ns = 0);

  KvUsage stats() const;
  size_t bytes_per_token() const { return 2 * n_layer_ * row_bytes_; }
  // The most positions a layer of window `window` holds per sequence (whole blocks).
  int64_t window_rows(int32_t window) const {
    return window_rows(window, opts_.rollback_tokens, opts_.block_tokens, opts_.seq_capacity);
  }
  static int64_t window_rows(int32_t window, int64_t rollback, int64_t block_tokens, int64_t capacity);

 private:
  // Layers sharing one block table per sequence (see the top of this file).
  struct Group {
    int32_t window = 0;                     // 0: every position
    std::vector<int> layers;                // cache layer indices
    std::vector<HugeBytes> k_pool, v_pool;  // paged: per layer of the group
    int32_t keep_blocks = 0;  // windowed: blocks the prefix cache may hold beyond the sequences'
  };
  struct Seq {
    std::vector<std::vector<int32_t>>
        tables;                    // per group: block ids (-1: left the window), or {0} (contiguous)
    std::vector<int64_t> dropped;  // per group: leading blocks given up (windowed groups)
    std::vector<int32_t> tokens;   // ids of cached positions
    int64_t reserved = 0;          // rows with storage in every layer
    int64_t reserved_rows = 0;     // contiguous: rows of the private regions
    int registered = 0;            // leading full blocks already offered to the prefix cache
    uint64_t chain = 0;            // chain hash of those blocks
    uint64_t ns = 0;               // prefix namespace (append): the chain's root
    std::vector<KvBytes> k, v;     // contiguous: per layer of group 0
  };

  void make_groups(const std::vector<int32_t>& windows);
  bool paged(int g) const { return g > 0 || opts_.layout == KvLayout::Paged; }
  Seq& get(int seq);
  const Seq& get(int seq) const;
  Seq& create(int seq);
  int32_t blocks_needed(const Seq* s, int g, int64_t new_len) const;
  bool blocks_for(std::span<const std::pair<int, int64_t>> requests, std::vector<int64_t>& need) const;
  void grow(Seq& s, int64_t new_len);
  int64_t rows_with_storage(const Seq& s) const;
  void make_writable(Seq& s, int g, int64_t pos);
  void register_blocks(Seq& s);
  void drop_passed(Seq& s);  // windowed groups: the blocks no query to come needs
  // The disk store (kv_cache_disk.cpp): a cached block's K/V written to its file; a block read
  // back from its file into the pool and the prefix cache (a miss when it has none or no room).
  void save_entry(const PrefixCache::EntryView& e);
  PrefixCache::Hit restore(uint64_t parent, const int32_t* tokens);
  // The first position a query at `pos` of a layer with this window sees.
  static int64_t first_seen(int32_t window, int64_t pos) { return std::max<int64_t>(0, pos - window + 1); }
  uint8_t* group_ptr(int layer, bool is_k, Seq& s, int64_t pos);
  void store(int layer, Seq& s, int64_t pos, const float* k, const float* v);  // one token's K and V
  size_t effective_bytes_per_token() const;
  size_t window_held_bytes() const;  // K+V the windowed groups' blocks in use hold
  size_t held_bytes() const;         // K+V held now, every layer

  int n_layer_, n_head_kv_, head_dim_;
  KvCacheOptions opts_;
  size_t row_bytes_, block_bytes_;
  std::vector<Group> groups_;
  std::vector<std::pair<int, int>> layer_at_;  // layer -> (group, index in the group)
  std::vector<BlockAllocator> allocs_;         // per group (group 0's unused when contiguous)
  std::unordered_map<int, Seq> seqs_;
  int64_t max_contiguous_seqs_ = 0;
  int64_t contiguous_rows_ = 0;  // contiguous: private rows of all sequences
  size_t peak_held_ = 0;         // the most held_bytes() after a reserve

  PrefixCache prefix_{allocs_};  // paged + prefix_cache: full blocks kept for reuse
};

}  // namespace ferrum::runtime
