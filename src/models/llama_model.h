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
#include "models/lora_apply.h"
#include "models/tensor_parallel.h"
#include "models/weights.h"
#include "runtime/kv_cache.h"

namespace ferrum {

class LlamaModel : public Model {
 public:
  LlamaModel(ModelConfig cfg, WeightSet weights, ModelOptions opts);

  const ModelConfig& config() const override { return cfg_; }
  const ModelOptions& options() const override { return opts_; }
  void forward(KvCache& kv, std::span<const SeqInput> batch, ForwardOut out) override;
  void embed_tokens(std::span<const int32_t> ids, float* rows) const override;
  size_t weight_bytes() const override { return weights_.total_bytes(); }
  ModelStats stats() const override { return stats_; }

 private:
  struct Layer {
    const float* attn_norm = nullptr;
    kernels::Linear qkv;              // one fused tensor, or q, k, v stacked
    const float* bias_qkv = nullptr;  // q|k|v biases concatenated, or null
    const float* q_norm = nullptr;
    const float* k_norm = nullptr;
    bool rope = true;       // false in SmolLM3's layers without positions
    bool rope_swa = false;  // Gemma 3's windowed layers: their own RoPE base (rope_swa_)
    kernels::Linear wo;
    const float* wo_bias = nullptr;  // gpt-oss (any family whose file has attn_output.bias)
    const float* sinks = nullptr;    // gpt-oss: a logit per query head in every softmax's denominator
    const float* ffn_norm = nullptr;
    const float* attn_post_norm = nullptr;  // Gemma: on the attention and FFN outputs
    const float* ffn_post_norm = nullptr;
    std::unique_ptr<FeedForward> ffn;  // dense SwiGLU or mixture of experts
  };

  void check_options();
  void bind_weights();
  void bind_layer(int l);
  const float* f32_tensor(const std::string& name, int64_t n, bool required = true);
  void matmul(const kernels::Linear& w, const float* x, int64_t ldx, int64_t n, float* y, int64_t ldy);
  void ensure_workspace(int64_t n);
  // Validates the batch and reserves cache room for all of it; returns the number of new rows.
  int64_t plan(runtime::KvCache& kv, std::span<const SeqInput> batch, ForwardOut out);
  void load_inputs(const runtime::KvCache& kv, std::span<const SeqInput> batch);
  void run_layer(int l, runtime::KvCache& kv, std::span<const SeqInput> batch, int64_t n);
  void norm_rows(const float* x, const float* w, float* out, int64_t n);
  void rope_qk(const Layer& L, int64_t n);
  void write_kv(int kl, runtime::KvCache& kv, std::span<const SeqInput> batch);
  void add_residual(const float* y, int64_t n);
  void sum_over_ranks(float* y, int64_t n);  // tensor parallelism: a block's partial outputs added
  void head_logits(const float* h, int64_t rows, float* logits);
  void write_outputs(std::span<const SeqInput> batch, ForwardOut out);

  ModelConfig cfg_;
  WeightSet weights_;
  ModelOptions opts_;
  ThreadPool pool_;
  kernels::Precision kprec_;
  kernels::WeightRounding rounding_;  // BF16 precision: F16/F32 matrices multiplied as BF16

  TensorView tok_embd_;  // unset for a stage that starts after layer 0 (and has no tied head)
  kernels::Linear output_;
  const float* output_norm_ = nullptr;  // set when the stage ends at the last layer
  std::vector<Layer> layers_;           // layers [layer_begin, layer_end)
  TensorParallelGroup* tp_ = nullptr;   // this rank's share of every layer (null: the whole model)
  int64_t head_rows_ = 0;               // the LM head's rows here: the vocabulary, or this rank's share
  std::vector<int64_t> head_shares_;    // tensor parallelism: every rank's head rows
  std::vector<float> logit_part_;       // tensor parallelism: this rank's logit columns

  // Workspace, grown to the largest batch seen (never per token).
  int64_t ws_tokens_ = 0;
  std::vector<float> x_, h_, qkv_, attn_, tmp_, rope_;
  std::vector<float> rope_swa_;  // cos/sin of the windowed layers (Gemma 3: rope_theta_swa, unscaled)
  float rope_mscale_ = 1.0f;     // cos/sin scale of the scaled RoPE (YaRN's attention factor)
  std::vector<int64_t> pos_;
  std::vector<int32_t> no_ids_;  // -1 ids recorded in the cache for input rows
  std::vector<kernels::AttentionJob> jobs_;
  std::vector<runtime::KvCache::Rows> kv_rows_;  // write_kv's batch, kept to spare allocations
  std::vector<std::pair<int, int64_t>> requests_;
  kernels::MatmulScratch mm_scratch_;
  kernels::AttentionScratch attn_scratch_;
  LoraBatch lora_;  // the current batch's adapters
  ModelStats stats_;
};

}  // namespace ferrum
