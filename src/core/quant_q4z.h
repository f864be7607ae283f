// Q4_Z: ferrum's in-memory block for asymmetric 4-bit layers (GPTQ with sym false, every AWQ
// checkpoint), which no GGUF type holds in 4 bits: blocks of 32 nibbles (Q4_0's order: low nibbles
// elements 0-15, high nibbles 16-31), one F16 scale d and one integer zero point z per block;
// value = d * (q - z). GPTQ v1 files store zero - 1, so a zero point reads back as 0..16. The
// product d * (q - z) is exact in float (an F16 scale times an integer below 32).
// 19 bytes per 32 weights: 4.75 bits per weight (Q5_0, which holds the same values, takes 5.5).
#pragma once

#include <cstdint>
#include <cstring>

#include "core/fp16.h"

namespace ferrum {

struct BlockQ4_Z {
  uint8_t d[2];    // F16 bits (unaligned: the block is 19 bytes)
  uint8_t z;       // zero point, 0..16
  uint8_t qs[16];  // as Q4_0's
};
static_assert(sizeof(BlockQ4_Z) == 19);

inline uint16_t q4z_scale_bits(const BlockQ4_Z& b) {
  uint16_t h;
  std::memcpy(&h, b.d, 2);
  return h;
}
inline float q4z_scale(const BlockQ4_Z& b) {
  return f16_to_f32(q4z_scale_bits(b));
}
inline void set_q4z_scale(BlockQ4_Z& b, uint16_t h) {
  std::memcpy(b.d, &h, 2);
}
constexpr int kQ4ZMaxZero = 16;

namespace quant_q4z {
void dequantize(const BlockQ4_Z* x, float* y, int64_t nb);
// Round to nearest with the block's range widened to hold 0 (as GPTQ's and AWQ's round-to-nearest
// quantizers: d = (max - min) / 15, z = round(-min / d)); for tests and `make-model`-style data.
void quantize(const float* x, BlockQ4_Z* y, int64_t nb);
}  // namespace quant_q4z

}  // namespace ferrum
