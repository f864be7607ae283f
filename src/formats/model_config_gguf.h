// ModelConfig -> GGUF hyper-parameter metadata, the keys llama.cpp's converter writes (and
// models/registry.cpp config_from_gguf reads back to the same ModelConfig).
#pragma once

#include "ferrum/model_config.h"
#include "formats/gguf_writer.h"

namespace ferrum {

// GGUF general.architecture: mistral is written as "llama" (like llama.cpp), qwen3_moe as
// "qwen3moe".
const char* gguf_arch(Arch a);

// The "<arch>.*" keys of `m` (context, sizes, heads, RoPE, norm epsilon, sliding window,
// experts). Llama-3 rope_freq_factors are a tensor (rope_freqs.weight), not metadata.
void write_model_config(gguf::Writer& w, const ModelConfig& m);

}  // namespace ferrum
