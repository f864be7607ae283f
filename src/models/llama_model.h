// The Llama-family decoder: Llama 1/2/3, Mistral, Qwen2/2.5, Qwen3 (and Qwen3-MoE through its
// feed-forward block) as variants of one implementation: RoPE layout and scaling, q/k/v biases,
// per-head QK-norm, sliding window, GQA, tied embeddings, all from ModelConfig and the weights.
#pragma once

#include <memory>
#include <vector>

#include "core/thread_pool.h"
#include "ferrum/model.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/matmul.h"
#include "models/feed_forward.h"
#include "models/weights.h"
#include "runtime/kv_cache.h"

namespace ferrum {

class LlamaModel : public Model {
 public:
  LlamaModel(ModelConfig cfg, WeightSet weights, ModelOptions opts);

  const ModelConfig& config() const override { return cfg_; }
  const ModelOptions& options() const override { return opts_; }
  void unified_forward(std::span<const SeqTokens> items, float* logits) override;
  int64_t seq_len(int seq) const override { return kv_.len(seq); }
  void truncate_kv(int seq, int64_t new_len) override;
  void release(int seq) override { kv_.release(seq); }
  void reset() override { kv_.reset(); }
  void prepare(int seq, int64_t max_tokens) override;
  bool can_fit(std::span<const std::pair<int, int64_t>> seq_lengths) const override { return kv_.can_reserve(seq_lengths); }
  int64_t reuse_prefix(int seq, std::span<const int32_t> prompt) override { return kv_.reuse_prefix(seq, prompt); }
  int64_t kv_capacity() const override { return kv_.options().seq_capacity; }
  KvUsage kv_usage() const override;
  nlohmann::json metrics_json() const override;
  size_t weight_bytes() const override { return weights_.total_bytes(); }

 private:
  struct Layer {
    const float* attn_norm = nullptr;
    kernels::Linear qkv;              // one fused tensor, or q, k, v stacked
    const float* bias_qkv = nullptr;  // q|k|v biases concatenated, or null
    const float* q_norm = nullptr;
    const float* k_norm = nullptr;
    kernels::Linear wo;
    const float* ffn_norm = nullptr;
    std::unique_ptr<FeedForward> ffn;  // dense SwiGLU or mixture of experts
  };

  void bind_weights();
  const float* f32_tensor(const std::string& name, int64_t n, bool required = true);
  void matmul(const kernels::Linear& w, const float* x, int64_t ldx, int64_t n, float* y, int64_t ldy);
  void ensure_workspace(int64_t n);

  ModelConfig cfg_;
  WeightSet weights_;
  ModelOptions opts_;
  ThreadPool pool_;
  kernels::Precision kprec_;
  runtime::KvCache kv_;

  TensorView tok_embd_;
  kernels::Linear output_;
  const float* output_norm_ = nullptr;
  std::vector<Layer> layers_;

  // Workspace, grown to the largest batch seen (never per token).
  int64_t ws_tokens_ = 0;
  std::vector<float> x_, h_, qkv_, attn_, tmp_, rope_;
  std::vector<int64_t> pos_;
  std::vector<kernels::AttentionJob> jobs_;
  std::vector<std::pair<int, int64_t>> requests_;
  kernels::MatmulScratch mm_scratch_;
  kernels::AttentionScratch attn_scratch_;
  int64_t forward_calls_ = 0, forward_tokens_ = 0;
};

// Parses KvOptions (layout/type names) into the runtime's options; throws naming a bad value.
runtime::KvCacheOptions kv_cache_options(const KvOptions& o, int64_t default_capacity);

}  // namespace ferrum
