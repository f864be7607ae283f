// gpt-oss (transformers' GptOssConfig): num_local_experts experts of intermediate_size, the router's
// k largest logits softmaxed, the clamped SwiGLU (swiglu_limit 7, alpha 1.702), q/k/v/o biases
// (attention_bias), a window of sliding_window (128) on the layers layer_types names (default, and
// what llama.cpp assumes for GGUF files: the even ones), attention sinks (tensors). RoPE is YaRN's.
#include "core/fail.h"
#include "formats/family.h"
#include "formats/family_fields.h"

namespace ferrum {
namespace {

void read_hf_gpt_oss(const hf::Config& c, ModelConfig& m) {
  m.n_expert = hf::hf_int(c, "num_local_experts");
  m.n_expert_used = hf::hf_int_or(c, "num_experts_per_tok", c.find_int("experts_per_token").value_or(4));
  m.n_ff_expert = hf::hf_int(c, "intermediate_size");
  m.moe_gating = ModelConfig::MoeGating::SoftmaxTopK;
  m.ffn_act = ModelConfig::Activation::SiLUClamped;
  m.glu_limit = static_cast<float>(c.find_float("swiglu_limit").value_or(7.0));
  m.qkv_bias = c.find_bool("attention_bias").value_or(true);
  m.sliding_window = hf::hf_int_or(c, "sliding_window", 128);
  if (!hf::read_layer_types(c, m))
    for (int l = 0; l < m.n_layer; ++l) m.swa_layers.push_back(l % 2 == 0);
}

void read_gguf_gpt_oss(const GgufKeys& g, ModelConfig& c) {
  if (c.sliding_window > 0)
    c.swa_layers = swa_layers_every(c.n_layer, g.opt_int("attention.sliding_window_pattern", 2));
  c.moe_gating = ModelConfig::MoeGating::SoftmaxTopK;
  c.ffn_act = ModelConfig::Activation::SiLUClamped;  // llama.cpp's constants: limit 7, alpha 1.702
}

void write_gguf_gpt_oss(gguf::Writer&, const ModelConfig& m, const std::string&) {
  if (m.sliding_window > 0 && m.swa_layers != swa_layers_every(m.n_layer, 2))
    fail(
        "{}: the sliding-window layers are not the even ones, the layout llama.cpp assumes for gpt-oss "
        "files; "
        "such a model cannot be written as GGUF",
        m.name);
}

}  // namespace

extern const Family kGptOss;

const Family kGptOss{.arch = Arch::GptOss,
                     .name = "gpt-oss",
                     .gguf = "gpt-oss",
                     .hf_type = "gpt_oss",
                     .hf_class = "GptOssFor",
                     .hf_n_ctx = 131072,
                     .gguf_qk_permuted = false,
                     .hf_rope_theta = 150000.0,
                     .hf_norm_eps = 1e-5,
                     .moe = true,
                     .gguf_ffn_norm = "post_attention_norm.weight",
                     .hf_fused_experts = true,
                     .attn_sinks = true,
                     .read_hf = read_hf_gpt_oss,
                     .read_gguf = read_gguf_gpt_oss,
                     .write_gguf = write_gguf_gpt_oss};

}  // namespace ferrum
