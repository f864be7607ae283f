// Per-sequence KV caches for all layers of a model, contiguous or paged.
//
// Paged: every layer has a pool of fixed-size blocks (block_tokens rows each); a sequence owns a
// table of block ids shared by all layers. Blocks are reference counted, so sequences and the
// prefix cache can share full blocks; a block is written only when exactly one owner holds it
// (otherwise it is copied first). Contiguous: each sequence gets one private region of
// seq_capacity rows (a table of one block). Callers never see the difference.
#pragma once

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
};

// One layer's K or V rows of a contiguous sequence (grown by resizing; huge pages when large).
using KvBytes = std::vector<uint8_t, HugePageAllocator<uint8_t>>;

class KvCache {
 public:
  KvCache(int n_layer, int n_head_kv, int head_dim, KvCacheOptions opts);
  KvCache(const KvCache&) = delete;  // the prefix cache refers to the block allocator
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

 private:
  struct Seq {
    std::vector<int32_t> table;              // block ids (paged) or {0} with a private region (contiguous)
    std::vector<int32_t> tokens;             // ids of cached positions
    int64_t reserved = 0;                    // rows with storage
    int registered = 0;                      // leading full blocks already offered to the prefix cache
    uint64_t chain = 0;                      // chain hash of those blocks
    uint64_t ns = 0;                         // prefix namespace (append): the chain's root
    std::vector<KvBytes> k, v;               // contiguous: per layer
  };

  Seq& get(int seq);
  const Seq& get(int seq) const;
  int32_t blocks_needed(const Seq* s, int64_t new_len) const;
  void make_writable(Seq& s, int64_t pos);
  void register_blocks(Seq& s);
  uint8_t* group_ptr(int layer, bool is_k, Seq& s, int64_t pos);
  void store(int layer, Seq& s, int64_t pos, const float* k, const float* v);  // one token's K and V

  int n_layer_, n_head_kv_, head_dim_;
  KvCacheOptions opts_;
  size_t row_bytes_, block_bytes_;
  BlockAllocator alloc_;
  std::vector<HugeBytes> k_pool_, v_pool_;  // paged: per layer (pages committed on first use)
  std::unordered_map<int, Seq> seqs_;
  int64_t max_contiguous_seqs_ = 0;

  PrefixCache prefix_{alloc_};  // paged + prefix_cache: full blocks kept for reuse
};

}  // namespace ferrum::runtime
