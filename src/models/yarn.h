// YaRN RoPE scaling (ModelConfig::yarn) as the two things the forward pass applies: per-pair
// frequency divisors (angle = pos * base_freq[i] / factor[i], as Llama-3's scaling) and the cos/sin
// scale. The ramp as transformers' _compute_yarn_parameters (and ggml's rope_yarn) define it.
#pragma once

#include <vector>

#include "ferrum/model_config.h"

namespace ferrum {

std::vector<float> yarn_freq_factors(const ModelConfig& c);
float yarn_attn_factor(const ModelConfig& c);

}  // namespace ferrum
