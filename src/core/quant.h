// Quantized block formats (byte-identical to ggml's, see ggml-common.h) and row (de)quantization.
// dequantize_row reproduces ggml's reference dequantizers bit for bit (same float operations in
// the same order); quantize_row gives ggml's reference output for Q8_0/Q4_0/Q5_0/Q5_1/Q8_K (without
// an importance row) and an own error-minimising search for the K-quants.
#pragma once

#include <array>
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
struct BlockQ4_1 {
  uint16_t d, m;   // value = q * d + m
  uint8_t qs[16];  // as Q4_0
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
// Q2_K and Q3_K: 16 sub-blocks of 16. Element 128c + 32j + l (c < 2, j < 4, l < 32) has its two low
// bits at bits 2j of qs[32c + l] and belongs to sub-block 8c + 2j + l/16.
struct BlockQ2_K {
  uint8_t scales[16];  // per sub-block: low nibble scale, high nibble min
  uint8_t qs[64];
  uint16_t d, dmin;  // value = d * scale * q - dmin * min, q in 0..3
};
struct BlockQ3_K {
  uint8_t hmask[32];   // third bit of element 128c + 32j + l: bit 4c + j of hmask[l]
  uint8_t qs[64];      // two low bits
  uint8_t scales[12];  // 16 six-bit scales, packed (q3k_scales)
  uint16_t d;          // value = d * (scale - 32) * (q - 4), q in 0..7
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
// IQ4_NL: Q4_0's layout with the nibbles indexing kIQ4Values; IQ4_XS: super-blocks of 8 such
// sub-blocks with 6-bit scales.
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[16];  // value = d * kIQ4Values[nibble]
};
struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;    // high 2 bits of sub-block j's scale at bits 2j
  uint8_t scales_l[4];  // low 4 bits: nibble j % 2 of byte j / 2
  uint8_t qs[128];      // 16 bytes per sub-block of 32, as IQ4_NL
};                      // value = d * (scale - 32) * kIQ4Values[nibble]
// The 16 levels of IQ4_NL / IQ4_XS (llama.cpp's kvalues_iq4nl, ggml-common.h: published constants).
inline constexpr int8_t kIQ4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                          1,    13,   25,  38,  53,  69,  89,  113};
// The same + 128, as unsigned bytes (for u8 x s8 dot products; the activations' bias removes the 128).
inline constexpr std::array<uint8_t, 16> kIQ4Biased = [] {
  std::array<uint8_t, 16> t{};
  for (int i = 0; i < 16; ++i) t[i] = static_cast<uint8_t>(kIQ4Values[i] + 128);
  return t;
}();
struct BlockQ8_K {
  float d;
  int8_t qs[256];
  int16_t bsums[16];  // sums of groups of 16 qs
};

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_K) == 144 && sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210 && sizeof(BlockQ8_K) == 292);
static_assert(sizeof(BlockQ4_1) == 20 && sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockIQ4_NL) == 18 && sizeof(BlockIQ4_XS) == 136);

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

// The 16 scales of a Q3_K super-block, 6 bits each, unpacked (0..63; the value uses scale - 32): the
// low 4 bits of scale j are nibble j / 8 of byte j % 8, the high 2 bits are bits 2 (j / 4) of byte
// 8 + j % 4.
inline void q3k_scales(const uint8_t* p, uint8_t* sc) {
  for (int j = 0; j < 16; ++j) {
    const int lo = (p[j % 8] >> (4 * (j / 8))) & 0xF;
    const int hi = (p[8 + j % 4] >> (2 * (j / 4))) & 3;
    sc[j] = static_cast<uint8_t>(lo | (hi << 4));
  }
}

// 6-bit scale j (0..63; the value uses scale - 32) of an IQ4_XS super-block.
inline int iq4xs_scale(const BlockIQ4_XS& b, int j) {
  return ((b.scales_l[j / 2] >> (4 * (j % 2))) & 0xF) | (((b.scales_h >> (2 * j)) & 3) << 4);
}

// n must be a multiple of the type's block size; throws ferrum::Error for unsupported types.
void dequantize_row(DType t, const void* src, float* dst, int64_t n);
// `importance`: n per-column weights of the error (a row of an importance matrix, formats/imatrix.h)
// or nullptr. Every type but F32/F16/BF16, Q8_0, Q8_K and MXFP4 weighs its error with it (as
// llama.cpp's quantizers do); the grid i-quants need it (quantize_needs_importance). Without it
// each type quantizes as it always has.
void quantize_row(DType t, const float* src, void* dst, int64_t n, const float* importance = nullptr);
bool quantize_needs_importance(DType t);

}  // namespace ferrum
