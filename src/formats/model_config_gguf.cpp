#include "formats/model_config_gguf.h"

#include <string>

namespace ferrum {
namespace {

uint32_t u32(int v) {
  return static_cast<uint32_t>(v);
}  // validate_config() checked v >= 0

void write_bert(gguf::Writer& w, const ModelConfig& m) {
  w.set_u32("bert.vocab_size", u32(m.n_vocab));
  w.set_u32("bert.context_length", u32(m.n_ctx_train));
  w.set_u32("bert.embedding_length", u32(m.n_embd));
  w.set_u32("bert.block_count", u32(m.n_layer));
  w.set_u32("bert.feed_forward_length", u32(m.n_ff));
  w.set_u32("bert.attention.head_count", u32(m.n_head));
  w.set_f32("bert.attention.layer_norm_epsilon", m.norm_eps);
  w.set_bool("bert.attention.causal", false);
}

void write_extras(gguf::Writer& w, const ModelConfig& m, const std::string& A) {
  if (m.rope_freq_scale != 1.0f) {
    w.set_string(A + ".rope.scaling.type", "linear");
    w.set_f32(A + ".rope.scaling.factor", static_cast<float>(1.0 / m.rope_freq_scale));
  }
  if (m.n_expert > 0) {
    w.set_u32(A + ".expert_count", u32(m.n_expert));
    w.set_u32(A + ".expert_used_count", u32(m.n_expert_used));
    w.set_u32(A + ".expert_feed_forward_length", u32(m.n_ff_expert));
    w.set_bool(A + ".expert_weights_norm", m.norm_topk_prob);
  }
  if (m.sliding_window > 0) w.set_u32(A + ".attention.sliding_window", u32(m.sliding_window));
}

}  // namespace

const char* gguf_arch(Arch a) {
  switch (a) {
    case Arch::Llama:
    case Arch::Mistral:
      return "llama";
    case Arch::Qwen2:
      return "qwen2";
    case Arch::Qwen3:
      return "qwen3";
    case Arch::Qwen3Moe:
      return "qwen3moe";
    case Arch::Bert:
      return "bert";
  }
  return "?";
}

void write_model_config(gguf::Writer& w, const ModelConfig& m) {
  if (m.arch == Arch::Bert) return write_bert(w, m);
  const std::string A = gguf_arch(m.arch);
  w.set_u32(A + ".vocab_size", u32(m.n_vocab));
  w.set_u32(A + ".context_length", u32(m.n_ctx_train));
  w.set_u32(A + ".embedding_length", u32(m.n_embd));
  w.set_u32(A + ".block_count", u32(m.n_layer));
  if (m.n_ff > 0) w.set_u32(A + ".feed_forward_length", u32(m.n_ff));
  w.set_u32(A + ".attention.head_count", u32(m.n_head));
  w.set_u32(A + ".attention.head_count_kv", u32(m.n_head_kv));
  w.set_f32(A + ".rope.freq_base", m.rope_theta);
  w.set_f32(A + ".attention.layer_norm_rms_epsilon", m.norm_eps);
  if (A == "llama") w.set_u32(A + ".rope.dimension_count", u32(m.n_rot));
  if (A != "llama" || m.head_dim * m.n_head != m.n_embd) {
    w.set_u32(A + ".attention.key_length", u32(m.head_dim));
    w.set_u32(A + ".attention.value_length", u32(m.head_dim));
  }
  write_extras(w, m, A);
}

}  // namespace ferrum
