// Hugging Face config.json -> ModelConfig: the one reader behind both the HF-directory loader
// (loading/hf_dir.cpp) and `ferrum convert` (formats/convert_hf.cpp), so a converted GGUF and
// the directory it came from describe the same model.
//
// Defaults follow transformers' config classes for the field's family: rms_norm_eps 1e-6 (BERT
// layer_norm_eps 1e-12), rope_theta 10000, num_key_value_heads = num_attention_heads, head_dim =
// hidden_size / num_attention_heads, tie_word_embeddings false, norm_topk_prob false,
// max_position_embeddings 2048 (llama) / 131072 (mistral) / 32768 (qwen) / 512 (bert), and a
// sliding window of 4096 when a mistral config (or a qwen one with use_sliding_window) leaves
// sliding_window out (null: no window). The sizes themselves (hidden_size, num_hidden_layers,
// num_attention_heads, vocab_size, intermediate_size, the MoE sizes) are required: a default
// would describe some other checkpoint than the weights next to it.
//
// rope_scaling: rope_type (else the legacy type) "llama3" gives rope_freq_factors, "linear"
// rope_freq_scale = 1 / factor, "longrope"/"su" the LongRoPE factors, "yarn" ModelConfig::yarn
// (models/yarn.h computes its divisors); none, null or "default" is plain RoPE; any other type is
// an error naming it. Every error names the file and the field.
#pragma once

#include <string>

#include "ferrum/model_config.h"
#include "formats/hf_config.h"

namespace ferrum::hf {

// Architectures: llama, mistral, qwen2, qwen3, qwen3_moe, bert. The result has passed
// validate_config(). Fields that depend on the weights are left for the caller: rope_interleaved
// is false (HF rotate-half layout), qkv_bias is true only for qwen2, tied_embeddings is
// tie_word_embeddings.
ModelConfig model_config(const Config& c, const std::string& name);

}  // namespace ferrum::hf
