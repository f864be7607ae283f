// MXFP4 (the OCP microscaling format; gpt-oss stores its experts in it): blocks of 32 four-bit
// E2M1 values sharing one E8M0 exponent. Nibbles as Q4_0's (low: elements 0-15, high: 16-31);
// value = kMXFP4Values[nibble] * 2^(e - 128): the levels are twice E2M1's magnitudes (0, 0.5, 1,
// 1.5, 2, 3, 4, 6), so the scale is half of 2^(e - 127). Levels and scale as llama.cpp's
// kvalues_mxfp4 and GGML_E8M0_TO_FP32_HALF (ggml-common.h, ggml-impl.h: published constants).
#pragma once

#include <cstdint>
#include <cstring>

namespace ferrum {

struct BlockMXFP4 {
  uint8_t e;       // E8M0 exponent
  uint8_t qs[16];  // value = kMXFP4Values[nibble] * mxfp4_scale(e)
};
static_assert(sizeof(BlockMXFP4) == 17);

inline constexpr int8_t kMXFP4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
// The same + 128, as unsigned bytes (for u8 x s8 dot products; the activations' bias removes the 128).
inline constexpr uint8_t kMXFP4Biased[16] = {128, 129, 130, 131, 132, 134, 136, 140,
                                             128, 127, 126, 125, 124, 122, 120, 116};

// 2^(e - 128) for every e (e 0 and 1 give the denormals 2^-128 and 2^-127).
inline float mxfp4_scale(uint8_t e) {
  const uint32_t bits = e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Block scales F16 holds exactly: 2^(e - 128) for e in [104, 143] (F16's subnormals start at 2^-24,
// its largest power of two is 2^15). The packed layout stores the scale as F16 (Q4_0's layout).
inline bool mxfp4_scale_fits_f16(uint8_t e) {
  return e >= 104 && e <= 143;
}

namespace quant_mxfp4 {
void dequantize(const BlockMXFP4* x, float* y, int64_t nb);
// The exponent from the block's largest magnitude (its E2M1 level 6 at most, as llama.cpp picks
// it: floor(log2(amax)) - 2), then each value's nearest level.
void quantize(const float* x, BlockMXFP4* y, int64_t nb);
}  // namespace quant_mxfp4

}  // namespace ferrum
