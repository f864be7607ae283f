// Dequantizers (ggml's order of operations, bit for bit) and own quantizers of the low-bit types
// Q4_1, Q2_K, Q3_K, IQ4_NL and IQ4_XS (quant_low.cpp), reached through quantize_row / dequantize_row.
#pragma once

#include <cstdint>

#include "core/quant.h"

namespace ferrum::quant_low {

void dequantize(const BlockQ4_1* x, float* y, int64_t nb);
void dequantize(const BlockQ2_K* x, float* y, int64_t nb);
void dequantize(const BlockQ3_K* x, float* y, int64_t nb);
void dequantize(const BlockIQ4_NL* x, float* y, int64_t nb);
void dequantize(const BlockIQ4_XS* x, float* y, int64_t nb);

void quantize(const float* x, BlockQ4_1* y, int64_t nb);
// `importance`: one weight per value of the row (weights each value's error), or nullptr.
void quantize(const float* x, BlockQ2_K* y, int64_t nb, const float* importance = nullptr);
void quantize(const float* x, BlockQ3_K* y, int64_t nb, const float* importance = nullptr);
void quantize(const float* x, BlockIQ4_NL* y, int64_t nb, const float* importance = nullptr);
void quantize(const float* x, BlockIQ4_XS* y, int64_t nb, const float* importance = nullptr);

}  // namespace ferrum::quant_low
