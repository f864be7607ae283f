// Quantized block formats (byte-identical to ggml's, see ggml-common.h) and row (de)quantization.
// dequantize_row reproduces ggml's reference dequantizers bit for bit (same float operations in
// the same order); quantize_row gives ggml's reference output for Q8_0/Q4_0/Q5_0/Q5_1/Q8_K and an
// own error-minimising search for the K-quants.
#pragma once

#include <cstdint>
#include <cstring>

#include "ferrum/dtype.h"

namespace ferrum {

constexpr int kQK32 = 32;   // block size of Q4_0, Q5_0, Q5_1, Q8_0, Q8_1
constexpr int kQK_K = 256;  // super-block size of the K-quants

// Half-precision scales are kept as raw IEEE half bits (uint16_t) as in the files.
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[16];  // low nibbles: elements 0..15, high nibbles: 16..31; value = (q - 8) * d
};
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];  // 5th bit of each element, bit j = element j
  uint8_t qs[16];
};
struct BlockQ5_1 {
  uint16_t d, m;  // value = q * d + m
  uint8_t qh[4];
  uint8_t qs[16];
};
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[32];
};
struct BlockQ4_K {
  uint16_t d, dmin;    // super-block scales for the 6-bit sub-block scales / mins
  uint8_t scales[12];  // 8 scales + 8 mins, 6 bits each, packed
  uint8_t qs[128];     // per 64 elements: 32 bytes, low nibbles first 32, high nibbles next 32
};
struct BlockQ5_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qh[32];  // bit 2j / 2j+1 of qh[l]: 5th bit of element l of sub-block 2j / 2j+1
  uint8_t qs[128];
};
struct BlockQ6_K {
  uint8_t ql[128];  // low 4 bits
  uint8_t qh[64];   // high 2 bits
  int8_t scales[16];
  uint16_t d;
};
struct BlockQ8_K {
  float d;
  int8_t qs[256];
  int16_t bsums[16];  // sums of groups of 16 qs
};

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_K) == 144 && sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210 && sizeof(BlockQ8_K) == 292);

// 6-bit scale and min j (0..7) of a Q4_K/Q5_K super-block (ggml's get_scale_min_k4 layout).
inline void k4_scale_min(int j, const uint8_t* q, uint8_t& sc, uint8_t& m) {
  if (j < 4) {
    sc = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// All 8 scales and 8 mins of a Q4_K/Q5_K super-block at once: byte j of sc / mn is scale / min j.
inline void k4_scales_mins(const uint8_t* q, uint64_t& sc, uint64_t& mn) {
  uint32_t a, b, c;
  std::memcpy(&a, q, 4);
  std::memcpy(&b, q + 4, 4);
  std::memcpy(&c, q + 8, 4);
  const uint32_t sc_hi = (c & 0x0f0f0f0fu) | (((a >> 6) & 0x03030303u) << 4);
  const uint32_t mn_hi = ((c >> 4) & 0x0f0f0f0fu) | (((b >> 6) & 0x03030303u) << 4);
  sc = (a & 0x3f3f3f3fu) | (static_cast<uint64_t>(sc_hi) << 32);
  mn = (b & 0x3f3f3f3fu) | (static_cast<uint64_t>(mn_hi) << 32);
}

// n must be a multiple of the type's block size; throws ferrum::Error for unsupported types.
void dequantize_row(DType t, const void* src, float* dst, int64_t n);
void quantize_row(DType t, const float* src, void* dst, int64_t n);

}  // namespace ferrum
