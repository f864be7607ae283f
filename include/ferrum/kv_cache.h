// The KV cache: keys and values of any number of sequences, keyed by an integer sequence id the
// caller chooses. It is a runtime object the caller owns and passes to Model::forward (the model
// holds only weights), so caches can be created, dropped and sized independently of the model,
// and admission control, preemption and prefix reuse talk to the cache directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ferrum/kv_types.h"

namespace ferrum {

namespace runtime {
class KvCache;
}
class Model;
struct ModelConfig;

struct KvOptions {
  KvLayout layout = KvLayout::Contiguous;
  std::optional<KvType> type;         // unset = kDefaultKvType
  int64_t capacity = 0;               // tokens per sequence; 0 = min(training context, 4096)
  int64_t pool_tokens = 0;            // tokens over all sequences; 0 = pool_sequences x capacity,
                                      // at most a quarter of the free memory
  bool prefix_cache = false;          // reuse cached prompt prefixes (paged only)
  // Full-length sequences a default pool (pool_tokens 0) holds; 0 = 4. Last, so that brace
  // initialisation of the fields above keeps its meaning.
  int64_t pool_sequences = 0;
  // Layers with a sliding window keep their window plus this many positions, so that a sequence
  // can be rolled back (truncate) this far; -1 = 64. Speculative decoding needs its draft length.
  int64_t rollback_tokens = -1;
  // Keeps the prefix cache's blocks on disk too (paged + prefix_cache): a block is saved when it is
  // evicted and when the cache goes, and read back on a lookup that misses in memory, so cached
  // prompts survive a restart. Files are kept apart by prefix_cache_key (what computed the K/V:
  // the caller's model fingerprint, precision and kernels) and the cache's own layout; a file of
  // another key, layout or format is ignored with a log line. Empty: no disk store.
  std::string prefix_cache_dir{};
  std::string prefix_cache_key{};
  uint64_t prefix_cache_dir_bytes = 0;  // the folder's size limit (oldest files removed); 0: 8 GiB
  // Fills unset fields from FERRUM_KV_LAYOUT, FERRUM_KV_TYPE, FERRUM_KV_CAPACITY, FERRUM_KV_POOL,
  // FERRUM_PREFIX_CACHE (a type set explicitly, f32 included, is kept); throws naming a variable
  // whose value is not valid.
  void apply_env();
};

struct KvUsage {
  int64_t seq_capacity = 0, block_tokens = 0, total_blocks = 0, free_blocks = 0, used_tokens = 0,
          sequences = 0;
  size_t bytes_per_token = 0, pool_bytes = 0;
  int64_t prefix_hits = 0, prefix_misses = 0, prefix_saved_tokens = 0, prefix_entries = 0;
  size_t prefix_bytes = 0;  // K+V of the cached prefix blocks (the layers that keep every position)
  size_t held_bytes = 0;    // K+V the cache holds now (blocks in use or private regions, all layers)
  size_t peak_held_bytes = 0;  // the most it held after any reserve so far
  // Layers with a sliding window keep only their last window_rows positions of each sequence:
  int64_t window_layers = 0, window_rows = 0;
  size_t window_held_bytes = 0;  // K+V the windowed layers hold now (part of held_bytes)
  // With a prefix_cache_dir: cached blocks read back from disk, and written to it.
  int64_t prefix_disk_reads = 0, prefix_disk_writes = 0;
};

// A change a caller made to a cache outside forward passes (truncate, release, reset, reserve,
// reuse_prefix; its creation and destruction), recorded in order when the cache has a journal: a
// pipeline's later stages replay them on caches of their own, so every stage holds the same
// sequences.
struct KvOp {
  enum class Kind : uint8_t { Truncate, Release, Reset, Reserve, Reuse, Create, Drop };
  Kind kind = Kind::Reset;
  int cache = 0;                // which cache (KvCache::set_journal)
  int seq = 0;
  int64_t n = 0;                // Truncate: the new length; Reserve: tokens; Reuse: tokens reused
  uint64_t lora_id = 0;         // Reuse
  std::vector<int32_t> prompt;  // Reuse
  KvOptions options;            // Create: the cache's options, resolved
};

// Where caches record their KvOps (several caches, each from its own thread, may share one).
class KvJournal {
 public:
  void push(KvOp op) {
    std::lock_guard lk(mu_);
    ops_.push_back(std::move(op));
  }
  std::vector<KvOp> take() {
    std::lock_guard lk(mu_);
    return std::exchange(ops_, {});
  }

 private:
  std::mutex mu_;
  std::vector<KvOp> ops_;
};

class KvCache {
 public:
  // A cache shaped for `model`: its layers (only those of its layer range when it is a stage),
  // KV heads and head size. Throws naming a bad option (layout, type, sizes).
  static std::unique_ptr<KvCache> for_model(const Model& model, const KvOptions& opts);
  // A cache of n_layer layers of n_head_kv x head_dim keys and values per token; a capacity of
  // 0 becomes default_capacity. layer_windows (empty, or one per layer): a layer's sliding window
  // (0: none); a windowed layer keeps only its window (and the rollback) of each sequence.
  KvCache(int n_layer, int n_head_kv, int head_dim, const KvOptions& opts, int64_t default_capacity = 4096,
          std::vector<int32_t> layer_windows = {});
  ~KvCache();
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  const KvOptions& options() const { return opts_; }  // with type, capacity and pool size resolved
  int64_t capacity() const;                           // tokens per sequence
  int n_layer() const;

  int64_t seq_len(int seq) const;  // 0 for an unknown sequence
  bool has(int seq) const;
  void truncate(int seq, int64_t new_len);  // roll back to the first new_len tokens
  void release(int seq);                    // frees the sequence; throws if unknown
  void reset();                             // frees every sequence and cached prefix
  // Reserves room so `seq` can grow to max_tokens without further allocation (warm-up).
  void reserve(int seq, int64_t max_tokens);
  // Whether the cache can grow these sequences to these lengths now (admission control).
  bool can_fit(std::span<const std::pair<int, int64_t>> seq_lengths) const;
  // Prefix cache: attaches cached blocks matching the start of `prompt` to the empty sequence
  // `seq`; returns how many tokens need no prefill (0 when the cache is off or misses).
  // lora_id: the LoRA adapter the sequence will run with (ferrum/lora.h: lora_id), 0 for none;
  // blocks computed with one adapter are only reused by sequences with the same one.
  int64_t reuse_prefix(int seq, std::span<const int32_t> prompt, uint64_t lora_id = 0);
  KvUsage usage() const;

  // Records this cache's creation and every later change made through this class (its
  // destruction included) into `journal`, as cache number `id`. A cache may have several journals
  // (a pipeline whose first stage is split over tensor-parallel ranks keeps one for each).
  void set_journal(KvJournal* journal, int id);

  // The implementation the models read and write (internal).
  runtime::KvCache& impl() { return *impl_; }
  const runtime::KvCache& impl() const { return *impl_; }

 private:
  void record(KvOp::Kind kind, int seq = 0, int64_t n = 0, KvOp op = {}) {
    op.kind = kind;
    op.seq = seq;
    op.n = n;
    for (const auto& [journal, id] : journals_) {
      op.cache = id;
      journal->push(op);
    }
  }
  KvOptions opts_;
  std::unique_ptr<runtime::KvCache> impl_;
  std::vector<std::pair<KvJournal*, int>> journals_;
};

// K and V bytes one sequence of `tokens` positions takes in a model of this shape (a cache with the
// default block size and rollback): a layer with a sliding window counts only its window.
size_t kv_sequence_bytes(const ModelConfig& c, KvType type, int64_t tokens);

}  // namespace ferrum
