// AVX2 + FMA + F16C kernels. Integer dots use maddubs (u8 x s8 -> i16 pairs, no saturation for
// these level ranges) followed by madd (-> i32), with the sub-block scale folded into the madd.
#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "kernels/cpu/attention_tile.h"
#include "kernels/cpu/exp_avx2.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/kernels_lowbit.h"
#include "kernels/cpu/tile_dispatch.h"

namespace ferrum::kernels {
namespace {

inline float h2f(uint16_t h) {
  return _cvtsh_ss(h);
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// sum over groups of 4 of u[i]*s[i] -> 8 x i32.
inline __m256i dot_u8s8(__m256i u, __m256i s) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

// ---------------------------------------------------------------- F32 / F16 / BF16

// Weight kinds converted to F32 8 at a time: 0 = F32, 1 = F16, 2 = BF16.
template <int kKind>
inline __m256 load8(const uint8_t* w, int64_t i) {
  if constexpr (kKind == 0) return _mm256_loadu_ps(reinterpret_cast<const float*>(w) + i);
  const __m128i h =
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(reinterpret_cast<const uint16_t*>(w) + i));
  if constexpr (kKind == 1) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
template <int kKind>
inline float load1(const uint8_t* w, int64_t i) {
  if constexpr (kKind == 0) return reinterpret_cast<const float*>(w)[i];
  const uint16_t h = reinterpret_cast<const uint16_t*>(w)[i];
  return kKind == 1 ? f16_to_f32(h) : bf16_to_f32(h);
}

// NR rows x NT tokens (NR <= 2: 16 ymm registers); kAct: activation kind (0 = F32, 2 = BF16).
template <int kKind, int kAct>
struct FloatTile {
  template <int NR, int NT>
  struct K {
    static void run(const uint8_t* w, size_t ws, int64_t n, const uint8_t* act, size_t stride, float* y,
                    int64_t ldy) {
      // One accumulator per (row, token) whatever the tile's size: a token's sum must not depend on
      // how many tokens share the call (batch invariance; a second interleaved set for small tiles
      // changed the order of the additions).
      constexpr int U = 1;
      __m256 acc[NR][NT][U];
      for (int t = 0; t < NT; ++t)
        for (int r = 0; r < NR; ++r)
          for (int u = 0; u < U; ++u) acc[r][t][u] = _mm256_setzero_ps();
      int64_t i = 0;
      for (; i + 8 * U <= n; i += 8 * U) {
        for (int u = 0; u < U; ++u) {
          __m256 wv[NR];
          for (int r = 0; r < NR; ++r) wv[r] = load8<kKind>(w + r * ws, i + 8 * u);
          for (int t = 0; t < NT; ++t) {
            const __m256 av = load8<kAct>(act + t * stride, i + 8 * u);
            for (int r = 0; r < NR; ++r) acc[r][t][u] = _mm256_fmadd_ps(wv[r], av, acc[r][t][u]);
          }
        }
      }
      for (; i + 8 <= n; i += 8) {
        __m256 wv[NR];
        for (int r = 0; r < NR; ++r) wv[r] = load8<kKind>(w + r * ws, i);
        for (int t = 0; t < NT; ++t) {
          const __m256 av = load8<kAct>(act + t * stride, i);
          for (int r = 0; r < NR; ++r) acc[r][t][0] = _mm256_fmadd_ps(wv[r], av, acc[r][t][0]);
        }
      }
      for (int t = 0; t < NT; ++t)
        for (int r = 0; r < NR; ++r)
          for (int u = 1; u < U; ++u) acc[r][t][0] = _mm256_add_ps(acc[r][t][0], acc[r][t][u]);
      for (int t = 0; t < NT; ++t)
        for (int r = 0; r < NR; ++r) {
          float s = hsum(acc[r][t][0]);
          for (int64_t j = i; j < n; ++j) s += load1<kKind>(w + r * ws, j) * load1<kAct>(act + t * stride, j);
          y[t * ldy + r] = s;
        }
    }
  };
};

// ---------------------------------------------------------------- 32-element blocks x Q8Act

// 0xFF in byte j where bit j of x is set.
inline __m256i bytes_from_bits(uint32_t x) {
  const __m256i sel = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2,
                                       3, 3, 3, 3, 3, 3, 3, 3);
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(x)), sel);
  return _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
}

inline __m256i nibbles(const uint8_t* qs) {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(0x0F));
}

struct UnpackQ4_0 {
  using Block = BlockQ4_0;
  static constexpr bool kSigned = false;
  static __m256i q(const Block& b, float& d, float& c) {
    d = h2f(b.d);
    c = -8.0f * d;
    return nibbles(b.qs);
  }
};
struct UnpackQ4_1 {
  using Block = BlockQ4_1;
  static constexpr bool kSigned = false;
  static __m256i q(const Block& b, float& d, float& c) {
    d = h2f(b.d);
    c = h2f(b.m);
    return nibbles(b.qs);
  }
};
struct UnpackQ4_Z {  // d * (q - z): the offset -z * d as Q4_0's -8 * d
  using Block = BlockQ4_Z;
  static constexpr bool kSigned = false;
  static __m256i q(const Block& b, float& d, float& c) {
    d = q4z_scale(b);
    c = -static_cast<float>(b.z) * d;
    return nibbles(b.qs);
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
    d = level_scale(b);
    c = 0.0f;
    const __m256i table =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kLevels)));
    return _mm256_shuffle_epi8(table, nibbles(b.qs));
  }
};
using UnpackIQ4NL = UnpackLevels<BlockIQ4_NL, kIQ4Values>;
using UnpackMXFP4 = UnpackLevels<BlockMXFP4, kMXFP4Values>;
template <typename B, bool kMin>
struct UnpackQ5 {
  using Block = B;
  static constexpr bool kSigned = false;
  static __m256i q(const Block& b, float& d, float& c) {
    uint32_t qh;
    std::memcpy(&qh, b.qh, 4);
    const __m256i v =
        _mm256_or_si256(nibbles(b.qs), _mm256_and_si256(bytes_from_bits(qh), _mm256_set1_epi8(16)));
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

template <typename U>
struct Row32 {
  template <int NT>
  struct K {
    static void run(const uint8_t* w, int64_t n, const uint8_t* act, size_t stride, float* y, int64_t ldy) {
      const auto* wb = reinterpret_cast<const typename U::Block*>(w);
      __m256 acc[NT];
      float off[NT];
      const int8_t* aq[NT];
      const float *ad[NT], *as[NT];
      for (int t = 0; t < NT; ++t) {
        acc[t] = _mm256_setzero_ps();
        off[t] = 0.0f;
        const Q8Act a(act + t * stride, n);
        aq[t] = a.qs, ad[t] = a.d, as[t] = a.s;
      }
      for (int64_t b = 0; b < n / 32; ++b) {
        float d, c;
        __m256i q = U::q(wb[b], d, c);
        const __m256i sgn = q;
        if constexpr (U::kSigned) q = _mm256_sign_epi8(q, q);
        for (int t = 0; t < NT; ++t) {
          __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(aq[t] + 32 * b));
          if constexpr (U::kSigned) av = _mm256_sign_epi8(av, sgn);
          acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot_u8s8(q, av)), _mm256_set1_ps(d * ad[t][b]), acc[t]);
          if constexpr (!U::kSigned) off[t] += c * as[t][b];
        }
      }
      for (int t = 0; t < NT; ++t) y[t * ldy] = hsum(acc[t]) + off[t];
    }
  };
};

// ---------------------------------------------------------------- K-quants x Q8_K

template <bool kFive>
struct RowQ4K {
  template <int NT>
  struct K {
    static void run(const uint8_t* w, int64_t n, const uint8_t* act, size_t stride, float* y, int64_t ldy) {
      __m256 acc[NT], accm[NT];
      const BlockQ8_K* a[NT];
      for (int t = 0; t < NT; ++t) {
        acc[t] = accm[t] = _mm256_setzero_ps();
        a[t] = reinterpret_cast<const BlockQ8_K*>(act + t * stride);
      }
      const __m256i m4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
      for (int64_t b = 0; b < n / 256; ++b) {
        const uint8_t *scales, *qs;
        uint16_t dh, dminh;
        __m256i qh = _mm256_setzero_si256();
        if constexpr (kFive) {
          const auto& wb = reinterpret_cast<const BlockQ5_K*>(w)[b];
          scales = wb.scales, qs = wb.qs, dh = wb.d, dminh = wb.dmin;
          qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.qh));
        } else {
          const auto& wb = reinterpret_cast<const BlockQ4_K*>(w)[b];
          scales = wb.scales, qs = wb.qs, dh = wb.d, dminh = wb.dmin;
        }
        uint8_t sc[8], mn[8];
        for (int j = 0; j < 8; ++j) k4_scale_min(j, scales, sc[j], mn[j]);
        __m256i q[8];
        for (int c = 0; c < 4; ++c) {
          const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * c));
          q[2 * c] = _mm256_and_si256(raw, m4);
          q[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
          if constexpr (kFive) {
            const __m256i h0 = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * c)), one);
            const __m256i h1 = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * c + 1)), one);
            q[2 * c] = _mm256_or_si256(q[2 * c], _mm256_slli_epi16(h0, 4));
            q[2 * c + 1] = _mm256_or_si256(q[2 * c + 1], _mm256_slli_epi16(h1, 4));
          }
        }
        const __m256i mins = _mm256_setr_epi16(mn[0], mn[0], mn[1], mn[1], mn[2], mn[2], mn[3], mn[3], mn[4],
                                               mn[4], mn[5], mn[5], mn[6], mn[6], mn[7], mn[7]);
        const float d = h2f(dh), dmin = h2f(dminh);
        for (int t = 0; t < NT; ++t) {
          const BlockQ8_K& ab = a[t][b];
          __m256i s = _mm256_setzero_si256();
          for (int j = 0; j < 8; ++j) {
            const __m256i p = _mm256_maddubs_epi16(
                q[j], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ab.qs + 32 * j)));
            s = _mm256_add_epi32(s, _mm256_madd_epi16(p, _mm256_set1_epi16(sc[j])));
          }
          acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(d * ab.d), acc[t]);
          const __m256i ms =
              _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(ab.bsums)), mins);
          accm[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ms), _mm256_set1_ps(dmin * ab.d), accm[t]);
        }
      }
      for (int t = 0; t < NT; ++t) y[t * ldy] = hsum(acc[t]) - hsum(accm[t]);
    }
  };
};

template <int NT>
struct RowQ6K {
  static void run(const uint8_t* w, int64_t n, const uint8_t* act, size_t stride, float* y, int64_t ldy) {
    __m256 acc[NT];
    const BlockQ8_K* a[NT];
    for (int t = 0; t < NT; ++t) {
      acc[t] = _mm256_setzero_ps();
      a[t] = reinterpret_cast<const BlockQ8_K*>(act + t * stride);
    }
    const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
    for (int64_t b = 0; b < n / 256; ++b) {
      const auto& wb = reinterpret_cast<const BlockQ6_K*>(w)[b];
      __m256i q[8], scv[8];
      for (int h = 0; h < 2; ++h) {
        const __m256i ql0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.ql + 64 * h));
        const __m256i ql1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.ql + 64 * h + 32));
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.qh + 32 * h));
        q[4 * h + 0] =
            _mm256_or_si256(_mm256_and_si256(ql0, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30));
        q[4 * h + 1] =
            _mm256_or_si256(_mm256_and_si256(ql1, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30));
        q[4 * h + 2] =
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4), _mm256_and_si256(qh, m30));
        q[4 * h + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                                       _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30));
      }
      for (int j = 0; j < 8; ++j)
        scv[j] = _mm256_set_m128i(_mm_set1_epi16(wb.scales[2 * j + 1]), _mm_set1_epi16(wb.scales[2 * j]));
      const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.scales)));
      const float d = h2f(wb.d);
      for (int t = 0; t < NT; ++t) {
        const BlockQ8_K& ab = a[t][b];
        __m256i s = _mm256_setzero_si256();
        for (int j = 0; j < 8; ++j) {
          const __m256i p = _mm256_maddubs_epi16(
              q[j], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ab.qs + 32 * j)));
          s = _mm256_add_epi32(s, _mm256_madd_epi16(p, scv[j]));
        }
        const __m256i off =
            _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(ab.bsums)), sc16);
        s = _mm256_sub_epi32(s, _mm256_slli_epi32(off, 5));
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(d * ab.d), acc[t]);
      }
    }
    for (int t = 0; t < NT; ++t) y[t * ldy] = hsum(acc[t]);
  }
};

void f16_row(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
  for (; i < n; ++i) y[i] = f16_to_f32(x[i]);
}

// The first m < 8 values at p in a vector (the rest zero), and back.
inline __m256 load_part(const float* p, int64_t m) {
  alignas(32) float t[8] = {};
  for (int64_t i = 0; i < m; ++i) t[i] = p[i];
  return _mm256_load_ps(t);
}
inline void store_part(float* p, __m256 v, int64_t m) {
  alignas(32) float t[8];
  _mm256_store_ps(t, v);
  for (int64_t i = 0; i < m; ++i) p[i] = t[i];
}

// As the AVX-512 softmax16: max, exponentials (exp8) summed in double, one multiply.
void softmax8(float* x, int64_t n) {
  __m256 vmx = _mm256_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) vmx = _mm256_max_ps(vmx, _mm256_loadu_ps(x + i));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, vmx);
  float mx = lanes[0];
  for (int k = 1; k < 8; ++k) mx = lanes[k] > mx ? lanes[k] : mx;
  for (int64_t j = i; j < n; ++j) mx = x[j] > mx ? x[j] : mx;
  const __m256 m = _mm256_set1_ps(mx);
  __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
  auto add = [&](__m256 e) {
    s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
  };
  for (i = 0; i + 8 <= n; i += 8) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), m));
    _mm256_storeu_ps(x + i, e);
    add(e);
  }
  if (i < n) {
    const __m256 e =
        _mm256_and_ps(exp8(_mm256_sub_ps(load_part(x + i, n - i), m)),
                      _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n - i)),
                                                             _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))));
    store_part(x + i, e, n - i);
    add(e);
  }
  alignas(32) double d[4];
  _mm256_store_pd(d, _mm256_add_pd(s0, s1));
  const __m256 inv = _mm256_set1_ps(static_cast<float>(1.0 / ((d[0] + d[1]) + (d[2] + d[3]))));
  for (i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), inv));
  for (; i < n; ++i) x[i] *= _mm256_cvtss_f32(inv);
}

// out = silu(gate) * up = gate / (1 + e^-gate) * up.
inline __m256 swiglu_vec(__m256 g, __m256 u) {
  const __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), g));
  return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), u);
}
// out[i] = f(a[i], b[i]), eight at a time; the tail through a partial load and store.
template <__m256 (*f)(__m256, __m256)>
void map2_8(const float* a, const float* b, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, f(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  if (i < n) store_part(out + i, f(load_part(a + i, n - i), load_part(b + i, n - i)), n - i);
}

// out = gelu_tanh(gate) * up = gate * up / (1 + e^-y) (IsaKernels::geglu).
inline __m256 geglu_vec(__m256 g, __m256 u) {
  const __m256 y = _mm256_mul_ps(
      g, _mm256_fmadd_ps(_mm256_set1_ps(kGeluTanhC3), _mm256_mul_ps(g, g), _mm256_set1_ps(kGeluTanhC1)));
  const __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), y));
  return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), u);
}

// GELU, erf form, as gelu16 (kernels_avx512.cpp): Abramowitz & Stegun 7.1.26 over exp8.
inline __m256 gelu_vec(__m256 v) {
  const __m256 sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f);
  const __m256 z = _mm256_mul_ps(_mm256_andnot_ps(sign, v), _mm256_set1_ps(0.70710678118654752440f));
  const __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(z, _mm256_set1_ps(0.3275911f), one));
  __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(1.061405429f), t, _mm256_set1_ps(-1.453152027f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.421413741f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.284496736f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.254829592f));
  p = _mm256_mul_ps(p, t);
  const __m256 e = exp8(_mm256_mul_ps(_mm256_xor_ps(z, sign), z));
  const __m256 erf = _mm256_or_ps(_mm256_fnmadd_ps(p, e, one), _mm256_and_ps(v, sign));
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), v), _mm256_add_ps(one, erf));
}
void gelu8(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, gelu_vec(_mm256_loadu_ps(x + i)));
  if (i < n) store_part(x + i, gelu_vec(load_part(x + i, n - i)), n - i);
}

template <template <int> class K>
void row_fn(const uint8_t* w, int64_t n, const uint8_t* act, size_t stride, int nt, float* y, int64_t ldy) {
  tile_dispatch<K>(nt, w, n, act, stride, y, ldy);
}

}  // namespace

const IsaKernels& avx2_kernels() {
  // Built on first use: the activation quantizers come from the scalar table (another TU).
  static const IsaKernels k = {"avx2",
                               rows_of<row_fn<Row32<UnpackQ4_0>::K>>,
                               rows_of<row_fn<Row32<UnpackQ4_1>::K>>,
                               rows_of<row_fn<Row32<UnpackQ5<BlockQ5_0, false>>::K>>,
                               rows_of<row_fn<Row32<UnpackQ5<BlockQ5_1, true>>::K>>,
                               rows_of<row_fn<Row32<UnpackQ8_0>::K>>,
                               rows_of<row_fn<Row32<UnpackIQ4NL>::K>>,
                               rows_of<row_fn<Row32<UnpackMXFP4>::K>>,
                               rows_of<row_fn<Row32<UnpackQ4_Z>::K>>,
                               rows_of<row_fn<RowQ4K<false>::K>>,
                               rows_of<row_fn<RowQ4K<true>::K>>,
                               rows_of<row_fn<RowQ6K>>,
                               lowbit_rows_avx2(),
                               tile_fn2<FloatTile<2, 2>::K>,
                               tile_fn2<FloatTile<1, 0>::K>,
                               tile_fn2<FloatTile<0, 0>::K>,
                               scalar_kernels().quantize_q8_1f,
                               scalar_kernels().quantize_q8_k,
                               f16_row,
                               softmax8,
                               map2_8<swiglu_vec>,
                               map2_8<geglu_vec>,
                               gelu8,
                               &avx2_packed_kernels(),
                               &avx2_tile_ops(),
                               8,
                               lowrank_up_add_avx2};
  return k;
}

}  // namespace ferrum::kernels
