// AVX-512 kernels (F/BW/VL/DQ, VNNI): vpdpbusd for the 32-element types, maddubs + vpdpwssd for the
// K-quants (sub-block scales applied in the same instruction), BF16 widened by shifts (vdpbf16ps in
// kernels_avx512bf16.cpp, the avx512bf16 tier, where the CPU has it). Each
// kernel unpacks a weight block once and uses it for up to kMaxTile tokens (and several rows for
// the F32/F16/BF16 and 32-element tiles) held in registers.
#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "kernels/cpu/attention_tile.h"
#include "kernels/cpu/bf16_tile_zmm.h"
#include "kernels/cpu/exp_avx512.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/kernels_lowbit.h"
#include "kernels/cpu/tile_dispatch.h"

namespace ferrum::kernels {
namespace {

inline float h2f(uint16_t h) {
  return _cvtsh_ss(h);
}

inline float hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// ---------------------------------------------------------------- F32 / F16 / BF16

// Weights converted to F32 16 at a time (F32 or F16), dotted with F32 activations.
template <bool kHalf>
inline __m512 load_w(const uint8_t* w, int64_t i, __mmask16 m) {
  if constexpr (kHalf)
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t*>(w) + i));
  else
    return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(w) + i);
}

// NR rows x NT tokens: every loaded weight vector is used NT times, every activation vector NR times.
template <bool kHalf>
struct FloatTile {
  template <int NR, int NT>
  struct K {
    static void run(const uint8_t* w, size_t ws, int64_t n, const uint8_t* act, size_t stride, float* y,
                    int64_t ldy) {
      __m512 acc[NR][NT];
      const float* a[NT];
      for (int t = 0; t < NT; ++t) {
        for (int r = 0; r < NR; ++r) acc[r][t] = _mm512_setzero_ps();
        a[t] = reinterpret_cast<const float*>(act + t * stride);
      }
      for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (n - i)) - 1);
        __m512 wv[NR];
        for (int r = 0; r < NR; ++r) wv[r] = load_w<kHalf>(w + r * ws, i, m);
        for (int t = 0; t < NT; ++t) {
          const __m512 av = _mm512_maskz_loadu_ps(m, a[t] + i);
          for (int r = 0; r < NR; ++r) acc[r][t] = _mm512_fmadd_ps(wv[r], av, acc[r][t]);
        }
      }
      for (int t = 0; t < NT; ++t)
        for (int r = 0; r < NR; ++r) y[t * ldy + r] = _mm512_reduce_add_ps(acc[r][t]);
    }
  };
};

// BF16 rows x BF16 activations without the BF16 extension (Cascade Lake, Ice Lake): 32 values as
// 16 pairs, widened by shifts; per pair the odd product is added before the even one, as vdpbf16ps
// does (kernels_avx512bf16.cpp), and products of BF16 values are exact in F32, so both give the same
// sums (up to vdpbf16ps flushing denormals).
struct ShiftDot {
  struct V {
    __m512 lo, hi;
  };
  static V load(const uint16_t* p, __mmask32 m) {
    const __m512i v = _mm512_maskz_loadu_epi16(m, p);
    return {bf16_lo(v), bf16_hi(v)};
  }
  static __m512 madd(__m512 acc, const V& w, const V& a) {
    return _mm512_fmadd_ps(w.lo, a.lo, _mm512_fmadd_ps(w.hi, a.hi, acc));
  }
};

// ---------------------------------------------------------------- 32-element blocks x Q8Act

// Unpackers: 32 levels in a ymm (element j in byte j), the scale d and offset coefficient c
// (w = d*q + c); kSigned marks Q8_0 (levels are signed).
struct UnpackQ4_0 {
  using Block = BlockQ4_0;
  static constexpr bool kSigned = false;
  static __m256i q(const Block& b, float& d, float& c) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
    d = h2f(b.d);
    c = -8.0f * d;
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(0x0F));
  }
};
struct UnpackQ4_1 {
  using Block = BlockQ4_1;
  static constexpr bool kSigned = false;
  static __m256i q(const Block& b, float& d, float& c) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
    d = h2f(b.d);
    c = h2f(b.m);
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(0x0F));
  }
};
struct UnpackQ4_Z {  // d * (q - z): the offset -z * d as Q4_0's -8 * d
  using Block = BlockQ4_Z;
  static constexpr bool kSigned = false;
  static __m256i q(const Block& b, float& d, float& c) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
    d = q4z_scale(b);
    c = -static_cast<float>(b.z) * d;
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(0x0F));
  }
};
// IQ4_NL and MXFP4: the nibbles index signed levels (one byte shuffle); each block its own scale.
inline float level_scale(const BlockIQ4_NL& b) {
  return h2f(b.d);
}
inline float level_scale(const BlockMXFP4& b) {
  return mxfp4_scale(b.e);
}
template <typename B, const int8_t* kLevels>
struct UnpackLevels {
  using Block = B;
  static constexpr bool kSigned = true;
  static __m256i q(const Block& b, float& d, float& c) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
    d = level_scale(b);
    c = 0.0f;
    const __m256i table =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kLevels)));
    return _mm256_shuffle_epi8(
        table, _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(0x0F)));
  }
};
using UnpackIQ4NL = UnpackLevels<BlockIQ4_NL, kIQ4Values>;
using UnpackMXFP4 = UnpackLevels<BlockMXFP4, kMXFP4Values>;
template <typename B, bool kMin>
struct UnpackQ5 {
  using Block = B;
  static constexpr bool kSigned = false;
  static __m256i q(const Block& b, float& d, float& c) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
    __m256i v = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(0x0F));
    uint32_t qh;
    std::memcpy(&qh, b.qh, 4);
    v = _mm256_mask_add_epi8(v, static_cast<__mmask32>(qh), v, _mm256_set1_epi8(16));
    d = h2f(b.d);
    if constexpr (kMin)
      c = h2f(b.m);
    else
      c = -16.0f * d;
    return v;
  }
};
struct UnpackQ8_0 {
  using Block = BlockQ8_0;
  static constexpr bool kSigned = true;
  static __m256i q(const Block& b, float& d, float& c) {
    d = h2f(b.d);
    c = 0.0f;
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
  }
};

inline __m512i two_halves(__m256i lo, __m256i hi) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

// Two blocks per step: levels of blocks b, b+1 in one zmm (lanes 0-7 / 8-15 of the dot), the
// weight scales as [d0 x8, d1 x8], the activation scales expanded the same way from the d array.
// NR rows x NT tokens share the activation loads.
template <typename U>
struct Row32 {
  template <int NR, int NT>
  struct K {
    static void run(const uint8_t* w, size_t ws, int64_t n, const uint8_t* act, size_t stride, float* y,
                    int64_t ldy) {
      __m512 acc[NR][NT];
      const int8_t* aq[NT];
      const float *ad[NT], *as[NT];
      for (int t = 0; t < NT; ++t) {
        for (int r = 0; r < NR; ++r) acc[r][t] = _mm512_setzero_ps();
        const Q8Act a(act + t * stride, n);
        aq[t] = a.qs, ad[t] = a.d, as[t] = a.s;
      }
      const __m512i zero = _mm512_setzero_si512();
      const __m512i pair = two_halves(_mm256_setzero_si256(), _mm256_set1_epi32(1));
      // [v[0] x8, v[1] x8] from two consecutive floats; [v[0] x8, 0 x8] for a lone last block (the
      // float after it may be anything, a NaN too, which times 0 would still be NaN).
      auto expand2 = [&](const float* v, bool two) {
        const __m128 f = two ? _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(v))) : _mm_load_ss(v);
        return _mm512_permutexvar_ps(pair, _mm512_castps128_ps512(f));
      };
      auto step = [&](int64_t b, bool two) {
        __m512i q[NR];
        __m512 dw[NR], cw[NR];
        __mmask64 neg[NR];
        for (int r = 0; r < NR; ++r) {
          const auto* wb = reinterpret_cast<const typename U::Block*>(w + r * ws);
          float d0, c0, d1 = 0.0f, c1 = 0.0f;
          const __m256i q0 = U::q(wb[b], d0, c0);
          const __m256i q1 = two ? U::q(wb[b + 1], d1, c1) : _mm256_setzero_si256();
          q[r] = two_halves(q0, q1);
          if constexpr (U::kSigned) {
            neg[r] = _mm512_movepi8_mask(q[r]);
            q[r] = _mm512_abs_epi8(q[r]);
          }
          dw[r] = _mm512_insertf32x8(_mm512_set1_ps(d0), _mm256_set1_ps(d1), 1);
          // The offset c*s lands in 8 lanes each: scale by 1/8 (exact) so the final sum counts it once.
          cw[r] = _mm512_insertf32x8(_mm512_set1_ps(c0 * 0.125f), _mm256_set1_ps(c1 * 0.125f), 1);
        }
        for (int t = 0; t < NT; ++t) {
          const __m512i av = two ? _mm512_loadu_si512(aq[t] + 32 * b)
                                 : _mm512_castsi256_si512(
                                       _mm256_loadu_si256(reinterpret_cast<const __m256i*>(aq[t] + 32 * b)));
          const __m512 da = expand2(ad[t] + b, two);
          __m512 sa = _mm512_setzero_ps();
          if constexpr (!U::kSigned) sa = expand2(as[t] + b, two);
          for (int r = 0; r < NR; ++r) {
            __m512i avr = av;
            if constexpr (U::kSigned) avr = _mm512_mask_sub_epi8(av, neg[r], zero, av);
            const __m512i p = _mm512_dpbusd_epi32(zero, q[r], avr);
            acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(dw[r], da), acc[r][t]);
            if constexpr (!U::kSigned) acc[r][t] = _mm512_fmadd_ps(cw[r], sa, acc[r][t]);
          }
        }
      };
      const int64_t nb = n / 32;
      int64_t b = 0;
      for (; b + 2 <= nb; b += 2) step(b, true);
      if (b < nb) step(b, false);
      for (int t = 0; t < NT; ++t)
        for (int r = 0; r < NR; ++r) y[t * ldy + r] = _mm512_reduce_add_ps(acc[r][t]);
    }
  };
};

template <typename U>
void row32_tile(const uint8_t* w, size_t ws, int nr, int64_t n, const uint8_t* act, size_t as, int nt,
                float* y, int64_t ldy) {
  // One token (decode) goes through the tile as well, so a token's product is the same alone or
  // among others. (A separate ymm one-token path, removed, was 1.6x faster but summed in another
  // order; it mattered for the types without packed kernels here: Q5_1, and FERRUM_PACK=0.)
  tile_fn2<Row32<U>::template K>(w, ws, nr, n, act, as, nt, y, ldy);
}

// ---------------------------------------------------------------- K-quants x Q8_K

template <bool kFive>
struct RowQ4K {
  template <int NT>
  struct K {
    static void run(const uint8_t* w, int64_t n, const uint8_t* act, size_t stride, float* y, int64_t ldy) {
      __m512 acc[NT];
      __m256 accm[NT];
      const BlockQ8_K* a[NT];
      for (int t = 0; t < NT; ++t) {
        acc[t] = _mm512_setzero_ps();
        accm[t] = _mm256_setzero_ps();
        a[t] = reinterpret_cast<const BlockQ8_K*>(act + t * stride);
      }
      const __m512i m4 = _mm512_set1_epi8(0x0F), zero = _mm512_setzero_si512();
      // Lane selectors: chunk c covers sub-blocks 2c (lanes 0-7) and 2c+1 (lanes 8-15).
      __m512i sel[4];
      for (int c = 0; c < 4; ++c) sel[c] = two_halves(_mm256_set1_epi16(2 * c), _mm256_set1_epi16(2 * c + 1));
      const __m128i dup2 = _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
      for (int64_t b = 0; b < n / 256; ++b) {
        const uint8_t *scales, *qs;
        uint16_t dh, dminh;
        __m512i qh2 = zero;
        if constexpr (kFive) {
          const auto& wb = reinterpret_cast<const BlockQ5_K*>(w)[b];
          scales = wb.scales, qs = wb.qs, dh = wb.d, dminh = wb.dmin;
          qh2 = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.qh)));
        } else {
          const auto& wb = reinterpret_cast<const BlockQ4_K*>(w)[b];
          scales = wb.scales, qs = wb.qs, dh = wb.d, dminh = wb.dmin;
        }
        uint64_t sc8, mn8;
        k4_scales_mins(scales, sc8, mn8);
        const __m512i sc16 =
            _mm512_castsi256_si512(_mm256_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(sc8))));
        const __m256i mins =
            _mm256_cvtepu8_epi16(_mm_shuffle_epi8(_mm_cvtsi64_si128(static_cast<int64_t>(mn8)), dup2));
        __m512i q[4], scv[4];
        for (int c = 0; c < 4; ++c) {
          const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * c));
          q[c] = _mm512_and_si512(two_halves(raw, _mm256_srli_epi16(raw, 4)), m4);
          if constexpr (kFive) {
            const __m512i bits = two_halves(_mm256_set1_epi8(static_cast<char>(1 << (2 * c))),
                                            _mm256_set1_epi8(static_cast<char>(2 << (2 * c))));
            q[c] = _mm512_mask_add_epi8(q[c], _mm512_test_epi8_mask(qh2, bits), q[c], _mm512_set1_epi8(16));
          }
          scv[c] = _mm512_permutexvar_epi16(sel[c], sc16);
        }
        const float d = h2f(dh), dmin = h2f(dminh);
        for (int t = 0; t < NT; ++t) {
          const BlockQ8_K& ab = a[t][b];
          __m512i s = zero;
          for (int c = 0; c < 4; ++c) {
            // u8 x s8 pairs -> i16 (at most 2*31*127, no saturation), then i16 x scale pairs -> i32.
            s = _mm512_dpwssd_epi32(s, _mm512_maddubs_epi16(q[c], _mm512_loadu_si512(ab.qs + 64 * c)),
                                    scv[c]);
          }
          acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_set1_ps(d * ab.d), acc[t]);
          const __m256i ms =
              _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(ab.bsums)), mins);
          accm[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ms), _mm256_set1_ps(dmin * ab.d), accm[t]);
        }
      }
      for (int t = 0; t < NT; ++t) y[t * ldy] = _mm512_reduce_add_ps(acc[t]) - hsum256(accm[t]);
    }
  };
};

template <int NT>
struct RowQ6K {
  static void run(const uint8_t* w, int64_t n, const uint8_t* act, size_t stride, float* y, int64_t ldy) {
    __m512 acc[NT];
    const BlockQ8_K* a[NT];
    for (int t = 0; t < NT; ++t) {
      acc[t] = _mm512_setzero_ps();
      a[t] = reinterpret_cast<const BlockQ8_K*>(act + t * stride);
    }
    const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30), zero = _mm512_setzero_si512();
    // i16 lane selectors: chunk c (64 levels) covers sub-blocks 4c..4c+3, 8 i16 lanes each.
    __m512i sel[4];
    for (int c = 0; c < 4; ++c) {
      alignas(64) int16_t idx[32];
      for (int l = 0; l < 32; ++l) idx[l] = static_cast<int16_t>(4 * c + l / 8);
      sel[c] = _mm512_load_si512(idx);
    }
    for (int64_t b = 0; b < n / 256; ++b) {
      const auto& wb = reinterpret_cast<const BlockQ6_K*>(w)[b];
      __m512i q[4], scv[4];
      for (int h = 0; h < 2; ++h) {
        const __m512i ql = _mm512_loadu_si512(wb.ql + 64 * h);
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.qh + 32 * h));
        // Bits 4-5 of each level: (qh>>0)&3, (qh>>2)&3 for the low nibbles, (qh>>4)&3, (qh>>6)&3 for the
        // high.
        const __m512i hA =
            _mm512_and_si512(two_halves(_mm256_slli_epi16(qh, 4), _mm256_slli_epi16(qh, 2)), m30);
        const __m512i hB = _mm512_and_si512(two_halves(qh, _mm256_srli_epi16(qh, 2)), m30);
        q[2 * h] = _mm512_or_si512(_mm512_and_si512(ql, m4), hA);
        q[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4), hB);
      }
      const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.scales));
      const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
      for (int c = 0; c < 4; ++c) scv[c] = _mm512_permutexvar_epi16(sel[c], _mm512_castsi256_si512(sc16));
      const float d = h2f(wb.d);
      for (int t = 0; t < NT; ++t) {
        const BlockQ8_K& ab = a[t][b];
        __m512i s = zero;
        for (int c = 0; c < 4; ++c) {
          // At most 2*63*127 per i16 pair: no saturation.
          s = _mm512_dpwssd_epi32(s, _mm512_maddubs_epi16(q[c], _mm512_loadu_si512(ab.qs + 64 * c)), scv[c]);
        }
        // Levels are stored +32: subtract 32 * sum_k sc[k] * bsums[k].
        const __m256i off =
            _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(ab.bsums)), sc16);
        s = _mm512_sub_epi32(s, _mm512_zextsi256_si512(_mm256_slli_epi32(off, 5)));
        acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_set1_ps(d * ab.d), acc[t]);
      }
    }
    for (int t = 0; t < NT; ++t) y[t * ldy] = _mm512_reduce_add_ps(acc[t]);
  }
};

// ---------------------------------------------------------------- activation quantizers

void quantize_q8_1f(const float* x, uint8_t* out, int64_t n) {
  const __m512 sign = _mm512_set1_ps(-0.0f);
  auto* qs = reinterpret_cast<int8_t*>(out);
  float* ds = reinterpret_cast<float*>(out + n);
  float* ss = ds + n / 32;
  for (int64_t b = 0; b < n / 32; ++b, x += 32) {
    const __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
    const float amax =
        _mm512_reduce_max_ps(_mm512_max_ps(_mm512_andnot_ps(sign, v0), _mm512_andnot_ps(sign, v1)));
    // As llama.cpp's Q8_0/Q8_1 activations: levels from 127/amax, the scale kept as F16.
    const float d = _cvtsh_ss(_cvtss_sh(amax / 127.0f, 0));
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    const __m512 vid = _mm512_set1_ps(id);
    // cvtps rounds to nearest even, as nearbyint in the scalar version.
    const __m512i i0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, vid)),
                  i1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, vid));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + 32 * b), _mm512_cvtepi32_epi8(i0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + 32 * b + 16), _mm512_cvtepi32_epi8(i1));
    ds[b] = d;
    ss[b] = d * static_cast<float>(_mm512_reduce_add_epi32(_mm512_add_epi32(i0, i1)));
  }
}

void quantize_q8_k(const float* x, BlockQ8_K* y, int64_t n) {
  const __m512 sign = _mm512_set1_ps(-0.0f);
  for (int64_t b = 0; b < n / 256; ++b, x += 256) {
    __m512 m = _mm512_setzero_ps();
    for (int j = 0; j < 256; j += 16) m = _mm512_max_ps(m, _mm512_andnot_ps(sign, _mm512_loadu_ps(x + j)));
    const float amax = _mm512_reduce_max_ps(m);
    if (amax == 0.0f) {
      std::memset(&y[b], 0, sizeof(BlockQ8_K));
      continue;
    }
    float max = 0.0f;  // the first element of largest magnitude, with its sign (as ggml)
    const __m512 vamax = _mm512_set1_ps(amax);
    for (int j = 0; j < 256; j += 16) {
      const __mmask16 eq =
          _mm512_cmp_ps_mask(_mm512_andnot_ps(sign, _mm512_loadu_ps(x + j)), vamax, _CMP_EQ_OQ);
      if (eq) {
        max = x[j + __builtin_ctz(eq)];
        break;
      }
    }
    const float iscale = -127.0f / max;
    const __m512 vs = _mm512_set1_ps(iscale);
    const __m512i lim = _mm512_set1_epi32(127);
    for (int j = 0; j < 16; ++j) {
      const __m512i v =
          _mm512_min_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(vs, _mm512_loadu_ps(x + 16 * j))), lim);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y[b].qs + 16 * j), _mm512_cvtepi32_epi8(v));
      y[b].bsums[j] = static_cast<int16_t>(_mm512_reduce_add_epi32(v));
    }
    y[b].d = 1.0f / iscale;
  }
}

void f16_row(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, x + i)));
  }
}

template <template <int> class K>
void row_fn(const uint8_t* w, int64_t n, const uint8_t* act, size_t stride, int nt, float* y, int64_t ldy) {
  tile_dispatch<K>(nt, w, n, act, stride, y, ldy);
}

void softmax16(float* x, int64_t n) {
  __m512 vmx = _mm512_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) vmx = _mm512_max_ps(vmx, _mm512_loadu_ps(x + i));
  float mx = _mm512_reduce_max_ps(vmx);
  for (int64_t j = i; j < n; ++j) mx = x[j] > mx ? x[j] : mx;
  const __m512 m = _mm512_set1_ps(mx);
  __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
  for (i = 0; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
    const __m512 e = _mm512_maskz_mov_ps(k, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), m)));
    _mm512_mask_storeu_ps(x + i, k, e);
    s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
    s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm512_extractf32x8_ps(e, 1)));
  }
  const __m512 inv = _mm512_set1_ps(static_cast<float>(1.0 / _mm512_reduce_add_pd(_mm512_add_pd(s0, s1))));
  for (i = 0; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(x + i, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + i), inv));
  }
}

void swiglu16(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
    const __m512 g = _mm512_maskz_loadu_ps(k, gate + i);
    const __m512 e = exp16(_mm512_sub_ps(_mm512_setzero_ps(), g));
    const __m512 silu = _mm512_div_ps(g, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
    _mm512_mask_storeu_ps(out + i, k, _mm512_mul_ps(silu, _mm512_maskz_loadu_ps(k, up + i)));
  }
}

// out = gelu_tanh(gate) * up = gate * up / (1 + e^-y) (IsaKernels::geglu).
void geglu16(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
    const __m512 g = _mm512_maskz_loadu_ps(k, gate + i);
    const __m512 y = _mm512_mul_ps(
        g, _mm512_fmadd_ps(_mm512_set1_ps(kGeluTanhC3), _mm512_mul_ps(g, g), _mm512_set1_ps(kGeluTanhC1)));
    const __m512 e = exp16(_mm512_sub_ps(_mm512_setzero_ps(), y));
    const __m512 gelu = _mm512_div_ps(g, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
    _mm512_mask_storeu_ps(out + i, k, _mm512_mul_ps(gelu, _mm512_maskz_loadu_ps(k, up + i)));
  }
}

// GELU, erf form: erf(z) = 1 - t (a1 + t (a2 + t (a3 + t (a4 + t a5)))) e^-z^2, t = 1 / (1 + p z),
// for z = |x| / sqrt 2 (Abramowitz & Stegun 7.1.26, |error| <= 1.5e-7), the sign put back after.
void gelu16(float* x, int64_t n) {
  const __m512 sign = _mm512_set1_ps(-0.0f), one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
    const __m512 v = _mm512_maskz_loadu_ps(k, x + i);
    const __m512 z = _mm512_mul_ps(_mm512_andnot_ps(sign, v), _mm512_set1_ps(0.70710678118654752440f));
    const __m512 t = _mm512_div_ps(one, _mm512_fmadd_ps(z, _mm512_set1_ps(0.3275911f), one));
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(1.061405429f), t, _mm512_set1_ps(-1.453152027f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.421413741f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.284496736f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.254829592f));
    p = _mm512_mul_ps(p, t);
    const __m512 e = exp16(_mm512_mul_ps(_mm512_xor_ps(z, sign), z));
    const __m512 erf = _mm512_or_ps(_mm512_fnmadd_ps(p, e, one), _mm512_and_ps(v, sign));
    _mm512_mask_storeu_ps(x + i, k,
                          _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), v), _mm512_add_ps(one, erf)));
  }
}

}  // namespace

const IsaKernels& avx512_kernels() {
  static const IsaKernels k = {"avx512",
                               row32_tile<UnpackQ4_0>,
                               row32_tile<UnpackQ4_1>,
                               row32_tile<UnpackQ5<BlockQ5_0, false>>,
                               row32_tile<UnpackQ5<BlockQ5_1, true>>,
                               row32_tile<UnpackQ8_0>,
                               row32_tile<UnpackIQ4NL>,
                               row32_tile<UnpackMXFP4>,
                               row32_tile<UnpackQ4_Z>,
                               rows_of<row_fn<RowQ4K<false>::K>>,
                               rows_of<row_fn<RowQ4K<true>::K>>,
                               rows_of<row_fn<RowQ6K>>,
                               lowbit_rows_avx512(),
                               tile_fn<Bf16TileOf<ShiftDot>::K>,
                               tile_fn<FloatTile<true>::K>,
                               tile_fn<FloatTile<false>::K>,
                               quantize_q8_1f,
                               quantize_q8_k,
                               f16_row,
                               softmax16,
                               swiglu16,
                               geglu16,
                               gelu16,
                               &avx512_packed_kernels(),
                               &avx512_tile_ops(),
                               16,
                               lowrank_up_add_avx512};
  return k;
}

}  // namespace ferrum::kernels
