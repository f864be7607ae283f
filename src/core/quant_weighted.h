// Importance-weighted quantizers of the 32-value block types Q4_0, Q5_0, Q4_1 and Q5_1 (own code;
// the weighting follows llama.cpp's quantizers with an importance matrix). quantize_row uses them
// when it is given an importance row; without one it keeps ggml's reference quantizers. The
// K-quants and IQ4 types take their importance through their own quantizers (quant.cpp,
// quant_low.cpp).
#pragma once

#include <cstdint>

#include "core/quant.h"

namespace ferrum::quant_weighted {

// nb blocks of x (one row), `importance`: one weight per value of that row (not nullptr).
void quantize(const float* x, BlockQ4_0* y, int64_t nb, const float* importance);
void quantize(const float* x, BlockQ5_0* y, int64_t nb, const float* importance);
void quantize(const float* x, BlockQ4_1* y, int64_t nb, const float* importance);
void quantize(const float* x, BlockQ5_1* y, int64_t nb, const float* importance);

}  // namespace ferrum::quant_weighted
