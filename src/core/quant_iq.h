// The i-quant types with lookup grids (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M): block
// layouts (byte-identical to ggml's), dequantization bit for bit as ggml's, and the unpacking the
// fast kernels multiply: every value of a super-block is D * scale[k] * (level + offset), with integer
// levels, integer scales per 16 elements and (IQ1 only) an offset per 8 elements.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ferrum {

struct BlockIQ2_XXS {
  uint16_t d;
  uint16_t qs[32];  // per 32 elements: 4 grid indices (bytes 0-3), then 4 x 7 sign bits and the scale
};
struct BlockIQ2_XS {
  uint16_t d;
  uint16_t qs[32];    // per 8 elements: 9-bit grid index, 7 sign bits
  uint8_t scales[8];  // per 32 elements: two 4-bit scales (one per 16)
};
struct BlockIQ2_S {
  uint16_t d;
  uint8_t qs[64];  // 32 low bytes of the 10-bit grid indices, then 32 bytes of signs
  uint8_t qh[8];   // high 2 bits of the indices, 4 per byte
  uint8_t scales[8];
};
struct BlockIQ3_XXS {
  uint16_t d;
  uint8_t qs[96];  // 64 grid indices (4 values each), then per 32 elements 4 x 7 sign bits and the scale
};
struct BlockIQ3_S {
  uint16_t d;
  uint8_t qs[64];  // low bytes of the 9-bit grid indices
  uint8_t qh[8];
  uint8_t signs[32];
  uint8_t scales[4];
};
struct BlockIQ1_S {
  uint16_t d;
  uint8_t qs[32];  // low bytes of the 11-bit grid indices
  uint16_t qh[8];  // per 32 elements: 4 x 3 high index bits, 3-bit scale, the offset's sign
};
struct BlockIQ1_M {
  uint8_t qs[32];
  uint8_t qh[16];     // per 16 elements: 2 x (3 high index bits, the offset's sign)
  uint8_t scales[8];  // 3-bit scales per 16 elements; the F16 super-block scale in the top nibbles
};

static_assert(sizeof(BlockIQ2_XXS) == 66 && sizeof(BlockIQ2_XS) == 74 && sizeof(BlockIQ2_S) == 82);
static_assert(sizeof(BlockIQ3_XXS) == 98 && sizeof(BlockIQ3_S) == 110 && sizeof(BlockIQ1_S) == 50);
static_assert(sizeof(BlockIQ1_M) == 56);

// Eight consecutive values of a super-block as the kernels read them: `bytes` holds 8 magnitudes
// (IQ2, IQ3: value = d * scale * magnitude, negated where bit j of `signs` is set) or 8 signed
// values in {-1, 0, 1} (IQ1: value = d * scale * (byte + offset / 8), signs unused).
struct IqGroup {
  uint64_t bytes;
  uint8_t signs;
  int8_t offset;  // IQ1: +1 or -1; 0 for the others
};
// Sub-block ib (32 values) of a super-block: its 4 groups and the integer scales of its two
// halves of 16 (2s + 1 from the stored field s).
struct IqSub {
  IqGroup g[4];
  int16_t scale[2];
};

namespace quant_iq {

enum class Kind { IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M };

// The float factor D of super-block `block` (value = D * integer scale * level) and sub-block ib:
// scale_of and sub_block, inline in quant_iq_fields.h.
constexpr size_t block_bytes(Kind k) {
  switch (k) {
    case Kind::IQ2_XXS:
      return sizeof(BlockIQ2_XXS);
    case Kind::IQ2_XS:
      return sizeof(BlockIQ2_XS);
    case Kind::IQ2_S:
      return sizeof(BlockIQ2_S);
    case Kind::IQ3_XXS:
      return sizeof(BlockIQ3_XXS);
    case Kind::IQ3_S:
      return sizeof(BlockIQ3_S);
    case Kind::IQ1_S:
      return sizeof(BlockIQ1_S);
    case Kind::IQ1_M:
      return sizeof(BlockIQ1_M);
  }
  return 0;
}
constexpr bool has_offset(Kind k) {
  return k == Kind::IQ1_S || k == Kind::IQ1_M;
}

// ggml's dequantizers (the same float operations in the same order).
void dequantize(Kind k, const void* src, float* y, int64_t nb);

}  // namespace quant_iq
}  // namespace ferrum
