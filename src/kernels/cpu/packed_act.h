// Activations of the packed kernels (packed.h), prepared once per token and read by every tier's
// kernels (AVX2, AVX-VNNI, AVX-512): the same bytes whatever the tier, so a packed product's
// integer sums are the same on each.
//   Q4_0 / Q5_0 / Q8_0 / IQ4_NL / IQ4_XS: levels int8[n], scales float[n/32], bias int32[n/32] =
//     -offset * (sum of the block's levels), the weights' unsigned offset (8, 16, 128, 128, 128)
//     removed exactly. Q4_0 then the same biases as 16-bit lanes, int32[n/32] = bias & 0xFFFF (the
//     start of the AVX2 kernels' 16-bit pair sums; |bias| <= 8 * 32 * 127 fits).
//   Q4_1: the row-major path's Q8Act: levels, scales float[n/32], float[n/32] = scale * (sum of the
//     block's levels) (times the weights' min).
//   Q4_K / Q5_K: levels int8[n] (Q8_K), scales float[n/256], int16[8] per super-block: the sums of
//     the levels of each 32-element sub-block (for the mins).
//   Q6_K / Q3_K / Q2_K (its kernels read only the level sums): levels, scales, int32[16] per super-block:
//   biases -32 (Q3_K -4) * (sum of the levels of each
//     16-element sub-block), then int16[16] per super-block: those sums themselves (the tiers
//     without VNNI scale sub-blocks in 16 bits and apply the offset once per super-block).
//   BF16: the activations rounded to BF16. F16: the F32 activations as they are (no preparation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "ferrum/dtype.h"

namespace ferrum::kernels {

struct IsaKernels;

// Bytes of one token's prepared activations for packed weights of type t (n inputs); not F16,
// whose kernels read the F32 activations as they are.
size_t packed_act_bytes(DType t, int64_t n);
// Prepares one token (n values at x) for packed weights of type t (not F16), with the tier's
// quantizers.
void prep_packed_act(const IsaKernels& k, DType t, const float* x, uint8_t* out, int64_t n);

// Tokens in vector lanes (PackedKernels::Kernel::lanes): the Q4_K / Q5_K activations above of up to
// kLaneTokens tokens interleaved per super-block, so that one 256-bit load gives 4 inputs of 8 tokens:
//   levels [64 steps of 4 inputs][16 tokens][4 bytes], scales float[16 tokens],
//   sub-block sums [4 pairs][16 tokens][2 x int16]
// (tokens past nt are zeros). Made once per tile of tokens and read by every 16-row group.
constexpr int kLaneTokens = 16;
constexpr size_t kLaneLevels = 0, kLaneScales = 64 * kLaneTokens * 4,
                 kLaneSums = kLaneScales + 4 * kLaneTokens, kLaneBlockBytes = kLaneSums + 4 * kLaneTokens * 4;
inline size_t lane_act_bytes(int64_t n) {
  return kLaneBlockBytes * static_cast<size_t>(n / 256);
}
// nt <= kLaneTokens tokens' Q4_K / Q5_K activations (token t at act + t * stride) -> out.
void interleave_lane_tokens(const uint8_t* act, size_t stride, int nt, int64_t n, uint8_t* out);

// Pointers into NT tokens' prepared activations, token t at act + t * stride: levels, one float
// scale per block of kBlock values, then the per-block sums of type Sum (and Q4_0's 16-bit biases
// after them: bias16).
template <int kBlock, class Sum, int NT>
struct PackedTokens {
  const int8_t* qs[NT];
  const float* d[NT];
  const Sum* sums[NT];
  PackedTokens(const uint8_t* act, size_t stride, int64_t n) {
    for (int t = 0; t < NT; ++t) {
      const uint8_t* p = act + t * stride;
      qs[t] = reinterpret_cast<const int8_t*>(p);
      d[t] = reinterpret_cast<const float*>(p + n);
      sums[t] = reinterpret_cast<const Sum*>(p + n + 4 * (n / kBlock));
    }
  }
  // Q4_0's biases in the low 16 bits of int32 lanes, block b.
  const int32_t* bias16(int t, int64_t n) const {
    return reinterpret_cast<const int32_t*>(sums[t]) + n / kBlock;
  }
};
// Q6_K's int16 level sums of super-block b (16 values) of a token whose biases start at `bias`.
inline const int16_t* q6k_level_sums(const int32_t* bias, int64_t n, int64_t b) {
  return reinterpret_cast<const int16_t*>(bias + 16 * (n / 256)) + 16 * b;
}

// Runtime token count 1..kMax -> f(std::integral_constant<int, nt>).
template <int kMax, class F>
void with_nt(int nt, F&& f) {
  if constexpr (kMax > 1) {
    if (nt < kMax) return with_nt<kMax - 1>(nt, f);
  }
  f(std::integral_constant<int, kMax>{});
}

}  // namespace ferrum::kernels
