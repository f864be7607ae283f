// The model interface every decoder implements. A model holds weights and the KV caches of any
// number of sequences, keyed by an integer sequence id chosen by the caller. Whether the cache
// is contiguous or paged is a load option; callers never need to know.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ferrum/model_config.h"

namespace ferrum {

// Exact: activations stay F32 in every matmul (reference path).
// Fast:  activations are quantized/rounded to the weight type's partner as llama.cpp does.
enum class Precision { Exact, Fast };

struct KvOptions {
  std::string layout = "contiguous";  // "contiguous" or "paged"
  std::string type = "f32";           // "f32", "f16", "bf16", "int8"
  int64_t capacity = 0;               // tokens per sequence; 0 = min(training context, 4096)
  int64_t pool_tokens = 0;            // tokens over all sequences; 0 = 4 x capacity, <= 1/4 of free memory
  bool prefix_cache = false;          // reuse cached prompt prefixes (paged only)
  // Fills unset fields from FERRUM_KV_LAYOUT, FERRUM_KV_TYPE, FERRUM_KV_CAPACITY, FERRUM_KV_POOL,
  // FERRUM_PREFIX_CACHE.
  void apply_env();
};

struct ModelOptions {
  int n_threads = 0;  // 0 = all available cores
  Precision precision = Precision::Fast;
  KvOptions kv;
  int64_t max_batch = 256;  // tokens per internal forward chunk of prefill()
};

// One sequence's share of a forward pass: `tokens` continue the sequence at position seq_len(seq).
struct SeqTokens {
  int seq = 0;
  std::span<const int32_t> tokens;
  bool want_logits = true;  // logits of the last token
  bool all_logits = false;  // logits of every token (speculative verify, eval)
};

struct DecodeItem {
  int seq = 0;
  int32_t token = 0;
  int64_t pos = 0;  // must equal seq_len(seq)
};

struct KvUsage {
  int64_t seq_capacity = 0, block_tokens = 0, total_blocks = 0, free_blocks = 0, used_tokens = 0, sequences = 0;
  size_t bytes_per_token = 0, pool_bytes = 0;
};

class Model {
 public:
  virtual ~Model() = default;

  virtual const ModelConfig& config() const = 0;
  virtual const ModelOptions& options() const = 0;

  // One forward pass over a mix of prefill chunks and decode tokens of different sequences
  // (each at most once), with the matrix products batched across all of them. Logit rows are
  // written in item order: one row per item with want_logits, tokens.size() rows with
  // all_logits, none otherwise. All or nothing: when the KV cache cannot hold the new tokens a
  // CapacityError is thrown and no sequence changes.
  virtual void unified_forward(std::span<const SeqTokens> items, float* logits) = 0;

  // Appends `tokens` to `seq` (created on first use); logits of the last token (or of every
  // token when all_logits; none when logits is null). Long prompts are processed in chunks; a
  // second call continues.
  void prefill(int seq, std::span<const int32_t> tokens, float* logits, bool all_logits = false);
  // One token at position `pos`, which must equal seq_len(seq).
  void decode(int seq, int32_t token, int64_t pos, float* logits);
  // Several sequences, one token each, in one pass: logits rows in item order.
  void decode_batch(std::span<const DecodeItem> items, float* logits);
  // Speculative decoding: logits for every position of `tokens` appended to `seq`.
  void forward_verify(int seq, std::span<const int32_t> tokens, float* logits);

  virtual int64_t seq_len(int seq) const = 0;              // 0 for an unknown sequence
  virtual void truncate_kv(int seq, int64_t new_len) = 0;  // roll back to the first new_len tokens
  virtual void release(int seq) = 0;                       // frees the sequence; throws if unknown
  virtual void reset() = 0;                                // frees every sequence and cached prefix
  // Reserves cache room so `seq` can grow to max_tokens without further allocation (warm-up).
  virtual void prepare(int seq, int64_t max_tokens) = 0;
  // Whether the cache can grow these sequences to these lengths now (admission control).
  virtual bool can_fit(std::span<const std::pair<int, int64_t>> seq_lengths) const = 0;
  // Prefix cache: attaches cached blocks matching the start of `prompt` to the empty sequence
  // `seq`; returns how many tokens need no prefill (0 when the cache is off or misses).
  virtual int64_t reuse_prefix(int seq, std::span<const int32_t> prompt) = 0;

  virtual int64_t kv_capacity() const = 0;  // tokens per sequence
  virtual KvUsage kv_usage() const = 0;
  virtual nlohmann::json metrics_json() const = 0;
  virtual size_t weight_bytes() const = 0;
};

}  // namespace ferrum
