// `ferrum quantize`: rewrites a GGUF model with its weight matrices in another type, each tensor in
// the type llama-quantize gives it under the same preset (quant_recipe.h).
#pragma once

#include <functional>
#include <string>

#include "ferrum/dtype.h"

namespace ferrum {

// Called after each tensor: its index and the tensor count, name, and the type written.
using QuantizeProgress = std::function<void(int i, int n, const std::string& name, DType from, DType to)>;

// preset: llama-quantize's name (Q4_K_M, Q3_K_S, IQ4_XS, Q8_0, F16, ...; find_quant_preset).
// Returns the number of tensors converted.
int quantize_model(const std::string& in_path, const std::string& out_path, const std::string& preset,
                   int n_threads, const QuantizeProgress& progress = nullptr);

}  // namespace ferrum
