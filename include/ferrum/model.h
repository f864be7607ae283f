// The model interface every decoder implements. A model holds weights and the KV caches of any
// number of sequences, keyed by an integer sequence id chosen by the caller.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ferrum/model_config.h"

namespace ferrum {

// Exact: activations stay F32 in every matmul (reference path).
// Fast:  activations are quantized/rounded to the weight type's partner as llama.cpp does.
enum class Precision { Exact, Fast };

struct ModelOptions {
  int n_threads = 0;        // 0 = all available cores
  Precision precision = Precision::Fast;
  int64_t kv_capacity = 0;  // tokens per sequence; 0 = min(training context, 4096)
  int64_t max_batch = 256;  // tokens per internal forward chunk
};

class Model {
 public:
  virtual ~Model() = default;

  virtual const ModelConfig& config() const = 0;
  virtual const ModelOptions& options() const = 0;

  // Appends `tokens` to sequence `seq` (created on first use) at positions seq_len(seq)...
  // Writes the logits of the last token to `logits` (n_vocab floats), or of every token when
  // all_logits is set (tokens.size() * n_vocab floats). A second call continues the sequence.
  virtual void prefill(int seq, std::span<const int32_t> tokens, float* logits, bool all_logits = false) = 0;
  // One token at position `pos`, which must equal seq_len(seq).
  virtual void decode(int seq, int32_t token, int64_t pos, float* logits) = 0;

  virtual int64_t seq_len(int seq) const = 0;         // 0 for an unknown sequence
  virtual void truncate_kv(int seq, int64_t new_len) = 0;  // roll back to the first new_len tokens
  virtual void release(int seq) = 0;                  // frees the sequence; throws if unknown
  virtual void reset() = 0;                           // frees every sequence
  virtual int64_t kv_capacity() const = 0;            // tokens per sequence
  virtual size_t weight_bytes() const = 0;
};

}  // namespace ferrum
