// `ferrum quantize`: rewrites a GGUF model with its weight matrices in another type, each tensor in
// the type llama-quantize gives it under the same preset (quant_recipe.h).
#pragma once

#include <string>

#include "core/progress.h"
#include "models/quant_recipe.h"

namespace ferrum {

// preset: llama-quantize's name (Q4_K_M, Q3_K_S, IQ4_XS, Q8_0, F16, ...; find_quant_preset).
// Returns the number of tensors converted. `progress`: after each tensor (stage "quantize", the
// input's bytes), then as the file is written (stage "write"). `imatrix_path`: llama-imatrix's
// output (GGUF or .dat), weighting each column's error; the IQ1/IQ2/IQ3_XXS presets and Q2_K_S need
// one (throws naming the first tensor that does, before any work).
// `overrides`: llama-quantize's type flags (quant_recipe.h).
int quantize_model(const std::string& in_path, const std::string& out_path, const std::string& preset,
                   int n_threads, const ProgressFn& progress = {}, const std::string& imatrix_path = "",
                   const QuantOverrides& overrides = {});

}  // namespace ferrum
