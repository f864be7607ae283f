// BERT encoder (BertModel / sentence-transformers): token + absolute position + token-type
// embeddings, LayerNorm, post-norm encoder blocks (bidirectional attention through the shared
// kernel, GELU MLP). It is a Model without a KV cache: forward() runs each item as a whole
// sentence and gives its final hidden states (no logits); pooling and normalization are
// ferrum/embeddings.h's, as for decoders.
//
// GELU is the exact erf form, as Hugging Face's BertModel ("gelu") computes it. llama.cpp uses
// the tanh approximation 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))) through an F16 lookup table;
// on the test fixtures that moves raw pooled embeddings by ~4e-4 (mean) / 1e-3 (CLS).
//
// Opening one from its files (with its tokenizer) is load_model, through loading/encoder.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "ferrum/model.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/matmul.h"
#include "models/weights.h"

namespace ferrum {

class BertModel final : public Model {
 public:
  // cfg.pooling / cfg.normalize: what the model's files ask for (GGUF bert.pooling_type,
  // sentence-transformers 1_Pooling and 2_Normalize).
  BertModel(ModelConfig cfg, WeightSet weights, const ModelOptions& opts);

  const ModelConfig& config() const override { return cfg_; }
  const ModelOptions& options() const override { return opts_; }
  // Each item is a whole sentence of token ids (positions from 0; `kv` is neither read nor
  // changed) that wants hidden states (Want::All or Want::Last), never logits. Sentences are run
  // together, each attending only to its own tokens, so a sentence's states do not depend on the
  // rest of the batch. Throws for an empty sentence, an out-of-range id, a sentence longer than
  // the position table, input rows or logits.
  void forward(KvCache& kv, std::span<const SeqInput> batch, ForwardOut out) override;
  // Refused: an encoder's embedding rows depend on positions and token types, and forward()
  // takes token ids only.
  void embed_tokens(std::span<const int32_t> ids, float* rows) const override;
  size_t weight_bytes() const override { return weights_.total_bytes(); }
  ModelStats stats() const override { return stats_; }

 private:
  struct Layer {
    kernels::Linear qkv, wo, up, down;  // q, k, v stacked: one product gives a token's q|k|v row
    std::vector<float> b_qkv;           // their biases, stacked the same way
    const float *bo, *b_up, *b_down;
    const float *attn_norm_w, *attn_norm_b, *out_norm_w, *out_norm_b;
  };
  const float* f32(const std::string& name, int64_t n);
  void load_layer(int l, Layer& L);
  void check(std::span<const SeqInput> batch) const;
  // Runs the sentences of the batch; final states land in x_ (rows packed, from starts_[s]).
  void encode(std::span<const SeqInput> batch);
  void embed_rows(std::span<const SeqInput> batch);
  void attention(std::span<const SeqInput> batch);
  void add_and_norm(int64_t T, const float* w, const float* b);
  void linear(const kernels::Linear& w, const float* bias, const float* x, int64_t ldx, int64_t n, float* y,
              int64_t ldy);

  ModelConfig cfg_;
  WeightSet weights_;
  ModelOptions opts_;
  ModelStats stats_;
  ThreadPool pool_;
  kernels::Precision kprec_;
  kernels::MatmulScratch scratch_;

  TensorView tok_embd_, pos_embd_, type_embd_;
  const float *embd_norm_w_ = nullptr, *embd_norm_b_ = nullptr;
  std::vector<Layer> layers_;

  // Workspace (grow-only).
  std::vector<float> x_, qkv_, attn_, tmp_, ff_, row_;
  std::vector<int64_t> starts_;
  // Attention: each sentence's keys and values in the cache layout, from token kv_starts_[s].
  std::vector<uint8_t> k_, v_;
  std::vector<int64_t> kv_starts_;
  std::vector<kernels::AttentionJob> jobs_;
  kernels::AttentionScratch attn_scratch_;
};

}  // namespace ferrum
