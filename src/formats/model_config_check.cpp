// Consistency checks of a ModelConfig read from a file: every size is positive and small enough
// for the int arithmetic of the model code, and the sizes agree with each other (heads divide,
// RoPE fits the head) before anything is allocated or divided by them.
#include "formats/model_config_check.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "core/fail.h"

namespace ferrum {

namespace {

// Upper bounds far above any published model but low enough that products of two of them
// (q_dim = n_head * head_dim, n_ff * n_expert, ...) stay well inside int64 and each stays an int.
constexpr int64_t kMaxLayers = 1 << 16;
constexpr int64_t kMaxWidth = 1 << 20;  // n_embd, n_ff, head_dim, q/kv widths
constexpr int64_t kMaxHeads = 1 << 16;  // n_head, n_head_kv
constexpr int64_t kMaxVocab = 1 << 28;  // tokens
constexpr int64_t kMaxExperts = 1 << 14;

std::string field(const ConfigFields& f, const char* gguf_key, const char* hf_key) {
  return f.hf ? std::string(hf_key) : f.gguf_prefix + gguf_key;
}

}  // namespace

void validate_config(const ModelConfig& c, const std::string& source, const ConfigFields& f) {
  auto in_range = [&](int64_t v, int64_t lo, int64_t hi, const char* gguf_key, const char* hf_key) {
    if (v < lo || v > hi)
      fail("{}: {} is {}, expected a value in [{}, {}]", source, field(f, gguf_key, hf_key), v, lo, hi);
  };
  in_range(c.n_layer, 1, kMaxLayers, "block_count", "num_hidden_layers");
  in_range(c.n_embd, 1, kMaxWidth, "embedding_length", "hidden_size");
  in_range(c.n_head, 1, kMaxHeads, "attention.head_count", "num_attention_heads");
  in_range(c.n_head_kv, 1, c.n_head, "attention.head_count_kv", "num_key_value_heads");
  if (c.n_head % c.n_head_kv != 0)
    fail("{}: {} {} is not a multiple of {} {}", source,
         field(f, "attention.head_count", "num_attention_heads"), c.n_head,
         field(f, "attention.head_count_kv", "num_key_value_heads"), c.n_head_kv);
  in_range(c.head_dim, 1, 1024, "attention.key_length", "head_dim");  // kernels/cpu/attention_tile.h
  if (static_cast<int64_t>(c.n_head) * c.head_dim > kMaxWidth)
    fail("{}: {} heads of {} dimensions ({} / {}) are too wide (at most {} in all)", source, c.n_head,
         c.head_dim, field(f, "attention.head_count", "num_attention_heads"),
         field(f, "attention.key_length", "head_dim"), kMaxWidth);
  if (c.n_rot < 2 || c.n_rot > c.head_dim || c.n_rot % 2 != 0)
    fail("{}: {} is {}, expected an even number of dimensions from 2 to the head size {}", source,
         field(f, "rope.dimension_count", "head_dim"), c.n_rot, c.head_dim);
  in_range(c.n_vocab, 1, kMaxVocab, "vocab_size", "vocab_size");
  in_range(c.n_ff, 0, kMaxWidth, "feed_forward_length", "intermediate_size");
  in_range(c.n_ctx_train, 0, INT32_MAX, "context_length", "max_position_embeddings");
  in_range(c.sliding_window, 0, INT32_MAX, "attention.sliding_window", "sliding_window");
  if (!std::isfinite(c.norm_eps) || c.norm_eps < 0)
    fail("{}: {} is {}, expected a finite non-negative number", source,
         field(f, c.is_encoder() ? "attention.layer_norm_epsilon" : "attention.layer_norm_rms_epsilon",
               c.is_encoder() ? "layer_norm_eps" : "rms_norm_eps"),
         c.norm_eps);
  if (!std::isfinite(c.rope_theta) || c.rope_theta <= 0)
    fail("{}: {} is {}, expected a positive number", source, field(f, "rope.freq_base", "rope_theta"),
         c.rope_theta);
  if (!std::isfinite(c.rope_freq_scale) || c.rope_freq_scale <= 0)
    fail("{}: the RoPE scaling factor {} ({}) must be a positive number", source, 1.0 / c.rope_freq_scale,
         field(f, "rope.scaling.factor", "rope_scaling.factor"));
  if (!c.rope_freq_factors.empty()) {
    if (static_cast<int64_t>(c.rope_freq_factors.size()) != c.n_rot / 2)
      fail("{}: {} RoPE frequency factors for {} rotated dimensions, expected {}", source,
           c.rope_freq_factors.size(), c.n_rot, c.n_rot / 2);
    for (float v : c.rope_freq_factors)
      if (!std::isfinite(v) || v <= 0)
        fail("{}: RoPE frequency factor {} ({}) must be a positive number", source, v,
             f.hf ? "rope_scaling" : "tensor rope_freqs.weight");
  }
  if (const auto& lr = c.longrope; !lr.long_factors.empty() || !lr.short_factors.empty()) {
    for (const auto* f : {&lr.long_factors, &lr.short_factors})
      if (static_cast<int64_t>(f->size()) != c.n_rot / 2)
        fail("{}: LongRoPE has {} long and {} short factors for {} rotated dimensions, expected {} each",
             source, lr.long_factors.size(), lr.short_factors.size(), c.n_rot, c.n_rot / 2);
    if (lr.orig_ctx <= 0 || !std::isfinite(lr.attn_factor) || lr.attn_factor <= 0)
      fail("{}: LongRoPE's original context ({}) and attention factor ({}) must be positive", source,
           lr.orig_ctx, lr.attn_factor);
  }
  if (!c.swa_layers.empty() && c.swa_layers.size() != static_cast<size_t>(c.n_layer))
    fail("{}: the sliding window is switched per layer for {} layers, but the model has {}", source,
         c.swa_layers.size(), c.n_layer);
  if (!std::isfinite(c.glu_limit) || c.glu_limit <= 0 || !std::isfinite(c.glu_alpha) || c.glu_alpha <= 0)
    fail("{}: the clamped SwiGLU's limit ({}) and alpha ({}) must be positive numbers", source, c.glu_limit,
         c.glu_alpha);
  if (!c.rope_layers.empty() && c.rope_layers.size() != static_cast<size_t>(c.n_layer))
    fail("{}: RoPE is switched per layer for {} layers, but the model has {}", source, c.rope_layers.size(),
         c.n_layer);
  if (c.is_moe()) {
    const bool oss = c.arch == Arch::GptOss;
    in_range(c.n_expert, 1, kMaxExperts, "expert_count", oss ? "num_local_experts" : "num_experts");
    in_range(c.n_expert_used, 1, c.n_expert, "expert_used_count", "num_experts_per_tok");
    in_range(c.n_ff_expert, 1, kMaxWidth, "expert_feed_forward_length",
             oss ? "intermediate_size" : "moe_intermediate_size");
  }
}

}  // namespace ferrum
