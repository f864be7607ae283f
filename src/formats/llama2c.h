// llama2.c files: the legacy checkpoint (7 x int32 header, then float32 weights) and the
// tokenizer.bin export. The checkpoint is memory-mapped; its tensors are exposed as F32
// TensorViews in GGUF dimension order (a llama2.c (rows, cols) matrix has ne = {cols, rows}).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/mmap.h"
#include "core/tensor.h"

namespace ferrum::llama2c {

struct Config {
  int32_t dim = 0;
  int32_t hidden_dim = 0;
  int32_t n_layers = 0;
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;
  int32_t vocab_size = 0;  // absolute value of the header field
  int32_t seq_len = 0;
  bool shared_classifier = true;  // header vocab_size > 0

  int32_t head_dim() const { return dim / n_heads; }
  int32_t kv_dim() const { return head_dim() * n_kv_heads; }
};

struct Layer {
  TensorView rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3;
};

class Checkpoint {
 public:
  // Validates the header and that the file size matches it exactly.
  static Checkpoint open(const std::string& path);

  const Config& config() const { return cfg_; }
  const TensorView& token_embedding() const { return tok_; }  // ne {dim, vocab}
  const std::vector<Layer>& layers() const { return layers_; }
  const TensorView& rms_final() const { return rms_final_; }
  // The classifier: the embedding itself when shared.
  const TensorView& wcls() const { return cfg_.shared_classifier ? tok_ : wcls_; }
  const std::string& path() const { return map_.path(); }

 private:
  MappedFile map_;
  Config cfg_;
  TensorView tok_, rms_final_, wcls_;
  std::vector<Layer> layers_;
};

struct Tokenizer {
  int32_t max_token_length = 0;
  std::vector<std::string> tokens;  // raw bytes as stored (' ' for SentencePiece's U+2581)
  std::vector<float> scores;
};

// Reads tokenizer.bin. With n_tokens, exactly that many tokens must be present (and nothing
// after them); without, tokens are read to the end of the file.
Tokenizer read_tokenizer(const std::string& path, std::optional<int32_t> n_tokens = std::nullopt);

}  // namespace ferrum::llama2c
