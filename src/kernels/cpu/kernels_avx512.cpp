// AVX-512 kernels (F/BW/VL/DQ + VNNI vpdpbusd for the integer dots, BF16 vdpbf16ps). Each row kernel
// unpacks a weight block once and dots it with up to kMaxTile tokens held in registers.
#include <immintrin.h>

#include <cstring>

#include "core/fp16.h"
#include "kernels/cpu/kernels.h"

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

// Dispatches a runtime token count 1..kMaxTile to a template instantiation.
template <template <int> class K, typename... Args>
void tile_dispatch(int nt, Args... args) {
  switch (nt) {
    case 1:
      return K<1>::run(args...);
    case 2:
      return K<2>::run(args...);
    case 3:
      return K<3>::run(args...);
    default:
      return K<4>::run(args...);
  }
}

// ---------------------------------------------------------------- F32 / F16 / BF16

float dot_f32(const float* a, const float* b, int64_t n) {
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
    s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
    s2 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 32), _mm512_loadu_ps(b + i + 32), s2);
    s3 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 48), _mm512_loadu_ps(b + i + 48), s3);
  }
  for (; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (n - i)) - 1);
    s0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), s0);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

// Weights converted to F32 16 at a time (F32 or F16), dotted with F32 activations.
template <bool kHalf>
inline __m512 load_w(const uint8_t* w, int64_t i, __mmask16 m) {
  if constexpr (kHalf)
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t*>(w) + i));
  else
    return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(w) + i);
}

template <bool kHalf>
struct FloatRow {
  template <int NT>
  struct K {
    static void run(const uint8_t* w, int64_t n, const uint8_t* act, size_t stride, float* y, int64_t ldy) {
      __m512 acc[NT][2];
      const float* a[NT];
      for (int t = 0; t < NT; ++t) {
        acc[t][0] = acc[t][1] = _mm512_setzero_ps();
        a[t] = reinterpret_cast<const float*>(act + t * stride);
      }
      int64_t i = 0;
      for (; i + 32 <= n; i += 32) {
        const __m512 w0 = load_w<kHalf>(w, i, 0xFFFF), w1 = load_w<kHalf>(w, i + 16, 0xFFFF);
        for (int t = 0; t < NT; ++t) {
          acc[t][0] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(a[t] + i), acc[t][0]);
          acc[t][1] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(a[t] + i + 16), acc[t][1]);
        }
      }
      for (; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (n - i)) - 1);
        const __m512 w0 = load_w<kHalf>(w, i, m);
        for (int t = 0; t < NT; ++t)
          acc[t][0] = _mm512_fmadd_ps(w0, _mm512_maskz_loadu_ps(m, a[t] + i), acc[t][0]);
      }
      for (int t = 0; t < NT; ++t) y[t * ldy] = _mm512_reduce_add_ps(_mm512_add_ps(acc[t][0], acc[t][1]));
    }
  };
};

template <int NT>
struct Bf16Row {
  static void run(const uint8_t* w, int64_t n, const uint8_t* act, size_t stride, float* y, int64_t ldy) {
    const auto* wr = reinterpret_cast<const uint16_t*>(w);
    __m512 acc[NT];
    const uint16_t* a[NT];
    for (int t = 0; t < NT; ++t) {
      acc[t] = _mm512_setzero_ps();
      a[t] = reinterpret_cast<const uint16_t*>(act + t * stride);
    }
    for (int64_t i = 0; i < n; i += 32) {
      const __mmask32 m = n - i >= 32 ? 0xFFFFFFFFu : static_cast<__mmask32>((1u << (n - i)) - 1);
      const __m512bh wv = reinterpret_cast<__m512bh>(_mm512_maskz_loadu_epi16(m, wr + i));
      for (int t = 0; t < NT; ++t)
        acc[t] =
            _mm512_dpbf16_ps(acc[t], wv, reinterpret_cast<__m512bh>(_mm512_maskz_loadu_epi16(m, a[t] + i)));
    }
    for (int t = 0; t < NT; ++t) y[t * ldy] = _mm512_reduce_add_ps(acc[t]);
  }
};

// ---------------------------------------------------------------- 32-element blocks x Q8_1F

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

template <typename U>
struct Row32 {
  template <int NT>
  struct K {
    static void run(const uint8_t* w, int64_t n, const uint8_t* act, size_t stride, float* y, int64_t ldy) {
      const auto* wb = reinterpret_cast<const typename U::Block*>(w);
      __m256 acc[NT];
      float off[NT];
      const BlockQ8_1F* a[NT];
      for (int t = 0; t < NT; ++t) {
        acc[t] = _mm256_setzero_ps();
        off[t] = 0.0f;
        a[t] = reinterpret_cast<const BlockQ8_1F*>(act + t * stride);
      }
      const __m256i zero = _mm256_setzero_si256();
      for (int64_t b = 0; b < n / 32; ++b) {
        float d, c;
        __m256i q = U::q(wb[b], d, c);
        __mmask32 neg = 0;
        if constexpr (U::kSigned) {
          neg = _mm256_movepi8_mask(q);
          q = _mm256_abs_epi8(q);
        }
        for (int t = 0; t < NT; ++t) {
          const BlockQ8_1F& ab = a[t][b];
          __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ab.qs));
          if constexpr (U::kSigned) av = _mm256_mask_sub_epi8(av, neg, zero, av);
          const __m256i p = _mm256_dpbusd_epi32(zero, q, av);
          acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(d * ab.d), acc[t]);
          if constexpr (!U::kSigned) off[t] += c * ab.s;
        }
      }
      for (int t = 0; t < NT; ++t) y[t * ldy] = hsum256(acc[t]) + off[t];
    }
  };
};

// ---------------------------------------------------------------- K-quants x Q8_K

inline __m512i two_halves(__m256i lo, __m256i hi) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

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
        uint8_t sc[8], mn[8];
        for (int j = 0; j < 8; ++j) k4_scale_min(j, scales, sc[j], mn[j]);
        __m512i q[4], scv[4];
        for (int c = 0; c < 4; ++c) {
          const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * c));
          q[c] = _mm512_and_si512(two_halves(raw, _mm256_srli_epi16(raw, 4)), m4);
          if constexpr (kFive) {
            const __m512i bits = two_halves(_mm256_set1_epi8(static_cast<char>(1 << (2 * c))),
                                            _mm256_set1_epi8(static_cast<char>(2 << (2 * c))));
            q[c] = _mm512_mask_add_epi8(q[c], _mm512_test_epi8_mask(qh2, bits), q[c], _mm512_set1_epi8(16));
          }
          scv[c] = two_halves(_mm256_set1_epi32(sc[2 * c]), _mm256_set1_epi32(sc[2 * c + 1]));
        }
        const __m256i mins = _mm256_setr_epi16(mn[0], mn[0], mn[1], mn[1], mn[2], mn[2], mn[3], mn[3], mn[4],
                                               mn[4], mn[5], mn[5], mn[6], mn[6], mn[7], mn[7]);
        const float d = h2f(dh), dmin = h2f(dminh);
        for (int t = 0; t < NT; ++t) {
          const BlockQ8_K& ab = a[t][b];
          __m512i s = zero;
          for (int c = 0; c < 4; ++c) {
            const __m512i p = _mm512_dpbusd_epi32(zero, q[c], _mm512_loadu_si512(ab.qs + 64 * c));
            s = _mm512_add_epi32(s, _mm512_mullo_epi32(p, scv[c]));
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
      for (int c = 0; c < 4; ++c) {
        const char k = static_cast<char>(4 * c);
        const __m128i idx = _mm_setr_epi8(k, k, k, k, k + 1, k + 1, k + 1, k + 1, k + 2, k + 2, k + 2, k + 2,
                                          k + 3, k + 3, k + 3, k + 3);
        scv[c] = _mm512_cvtepi8_epi32(_mm_shuffle_epi8(sc8, idx));
      }
      const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
      const float d = h2f(wb.d);
      for (int t = 0; t < NT; ++t) {
        const BlockQ8_K& ab = a[t][b];
        __m512i s = zero;
        for (int c = 0; c < 4; ++c) {
          const __m512i p = _mm512_dpbusd_epi32(zero, q[c], _mm512_loadu_si512(ab.qs + 64 * c));
          s = _mm512_add_epi32(s, _mm512_mullo_epi32(p, scv[c]));
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

void quantize_q8_1f(const float* x, BlockQ8_1F* y, int64_t n) {
  const __m512 sign = _mm512_set1_ps(-0.0f);
  for (int64_t b = 0; b < n / 32; ++b, x += 32) {
    const __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
    const float amax =
        _mm512_reduce_max_ps(_mm512_max_ps(_mm512_andnot_ps(sign, v0), _mm512_andnot_ps(sign, v1)));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const __m512 vid = _mm512_set1_ps(id);
    // cvtps rounds to nearest even, as nearbyint in the scalar version.
    const __m512i i0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, vid)),
                  i1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, vid));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y[b].qs), _mm512_cvtepi32_epi8(i0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y[b].qs + 16), _mm512_cvtepi32_epi8(i1));
    y[b].d = d;
    y[b].s = d * static_cast<float>(_mm512_reduce_add_epi32(_mm512_add_epi32(i0, i1)));
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

template <template <int> class K>
void row_fn(const uint8_t* w, int64_t n, const uint8_t* act, size_t stride, int nt, float* y, int64_t ldy) {
  tile_dispatch<K>(nt, w, n, act, stride, y, ldy);
}

const IsaKernels kAvx512 = {"avx512",
                            dot_f32,
                            row_fn<Row32<UnpackQ4_0>::K>,
                            row_fn<Row32<UnpackQ5<BlockQ5_0, false>>::K>,
                            row_fn<Row32<UnpackQ5<BlockQ5_1, true>>::K>,
                            row_fn<Row32<UnpackQ8_0>::K>,
                            row_fn<RowQ4K<false>::K>,
                            row_fn<RowQ4K<true>::K>,
                            row_fn<RowQ6K>,
                            row_fn<Bf16Row>,
                            row_fn<FloatRow<true>::K>,
                            row_fn<FloatRow<false>::K>,
                            quantize_q8_1f,
                            quantize_q8_k};

}  // namespace

const IsaKernels& avx512_kernels() {
  return kAvx512;
}

}  // namespace ferrum::kernels
