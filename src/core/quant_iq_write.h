// Own quantizers of the grid i-quants (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M):
// importance-weighted searches over each type's grid (the design of llama.cpp's quantizers: signs
// from the values, a scale search per sub-block, each group of values moved to its nearest grid
// point). Blocks as in quant_iq.h; dequantize with quant_iq::dequantize.
#pragma once

#include <cstdint>

#include "core/quant_iq.h"

namespace ferrum::quant_iq {

// Quantizes one row of n values (n a multiple of 256) into n / 256 blocks of kind k at dst.
// `importance`: n non-negative weights, one per column (a row of an importance matrix: the mean
// squared activation each column meets), or nullptr. IQ2_XXS, IQ2_XS, IQ1_S and IQ1_M need one
// (throws without); the others fall back to weights from the values themselves.
void quantize_row(Kind k, const float* x, void* dst, int64_t n, const float* importance);
bool needs_importance(Kind k);

// One kind each (quant_iq2_write.cpp, quant_iq3_write.cpp, quant_iq1_write.cpp): nb super-blocks of
// 256 values; w: 256 * nb importances or nullptr (checked by quantize_row).
void quantize_iq2_xxs(const float* x, BlockIQ2_XXS* y, int64_t nb, const float* w);
void quantize_iq2_xs(const float* x, BlockIQ2_XS* y, int64_t nb, const float* w);
void quantize_iq2_s(const float* x, BlockIQ2_S* y, int64_t nb, const float* w);
void quantize_iq3_xxs(const float* x, BlockIQ3_XXS* y, int64_t nb, const float* w);
void quantize_iq3_s(const float* x, BlockIQ3_S* y, int64_t nb, const float* w);
void quantize_iq1_s(const float* x, BlockIQ1_S* y, int64_t nb, const float* w);
void quantize_iq1_m(const float* x, BlockIQ1_M* y, int64_t nb, const float* w);

}  // namespace ferrum::quant_iq
