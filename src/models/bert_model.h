// BERT encoder for sentence embeddings (BertModel / sentence-transformers): token + absolute
// position + token-type embeddings, LayerNorm, post-norm encoder blocks (bidirectional
// attention, GELU MLP), then pooling (mean over the sentence's tokens, CLS, or last token) and
// optional L2 normalization. Not a decoder: it has no KV cache and no generation interface.
//
// GELU is the exact erf form, as Hugging Face's BertModel ("gelu") computes it. llama.cpp uses
// the tanh approximation 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))) through an F16 lookup table;
// on the test fixtures that moves raw pooled embeddings by ~4e-4 (mean) / 1e-3 (CLS).
//
// Opening one from its files (with its tokenizer) is load_bert, in loading/loader.h.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "ferrum/model.h"
#include "kernels/cpu/matmul.h"
#include "models/pooling.h"
#include "models/weights.h"

namespace ferrum {

class BertModel {
 public:
  // default_pooling / default_normalize: what the model's files ask for (GGUF bert.pooling_type,
  // sentence-transformers 1_Pooling and 2_Normalize).
  BertModel(ModelConfig cfg, WeightSet weights, const ModelOptions& opts, Pooling default_pooling,
            bool default_normalize);

  const ModelConfig& config() const { return cfg_; }
  Pooling default_pooling() const { return pooling_; }
  bool default_normalize() const { return normalize_; }
  int64_t max_positions() const { return n_pos_; }
  int64_t dim() const { return cfg_.n_embd; }
  size_t weight_bytes() const { return weights_.total_bytes(); }

  // One pooled vector (n_embd floats) per sentence. Sentences of different lengths are run
  // together; each attends only to its own tokens (the padding mask), so a sentence's vector
  // does not depend on the rest of the batch. Throws for an empty sentence, an out-of-range id,
  // or a sentence longer than the position table.
  std::vector<std::vector<float>> embed(const std::vector<std::vector<int32_t>>& batch, Pooling pooling,
                                        bool normalize);
  // Final hidden states of every token, sentences concatenated (sum of lengths x n_embd).
  std::vector<float> token_states(const std::vector<std::vector<int32_t>>& batch);

 private:
  struct Layer {
    TensorView wq, wk, wv, wo, up, down;
    const float *bq, *bk, *bv, *bo, *b_up, *b_down;
    const float *attn_norm_w, *attn_norm_b, *out_norm_w, *out_norm_b;
  };
  const float* f32(const std::string& name, int64_t n);
  void round_to_bf16(Layer& L);
  void check(const std::vector<std::vector<int32_t>>& batch) const;
  // Runs sentences [first, last) of the batch; final states land in x_ (rows packed).
  void forward(const std::vector<std::vector<int32_t>>& batch, size_t first, size_t last);
  void attention(const std::vector<std::vector<int32_t>>& batch, size_t first, size_t last);
  void linear(const TensorView& w, const float* bias, const float* x, int64_t ldx, int64_t n, float* y,
              int64_t ldy);

  ModelConfig cfg_;
  WeightSet weights_;
  ModelOptions opts_;
  Pooling pooling_;
  bool normalize_;
  int64_t n_pos_ = 0;
  ThreadPool pool_;
  kernels::Precision kprec_;
  std::vector<std::shared_ptr<const uint8_t>> copies_;  // BF16 copies of the matrices (--precision bf16)
  kernels::MatmulScratch scratch_;

  TensorView tok_embd_, pos_embd_, type_embd_;
  const float *embd_norm_w_ = nullptr, *embd_norm_b_ = nullptr;
  std::vector<Layer> layers_;

  // Workspace (grow-only).
  std::vector<float> x_, qkv_, attn_, tmp_, ff_, row_;
  std::vector<int64_t> starts_;
  std::vector<float> scores_;  // per thread: one row of attention scores
};

}  // namespace ferrum
