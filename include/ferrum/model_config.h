// Hyper-parameters of a model, independent of the file format it came from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ferrum {

enum class Arch { Llama, Mistral, Qwen2, Qwen3, Qwen3Moe, Bert, SmolLM3, Phi3, Gemma2, Gemma3, GptOss };

const char* arch_name(Arch a);

// How a sequence's final hidden states become one sentence embedding: the mean of its rows, its
// first row (the [CLS] token of an encoder) or its last row.
enum class Pooling { Mean, Cls, Last };

struct ModelConfig {
  Arch arch = Arch::Llama;
  std::string name;  // general.name or directory name
  // A GPTQ/AWQ directory's quantization ("GPTQ 4-bit, group 128, act-order"); empty otherwise.
  std::string quantization;
  int n_layer = 0;
  int n_embd = 0;
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim = 0;
  int n_ff = 0;
  int n_vocab = 0;
  int n_ctx_train = 0;
  float norm_eps = 1e-5f;

  // RoPE
  float rope_theta = 10000.0f;
  float rope_freq_scale = 1.0f;             // linear scaling: angle *= freq_scale
  std::vector<float> rope_freq_factors;     // Llama-3 scaling: angle /= factor[i] (empty = none)
  bool rope_interleaved = true;             // adjacent pairs (GGUF llama) vs rotate-half (HF, qwen)
  int n_rot = 0;                            // dims rotated per head (= head_dim)
  // LongRoPE (Phi-3/3.5/4): per-pair frequency divisors for sequences up to orig_ctx tokens (short)
  // and for longer ones (long), chosen by a sequence's KV capacity as llama.cpp chooses by its
  // context size; cos and sin are scaled by attn_factor. Empty factors: none.
  struct LongRope {
    std::vector<float> short_factors, long_factors;
    int orig_ctx = 0;
    float attn_factor = 1.0f;
  };
  LongRope longrope;
  // YaRN (Qwen2.5/Qwen3 long context, gpt-oss): frequencies of the pairs that turn fewer than
  // beta_slow times over orig_ctx positions are divided by `factor`, those turning more than
  // beta_fast times kept, a linear ramp between (its ends rounded outwards when truncate); cos and
  // sin scaled by attn_factor (0: 0.1 ln(factor) + 1). factor 0: none.
  struct Yarn {
    float factor = 0;
    int orig_ctx = 0;
    float beta_fast = 32, beta_slow = 1;
    float attn_factor = 0;
    bool truncate = true;
  };
  Yarn yarn;
  // Per layer, whether RoPE is applied (SmolLM3 leaves it out of every 4th layer); empty: every layer.
  std::vector<uint8_t> rope_layers;
  bool layer_uses_rope(int l) const {
    return rope_layers.empty() || rope_layers[static_cast<size_t>(l)] != 0;
  }

  int sliding_window = 0;  // Mistral, Gemma; 0 = none
  // Per layer, whether the sliding window applies (Gemma: alternate layers); empty: every layer.
  std::vector<uint8_t> swa_layers;
  bool layer_uses_window(int l) const {
    return sliding_window > 0 && (swa_layers.empty() || swa_layers[static_cast<size_t>(l)] != 0);
  }

  // Gemma
  bool is_gemma() const { return arch == Arch::Gemma2 || arch == Arch::Gemma3; }
  float rope_theta_swa = 0;  // RoPE base of the sliding-window layers, unscaled (Gemma 3); 0: as the others
  float embed_scale = 0;     // token embeddings are multiplied by it (Gemma: sqrt(n_embd)); 0 = none
  bool post_norms = false;   // RMS norms on the attention and FFN outputs before each residual add
  float attn_scale = 0;      // attention score scale; 0 = 1/sqrt(head_dim) (Gemma: query_pre_attn_scalar)
  float attn_softcap = 0;    // scores = cap * tanh(scores / cap) before the mask; 0 = none
  float final_softcap = 0;   // logits likewise
  // The gate's activation: SwiGLU, GeGLU with tanh GELU, or gpt-oss's clamped SwiGLU:
  // g = min(gate, glu_limit), u = clamp(up, -glu_limit, glu_limit), out = g * sigmoid(glu_alpha * g) * (u +
  // 1).
  enum class Activation { SiLU, GeluTanh, SiLUClamped };
  Activation ffn_act = Activation::SiLU;
  float glu_limit = 7.0f, glu_alpha = 1.702f;
  bool qkv_bias = false;   // Qwen2
  bool qk_norm = false;    // Qwen3
  bool tied_embeddings = false;

  // Mixture of experts (Qwen3-MoE, gpt-oss)
  int n_expert = 0;
  int n_expert_used = 0;
  int n_ff_expert = 0;
  bool norm_topk_prob = false;
  // How router logits become the k weights: a softmax over all experts, then the k largest
  // (Qwen3-MoE), or the k largest logits, then a softmax over those k (gpt-oss).
  enum class MoeGating { SoftmaxAll, SoftmaxTopK };
  MoeGating moe_gating = MoeGating::SoftmaxAll;
  bool is_moe() const;  // the family's FFN is a mixture of experts (Qwen3-MoE, gpt-oss)

  // Encoders (BERT): bidirectional attention, no KV cache, hidden states only. The files say how
  // sentence embeddings are pooled (GGUF bert.pooling_type, sentence-transformers 1_Pooling) and
  // whether they are L2-normalized (a 2_Normalize module).
  std::optional<Pooling> pooling;
  bool normalize = false;
  bool is_encoder() const;  // BERT

  int q_dim() const { return n_head * head_dim; }
  int kv_dim() const { return n_head_kv * head_dim; }
};

}  // namespace ferrum
