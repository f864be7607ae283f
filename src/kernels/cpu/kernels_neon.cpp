// The NEON tier (baseline ARMv8.0 Advanced SIMD, every AArch64 core): row kernels for the files'
// layouts, the F16 conversion, softmax, SwiGLU and the tier's table. Integer dots multiply int8
// lanes with vmull_s8 / vmlal_high_s8 (two products per int16 lane: at most 2 * 128 * 127, no
// overflow for these level ranges) and widen with vpadalq_s16. Tiles of several rows and tokens
// share the weight unpacking and the activation loads, but every (row, token) result is computed
// with the same operations in the same order whatever the tile shape: outputs do not depend on how
// many rows or tokens share a call.
#include <arm_neon.h>

#include <cmath>
#include <cstring>
#include <type_traits>

#include "core/fp16.h"
#include "kernels/cpu/attention_tile.h"
#include "kernels/cpu/exp_neon.h"
#include "kernels/cpu/kernels.h"

namespace ferrum::kernels {
namespace {

inline float h2f(uint16_t h) {
  __fp16 v;  // one fcvt: exact for every half
  std::memcpy(&v, &h, 2);
  return v;
}

// sum of a[i] * b[i] over 32 lanes (a0|a1 against b0|b1) as 4 int32 partial sums.
inline int32x4_t dot32(int8x16_t a0, int8x16_t a1, int8x16_t b0, int8x16_t b1) {
  const int16x8_t p0 = vmlal_high_s8(vmull_s8(vget_low_s8(a0), vget_low_s8(b0)), a0, b0);
  const int16x8_t p1 = vmlal_high_s8(vmull_s8(vget_low_s8(a1), vget_low_s8(b1)), a1, b1);
  return vpadalq_s16(vpaddlq_s16(p0), p1);
}
// The same over 16 lanes.
inline int32x4_t dot16(int8x16_t a, int8x16_t b) {
  return vpaddlq_s16(vmlal_high_s8(vmull_s8(vget_low_s8(a), vget_low_s8(b)), a, b));
}

// ---------------------------------------------------------------- tiles

// The loops over a tile's rows and tokens are unrolled by pragma: they index arrays of vectors,
// which stay in registers only once every index is a constant.

// K::run<NR, NT>: NR rows (at w + r*ws) x NT tokens (at act + t*as) -> y[t*ldy + r]. Rows NR at a
// time, then the rest in halves; nt is NTa or NTb.
template <typename K, int NR, int NTa, int NTb>
void tile_rows(const uint8_t* w, size_t ws, int nr, int64_t n, const uint8_t* act, size_t as, int nt,
               float* y, int64_t ldy) {
  for (; nr >= NR; nr -= NR, w += NR * ws, y += NR) {
    if (nt == NTa)
      K::template run<NR, NTa>(w, ws, n, act, as, y, ldy);
    else
      K::template run<NR, NTb>(w, ws, n, act, as, y, ldy);
  }
  if constexpr (NR > 1)
    if (nr > 0) tile_rows<K, NR / 2, NTa, NTb>(w, ws, nr, n, act, as, nt, y, ldy);
}
// Tiles of kFew rows for up to two tokens, of kMany rows for three or four (so that a tile's
// accumulators and unpacked weights stay in the 32 vector registers).
template <typename K, int kFew, int kMany>
void tile_fn(const uint8_t* w, size_t ws, int nr, int64_t n, const uint8_t* act, size_t as, int nt, float* y,
             int64_t ldy) {
  if (nt <= 2)
    tile_rows<K, kFew, 1, 2>(w, ws, nr, n, act, as, nt, y, ldy);
  else
    tile_rows<K, kMany, 3, 4>(w, ws, nr, n, act, as, nt, y, ldy);
}

// ---------------------------------------------------------------- F32 / F16 / BF16

// Value kinds: 0 = F32, 1 = F16, 2 = BF16; 8 values as two vectors.
template <int kKind>
inline void load8(const uint8_t* p, int64_t i, float32x4_t& lo, float32x4_t& hi) {
  if constexpr (kKind == 0) {
    const float* f = reinterpret_cast<const float*>(p) + i;
    lo = vld1q_f32(f);
    hi = vld1q_f32(f + 4);
  } else {
    const uint16x8_t h = vld1q_u16(reinterpret_cast<const uint16_t*>(p) + i);
    if constexpr (kKind == 1) {
      lo = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(h)));
      hi = vcvt_high_f32_f16(vreinterpretq_f16_u16(h));
    } else {  // bfloat16: the upper half of a float
      lo = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(h), 16));
      hi = vreinterpretq_f32_u32(vshll_high_n_u16(h, 16));
    }
  }
}
template <int kKind>
inline float load1(const uint8_t* p, int64_t i) {
  if constexpr (kKind == 0) return reinterpret_cast<const float*>(p)[i];
  const uint16_t h = reinterpret_cast<const uint16_t*>(p)[i];
  return kKind == 1 ? h2f(h) : bf16_to_f32(h);
}

// kKind weights against kAct activations (F32, or BF16 for BF16 weights). Two accumulators (8
// partial sums, as the scalar kernels) per (row, token), whatever the tile size.
template <int kKind, int kAct>
struct FloatTile {
  template <int NR, int NT>
  static void run(const uint8_t* w, size_t ws, int64_t n, const uint8_t* act, size_t as, float* y,
                  int64_t ldy) {
    float32x4_t acc[NR][NT][2];
    for (int r = 0; r < NR; ++r)
      for (int t = 0; t < NT; ++t) acc[r][t][0] = acc[r][t][1] = vdupq_n_f32(0.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      float32x4_t w0[NR], w1[NR];
#pragma GCC unroll 4
      for (int r = 0; r < NR; ++r) load8<kKind>(w + r * ws, i, w0[r], w1[r]);
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) {
        float32x4_t a0, a1;
        load8<kAct>(act + t * as, i, a0, a1);
#pragma GCC unroll 4
        for (int r = 0; r < NR; ++r) {
          acc[r][t][0] = vfmaq_f32(acc[r][t][0], w0[r], a0);
          acc[r][t][1] = vfmaq_f32(acc[r][t][1], w1[r], a1);
        }
      }
    }
    for (int r = 0; r < NR; ++r)
      for (int t = 0; t < NT; ++t) {
        float s = vaddvq_f32(vaddq_f32(acc[r][t][0], acc[r][t][1]));
        for (int64_t j = i; j < n; ++j)
          s = std::fma(load1<kKind>(w + r * ws, j), load1<kAct>(act + t * as, j), s);
        y[t * ldy + r] = s;
      }
  }
};

// ---------------------------------------------------------------- 32-element blocks x Q8Act

// Unpackers: the 32 levels as int8 (elements 0..15, 16..31), the scale d and, where the weights
// have a min (kOffset), its coefficient c: w = d*q + c, applied once per block with the
// activation sums. Q4_0 / Q5_0 subtract their fixed offsets from the levels instead.
inline void nibbles(const uint8_t* qs, uint8x16_t& lo, uint8x16_t& hi) {
  const uint8x16_t raw = vld1q_u8(qs);
  lo = vandq_u8(raw, vdupq_n_u8(0x0F));
  hi = vshrq_n_u8(raw, 4);
}
// 0x10 in byte j of (lo, hi) where bit j of the 32 bits at qh is set.
inline void fifth_bits(const uint8_t* qh, uint8x16_t& lo, uint8x16_t& hi) {
  static constexpr uint8_t kBit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  const uint8x16_t bit = vld1q_u8(kBit);
  const uint8x16_t b01 = vcombine_u8(vdup_n_u8(qh[0]), vdup_n_u8(qh[1]));
  const uint8x16_t b23 = vcombine_u8(vdup_n_u8(qh[2]), vdup_n_u8(qh[3]));
  lo = vandq_u8(vtstq_u8(b01, bit), vdupq_n_u8(0x10));
  hi = vandq_u8(vtstq_u8(b23, bit), vdupq_n_u8(0x10));
}

struct UnpackQ4_0 {
  using Block = BlockQ4_0;
  static constexpr bool kOffset = false;
  static void q(const Block& b, int8x16_t& q0, int8x16_t& q1, float& d, float& c) {
    uint8x16_t lo, hi;
    nibbles(b.qs, lo, hi);
    q0 = vsubq_s8(vreinterpretq_s8_u8(lo), vdupq_n_s8(8));
    q1 = vsubq_s8(vreinterpretq_s8_u8(hi), vdupq_n_s8(8));
    d = h2f(b.d);
    c = 0.0f;
  }
};
struct UnpackQ4_Z {  // q - z (-16..15) as signed levels, as Q4_0's q - 8
  using Block = BlockQ4_Z;
  static constexpr bool kOffset = false;
  static void q(const Block& b, int8x16_t& q0, int8x16_t& q1, float& d, float& c) {
    uint8x16_t lo, hi;
    nibbles(b.qs, lo, hi);
    const int8x16_t z = vdupq_n_s8(static_cast<int8_t>(b.z));
    q0 = vsubq_s8(vreinterpretq_s8_u8(lo), z);
    q1 = vsubq_s8(vreinterpretq_s8_u8(hi), z);
    d = q4z_scale(b);
    c = 0.0f;
  }
};
struct UnpackQ4_1 {
  using Block = BlockQ4_1;
  static constexpr bool kOffset = true;
  static void q(const Block& b, int8x16_t& q0, int8x16_t& q1, float& d, float& c) {
    uint8x16_t lo, hi;
    nibbles(b.qs, lo, hi);
    q0 = vreinterpretq_s8_u8(lo);
    q1 = vreinterpretq_s8_u8(hi);
    d = h2f(b.d);
    c = h2f(b.m);
  }
};
// IQ4_NL and MXFP4: the nibbles index signed levels (one table lookup per 16); each block its own
// scale.
inline float level_scale(const BlockIQ4_NL& b) {
  return h2f(b.d);
}
inline float level_scale(const BlockMXFP4& b) {
  return mxfp4_scale(b.e);
}
template <typename B, const int8_t* kLevels>
struct UnpackLevels {
  using Block = B;
  static constexpr bool kOffset = false;
  static void q(const Block& b, int8x16_t& q0, int8x16_t& q1, float& d, float& c) {
    uint8x16_t lo, hi;
    nibbles(b.qs, lo, hi);
    const int8x16_t table = vld1q_s8(kLevels);
    q0 = vqtbl1q_s8(table, lo);
    q1 = vqtbl1q_s8(table, hi);
    d = level_scale(b);
    c = 0.0f;
  }
};
using UnpackIQ4NL = UnpackLevels<BlockIQ4_NL, kIQ4Values>;
using UnpackMXFP4 = UnpackLevels<BlockMXFP4, kMXFP4Values>;
template <typename B, bool kMin>
struct UnpackQ5 {
  using Block = B;
  static constexpr bool kOffset = kMin;
  static void q(const Block& b, int8x16_t& q0, int8x16_t& q1, float& d, float& c) {
    uint8x16_t lo, hi, h0, h1;
    nibbles(b.qs, lo, hi);
    fifth_bits(b.qh, h0, h1);
    q0 = vreinterpretq_s8_u8(vorrq_u8(lo, h0));
    q1 = vreinterpretq_s8_u8(vorrq_u8(hi, h1));
    d = h2f(b.d);
    if constexpr (kMin) {
      c = h2f(b.m);
    } else {
      q0 = vsubq_s8(q0, vdupq_n_s8(16));
      q1 = vsubq_s8(q1, vdupq_n_s8(16));
      c = 0.0f;
    }
  }
};
struct UnpackQ8_0 {
  using Block = BlockQ8_0;
  static constexpr bool kOffset = false;
  static void q(const Block& b, int8x16_t& q0, int8x16_t& q1, float& d, float& c) {
    q0 = vld1q_s8(b.qs);
    q1 = vld1q_s8(b.qs + 16);
    d = h2f(b.d);
    c = 0.0f;
  }
};

template <typename U>
struct Row32 {
  template <int NR, int NT>
  static void run(const uint8_t* w, size_t ws, int64_t n, const uint8_t* act, size_t as, float* y,
                  int64_t ldy) {
    using Block = typename U::Block;
    float32x4_t acc[NR][NT];
    float off[NR][NT];
    const int8_t* aq[NT];
    const float *ad[NT], *asum[NT];
    for (int t = 0; t < NT; ++t) {
      const Q8Act a(act + t * as, n);
      aq[t] = a.qs, ad[t] = a.d, asum[t] = a.s;
      for (int r = 0; r < NR; ++r) acc[r][t] = vdupq_n_f32(0.0f), off[r][t] = 0.0f;
    }
    for (int64_t b = 0; b < n / 32; ++b) {
      int8x16_t q0[NR], q1[NR];
      float d[NR], c[NR];
#pragma GCC unroll 4
      for (int r = 0; r < NR; ++r)
        U::q(reinterpret_cast<const Block*>(w + r * ws)[b], q0[r], q1[r], d[r], c[r]);
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) {
        const int8x16_t a0 = vld1q_s8(aq[t] + 32 * b), a1 = vld1q_s8(aq[t] + 32 * b + 16);
#pragma GCC unroll 4
        for (int r = 0; r < NR; ++r) {
          acc[r][t] = vfmaq_n_f32(acc[r][t], vcvtq_f32_s32(dot32(q0[r], q1[r], a0, a1)), d[r] * ad[t][b]);
          if constexpr (U::kOffset) off[r][t] = std::fma(c[r], asum[t][b], off[r][t]);
        }
      }
    }
    for (int r = 0; r < NR; ++r)
      for (int t = 0; t < NT; ++t) y[t * ldy + r] = vaddvq_f32(acc[r][t]) + off[r][t];
  }
};

// ---------------------------------------------------------------- K-quants x Q8_K

// An NR x NT tile of a K-quant product: its float accumulators (4 lanes each, summed at the end)
// and its tokens' Q8_K activation rows. Shared by TileQ4K and TileQ6K.
template <int NR, int NT>
struct KTile {
  float32x4_t acc[NR][NT];
  const BlockQ8_K* a[NT];
  KTile(const uint8_t* act, size_t as) {
    for (int t = 0; t < NT; ++t) {
      a[t] = reinterpret_cast<const BlockQ8_K*>(act + t * as);
      for (int r = 0; r < NR; ++r) acc[r][t] = vdupq_n_f32(0.0f);
    }
  }
  void store(float* y, int64_t ldy) const {
    for (int r = 0; r < NR; ++r)
      for (int t = 0; t < NT; ++t) y[t * ldy + r] = vaddvq_f32(acc[r][t]);
  }
};

// Q4_K / Q5_K: per super-block, isum = sum_j sc[j] * dot(q_j, a_j) over the 8 sub-blocks of 32 (in
// int32 lanes), msum = sum_j m[j] * (activation sum of sub-block j); y += d*ad*isum - dmin*ad*msum.
template <bool kFive>
struct TileQ4K {
  using Block = std::conditional_t<kFive, BlockQ5_K, BlockQ4_K>;
  template <int NR, int NT>
  static void run(const uint8_t* w, size_t ws, int64_t n, const uint8_t* act, size_t as, float* y,
                  int64_t ldy) {
    KTile<NR, NT> tile(act, as);
    auto& acc = tile.acc;
    auto& a = tile.a;
    const uint8x16_t m4 = vdupq_n_u8(0x0F), b4 = vdupq_n_u8(0x10);
    for (int64_t b = 0; b < n / 256; ++b) {
      const Block* wb[NR];
      uint8_t sc[NR][8];
      int16x8_t mins[NR];
      int32x4_t isum[NR][NT];
#pragma GCC unroll 4
      for (int r = 0; r < NR; ++r) {
        wb[r] = reinterpret_cast<const Block*>(w + r * ws) + b;
        uint64_t s, m;
        k4_scales_mins(wb[r]->scales, s, m);
        std::memcpy(sc[r], &s, 8);  // little-endian: byte j is scale j
        mins[r] = vreinterpretq_s16_u16(vmovl_u8(vcreate_u8(m)));
#pragma GCC unroll 4
        for (int t = 0; t < NT; ++t) isum[r][t] = vdupq_n_s32(0);
      }
      for (int c = 0; c < 4; ++c) {  // sub-blocks 2c (low nibbles) and 2c+1 (high nibbles)
        int8x16_t q[NR][4];
#pragma GCC unroll 4
        for (int r = 0; r < NR; ++r) {
          const uint8x16_t raw0 = vld1q_u8(wb[r]->qs + 32 * c), raw1 = vld1q_u8(wb[r]->qs + 32 * c + 16);
          uint8x16_t v[4] = {vandq_u8(raw0, m4), vandq_u8(raw1, m4), vshrq_n_u8(raw0, 4),
                             vshrq_n_u8(raw1, 4)};
          if constexpr (kFive) {
            const uint8x16_t h0 = vld1q_u8(wb[r]->qh), h1 = vld1q_u8(wb[r]->qh + 16);
            const uint8x16_t lo = vdupq_n_u8(static_cast<uint8_t>(1 << (2 * c)));
            const uint8x16_t hi = vdupq_n_u8(static_cast<uint8_t>(2 << (2 * c)));
            v[0] = vorrq_u8(v[0], vandq_u8(vtstq_u8(h0, lo), b4));
            v[1] = vorrq_u8(v[1], vandq_u8(vtstq_u8(h1, lo), b4));
            v[2] = vorrq_u8(v[2], vandq_u8(vtstq_u8(h0, hi), b4));
            v[3] = vorrq_u8(v[3], vandq_u8(vtstq_u8(h1, hi), b4));
          }
#pragma GCC unroll 4
          for (int k = 0; k < 4; ++k) q[r][k] = vreinterpretq_s8_u8(v[k]);
        }
#pragma GCC unroll 4
        for (int t = 0; t < NT; ++t) {
          const int8_t* aq = a[t][b].qs + 64 * c;
          const int8x16_t a0 = vld1q_s8(aq), a1 = vld1q_s8(aq + 16), a2 = vld1q_s8(aq + 32),
                          a3 = vld1q_s8(aq + 48);
#pragma GCC unroll 4
          for (int r = 0; r < NR; ++r) {
            isum[r][t] = vmlaq_n_s32(isum[r][t], dot32(q[r][0], q[r][1], a0, a1), sc[r][2 * c]);
            isum[r][t] = vmlaq_n_s32(isum[r][t], dot32(q[r][2], q[r][3], a2, a3), sc[r][2 * c + 1]);
          }
        }
      }
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) {
        const BlockQ8_K& ab = a[t][b];
        // Activation sums of the 8 sub-blocks of 32 (two groups of 16 each).
        const int16x8_t bs = vpaddq_s16(vld1q_s16(ab.bsums), vld1q_s16(ab.bsums + 8));
#pragma GCC unroll 4
        for (int r = 0; r < NR; ++r) {
          const int32x4_t ms =
              vmlal_high_s16(vmull_s16(vget_low_s16(bs), vget_low_s16(mins[r])), bs, mins[r]);
          const float d = h2f(wb[r]->d), dmin = h2f(wb[r]->dmin);
          acc[r][t] = vfmaq_n_f32(acc[r][t], vcvtq_f32_s32(isum[r][t]), d * ab.d);
          acc[r][t] = vfmaq_n_f32(acc[r][t], vcvtq_f32_s32(ms), -(dmin * ab.d));
        }
      }
    }
    tile.store(y, ldy);
  }
};

// Q6_K: levels q - 32 (signed), so isum = sum_k sc[k] * dot(q_k - 32, a_k) over the 16 sub-blocks
// of 16 needs no activation sums; y += d*ad*isum.
struct TileQ6K {
  // Levels of elements 32c .. 32c+31 of half h (128 elements): low 4 bits from ql (the low
  // nibbles of its first or second 32 bytes for c = 0, 1; the high nibbles for c = 2, 3), high 2
  // bits from bits 2c, 2c+1 of qh.
  static void chunk(const BlockQ6_K& wb, int h, int c, int8x16_t q[2]) {
#pragma GCC unroll 4
    for (int k = 0; k < 2; ++k) {
      const uint8x16_t l = vld1q_u8(wb.ql + 64 * h + 32 * (c & 1) + 16 * k);
      const uint8x16_t hb = vld1q_u8(wb.qh + 32 * h + 16 * k);
      const uint8x16_t lo = c < 2 ? vandq_u8(l, vdupq_n_u8(0x0F)) : vshrq_n_u8(l, 4);
      // Bits 2c, 2c+1 to bits 4, 5 (a negative count shifts right).
      const uint8x16_t hi =
          vandq_u8(vshlq_u8(hb, vdupq_n_s8(static_cast<int8_t>(4 - 2 * c))), vdupq_n_u8(0x30));
      q[k] = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(lo, hi)), vdupq_n_s8(32));
    }
  }
  template <int NR, int NT>
  static void run(const uint8_t* w, size_t ws, int64_t n, const uint8_t* act, size_t as, float* y,
                  int64_t ldy) {
    KTile<NR, NT> tile(act, as);
    auto& acc = tile.acc;
    auto& a = tile.a;
    for (int64_t b = 0; b < n / 256; ++b) {
      const BlockQ6_K* wb[NR];
      int32x4_t isum[NR][NT];
#pragma GCC unroll 4
      for (int r = 0; r < NR; ++r) {
        wb[r] = reinterpret_cast<const BlockQ6_K*>(w + r * ws) + b;
#pragma GCC unroll 4
        for (int t = 0; t < NT; ++t) isum[r][t] = vdupq_n_s32(0);
      }
      for (int h = 0; h < 2; ++h)
        for (int c = 0; c < 4; ++c) {  // sub-blocks 8h + 2c and 8h + 2c + 1
          int8x16_t q[NR][2];
#pragma GCC unroll 4
          for (int r = 0; r < NR; ++r) chunk(*wb[r], h, c, q[r]);
          const int k = 8 * h + 2 * c;
#pragma GCC unroll 4
          for (int t = 0; t < NT; ++t) {
            const int8_t* aq = a[t][b].qs + 16 * k;
            const int8x16_t a0 = vld1q_s8(aq), a1 = vld1q_s8(aq + 16);
#pragma GCC unroll 4
            for (int r = 0; r < NR; ++r) {
              isum[r][t] = vmlaq_n_s32(isum[r][t], dot16(q[r][0], a0), wb[r]->scales[k]);
              isum[r][t] = vmlaq_n_s32(isum[r][t], dot16(q[r][1], a1), wb[r]->scales[k + 1]);
            }
          }
        }
#pragma GCC unroll 4
      for (int r = 0; r < NR; ++r) {
        const float d = h2f(wb[r]->d);
#pragma GCC unroll 4
        for (int t = 0; t < NT; ++t)
          acc[r][t] = vfmaq_n_f32(acc[r][t], vcvtq_f32_s32(isum[r][t]), d * a[t][b].d);
      }
    }
    tile.store(y, ldy);
  }
};

// ---------------------------------------------------------------- element-wise

void f16_row(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint16x8_t h = vld1q_u16(x + i);
    vst1q_f32(y + i, vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(h))));
    vst1q_f32(y + i + 4, vcvt_high_f32_f16(vreinterpretq_f16_u16(h)));
  }
  for (; i < n; ++i) y[i] = h2f(x[i]);
}

// The first m < 4 values at p in a vector, the other lanes `fill`; and back.
inline float32x4_t load_part(const float* p, int64_t m, float fill) {
  float t[4] = {fill, fill, fill, fill};
  for (int64_t i = 0; i < m; ++i) t[i] = p[i];
  return vld1q_f32(t);
}
inline void store_part(float* p, float32x4_t v, int64_t m) {
  float t[4];
  vst1q_f32(t, v);
  for (int64_t i = 0; i < m; ++i) p[i] = t[i];
}

// As softmax8 (kernels_avx2.cpp): max, exponentials (exp4) summed in double, one multiply. The
// tail goes through exp4 too (padded with -inf, whose exponential is 0), so every element's
// exponential is the same wherever it sits.
void softmax4(float* x, int64_t n) {
  float32x4_t vmx = vdupq_n_f32(-INFINITY);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vmx = vmaxq_f32(vmx, vld1q_f32(x + i));
  float mx = vmaxvq_f32(vmx);
  for (int64_t j = i; j < n; ++j) mx = x[j] > mx ? x[j] : mx;
  const float32x4_t m = vdupq_n_f32(mx);
  float64x2_t s0 = vdupq_n_f64(0.0), s1 = vdupq_n_f64(0.0);
  auto add = [&](float32x4_t e) {
    s0 = vaddq_f64(s0, vcvt_f64_f32(vget_low_f32(e)));
    s1 = vaddq_f64(s1, vcvt_high_f64_f32(e));
  };
  for (i = 0; i + 4 <= n; i += 4) {
    const float32x4_t e = exp4(vsubq_f32(vld1q_f32(x + i), m));
    vst1q_f32(x + i, e);
    add(e);
  }
  if (i < n) {
    const float32x4_t e = exp4(vsubq_f32(load_part(x + i, n - i, -INFINITY), m));
    store_part(x + i, e, n - i);
    add(e);
  }
  const float inv = static_cast<float>(1.0 / vaddvq_f64(vaddq_f64(s0, s1)));
  for (i = 0; i + 4 <= n; i += 4) vst1q_f32(x + i, vmulq_n_f32(vld1q_f32(x + i), inv));
  for (; i < n; ++i) x[i] *= inv;
}

// out = silu(gate) * up = gate / (1 + e^-gate) * up.
inline float32x4_t swiglu_vec(float32x4_t g, float32x4_t u) {
  const float32x4_t e = exp4(vnegq_f32(g));
  return vmulq_f32(vdivq_f32(g, vaddq_f32(vdupq_n_f32(1.0f), e)), u);
}
// out[i] = f(a[i], b[i]), four at a time; the tail through a partial load and store.
template <float32x4_t (*f)(float32x4_t, float32x4_t)>
void map2_4(const float* a, const float* b, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(out + i, f(vld1q_f32(a + i), vld1q_f32(b + i)));
  if (i < n) store_part(out + i, f(load_part(a + i, n - i, 0.0f), load_part(b + i, n - i, 0.0f)), n - i);
}

// out = gelu_tanh(gate) * up = gate * up / (1 + e^-y) (IsaKernels::geglu).
inline float32x4_t geglu_vec(float32x4_t g, float32x4_t u) {
  const float32x4_t y =
      vmulq_f32(g, vfmaq_f32(vdupq_n_f32(kGeluTanhC1), vdupq_n_f32(kGeluTanhC3), vmulq_f32(g, g)));
  const float32x4_t e = exp4(vnegq_f32(y));
  return vmulq_f32(vdivq_f32(g, vaddq_f32(vdupq_n_f32(1.0f), e)), u);
}

// GELU, erf form, as gelu16 (kernels_avx512.cpp): Abramowitz & Stegun 7.1.26 over exp4.
inline float32x4_t gelu_vec(float32x4_t v) {
  const float32x4_t one = vdupq_n_f32(1.0f);
  const float32x4_t z = vmulq_n_f32(vabsq_f32(v), 0.70710678118654752440f);
  const float32x4_t t = vdivq_f32(one, vfmaq_n_f32(one, z, 0.3275911f));
  float32x4_t p = vfmaq_n_f32(vdupq_n_f32(-1.453152027f), t, 1.061405429f);
  p = vfmaq_f32(vdupq_n_f32(1.421413741f), p, t);
  p = vfmaq_f32(vdupq_n_f32(-0.284496736f), p, t);
  p = vfmaq_f32(vdupq_n_f32(0.254829592f), p, t);
  p = vmulq_f32(p, t);
  const float32x4_t e = exp4(vnegq_f32(vmulq_f32(z, z)));
  const float32x4_t erf_abs = vfmsq_f32(one, p, e);
  const float32x4_t erf = vbslq_f32(vcltq_f32(v, vdupq_n_f32(0.0f)), vnegq_f32(erf_abs), erf_abs);
  return vmulq_f32(vmulq_n_f32(v, 0.5f), vaddq_f32(one, erf));
}
void gelu4(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(x + i, gelu_vec(vld1q_f32(x + i)));
  if (i < n) store_part(x + i, gelu_vec(load_part(x + i, n - i, 0.0f)), n - i);
}

}  // namespace

const IsaKernels& neon_kernels() {
  // Built on first use: the activation quantizers come from the scalar table (another TU).
  static const IsaKernels k = {
      "neon",
      tile_fn<Row32<UnpackQ4_0>, 4, 2>,
      tile_fn<Row32<UnpackQ4_1>, 2, 2>,
      tile_fn<Row32<UnpackQ5<BlockQ5_0, false>>, 4, 2>,
      tile_fn<Row32<UnpackQ5<BlockQ5_1, true>>, 2, 2>,  // the mins take registers
      tile_fn<Row32<UnpackQ8_0>, 4, 2>,
      tile_fn<Row32<UnpackIQ4NL>, 4, 2>,
      tile_fn<Row32<UnpackMXFP4>, 4, 2>,
      tile_fn<Row32<UnpackQ4_Z>, 4, 2>,
      tile_fn<TileQ4K<false>, 2, 1>,
      tile_fn<TileQ4K<true>, 2, 1>,
      tile_fn<TileQ6K, 2, 1>,
      scalar_kernels().lowbit,  // Q2_K, Q3_K, IQ4_XS, the grid i-quants: the portable kernels
      tile_fn<FloatTile<2, 2>, 4, 2>,
      tile_fn<FloatTile<1, 0>, 4, 2>,
      tile_fn<FloatTile<0, 0>, 4, 2>,
      scalar_kernels().quantize_q8_1f,
      scalar_kernels().quantize_q8_k,
      f16_row,
      softmax4,
      map2_4<swiglu_vec>,
      map2_4<geglu_vec>,
      gelu4,
      &neon_packed_kernels(),
      &neon_tile_ops(),
      4,
      lowrank_up_add_neon};
  return k;
}

}  // namespace ferrum::kernels
