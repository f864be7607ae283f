// `ferrum quantize`: rewrites a GGUF model with its weight matrices in another type, with the
// llama.cpp-style mixes for the *_M presets (more bits for output and some attn_v/ffn_down).
#pragma once

#include <string>

#include "ferrum/dtype.h"

namespace ferrum {

// preset: a type name (Q8_0, Q4_0, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, F16, BF16, F32) or a mix
// (Q4_K_M, Q5_K_M, Q4_K_S, Q5_K_S). Returns the number of tensors converted.
int quantize_model(const std::string& in_path, const std::string& out_path, const std::string& preset, int n_threads);

}  // namespace ferrum
