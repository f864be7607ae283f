// The Llama-family decoder: Llama 1/2/3, Mistral, Qwen2/2.5, Qwen3 as variants of one
// implementation (RoPE layout and scaling, q/k/v biases, per-head QK-norm, sliding window, GQA,
// tied embeddings), all taken from ModelConfig and the weights present.
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include "core/thread_pool.h"
#include "ferrum/model.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/matmul.h"
#include "models/feed_forward.h"
#include "models/weights.h"

namespace ferrum {

class LlamaModel : public Model {
 public:
  LlamaModel(ModelConfig cfg, WeightSet weights, ModelOptions opts);

  const ModelConfig& config() const override { return cfg_; }
  const ModelOptions& options() const override { return opts_; }
  void prefill(int seq, std::span<const int32_t> tokens, float* logits, bool all_logits) override;
  void decode(int seq, int32_t token, int64_t pos, float* logits) override;
  int64_t seq_len(int seq) const override;
  void truncate_kv(int seq, int64_t new_len) override;
  void release(int seq) override;
  void reset() override { seqs_.clear(); }
  int64_t kv_capacity() const override { return capacity_; }
  size_t weight_bytes() const override { return weights_.total_bytes(); }

 private:
  // A matrix product whose output lands in columns [col, col + rows) of a wider activation row.
  struct Part {
    TensorView w;
    int64_t col = 0;
  };
  struct Layer {
    const float* attn_norm = nullptr;
    std::vector<Part> qkv;  // one fused part, or q, k, v
    const float* bias_qkv = nullptr;  // q|k|v biases concatenated (owned by weights_) or null
    const float* q_norm = nullptr;
    const float* k_norm = nullptr;
    TensorView wo;
    const float* ffn_norm = nullptr;
    std::unique_ptr<FeedForward> ffn;  // dense SwiGLU or mixture of experts
  };
  struct Sequence {
    int64_t len = 0;
    std::vector<std::vector<float>> k, v;  // per layer: len * kv_dim
  };

  void bind_weights();
  const float* f32_tensor(const std::string& name, int64_t n, bool required = true);
  Sequence& sequence(int seq);
  void forward_chunk(Sequence& s, const int32_t* tokens, int64_t n, float* logits, bool all_logits);
  void matmul(const TensorView& w, const float* x, int64_t ldx, int64_t n, float* y, int64_t ldy);
  void ensure_workspace(int64_t n);

  ModelConfig cfg_;
  WeightSet weights_;
  ModelOptions opts_;
  int64_t capacity_;
  ThreadPool pool_;
  kernels::Precision kprec_;

  TensorView tok_embd_, output_;
  const float* output_norm_ = nullptr;
  std::vector<Layer> layers_;

  std::unordered_map<int, Sequence> seqs_;

  // Workspace, grown to the largest chunk seen (never per token).
  int64_t ws_tokens_ = 0;
  std::vector<float> x_, h_, qkv_, attn_, tmp_, rope_;
  kernels::MatmulScratch mm_scratch_;
  kernels::AttentionScratch attn_scratch_;
};

}  // namespace ferrum
