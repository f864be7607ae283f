// BF16 on the AVX-512 tiers. bf16_lo / bf16_hi widen the even / odd BF16 of each int32 lane to F32
// (the upper half of a float), for the tier without the BF16 extension. Bf16TileOf is the
// row-major BF16 tile: NR BF16 weight rows x NT BF16 activation rows, 32 inputs (16 pairs) per
// step. D says how a pair of 32-value vectors is multiplied into 16 lane sums: D::V,
// D::load(p, mask), D::madd(acc, w, a); kernels_avx512.cpp widens by shifts,
// kernels_avx512bf16.cpp uses vdpbf16ps (the same sums). Include from AVX-512 files only.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace ferrum::kernels {

inline __m512 bf16_lo(__m512i v) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
}
inline __m512 bf16_hi(__m512i v) {
  return _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32(static_cast<int32_t>(0xFFFF0000u))));
}

template <class D>
struct Bf16TileOf {
  template <int NR, int NT>
  struct K {
    static void run(const uint8_t* w, size_t ws, int64_t n, const uint8_t* act, size_t stride, float* y,
                    int64_t ldy) {
      __m512 acc[NR][NT];
      const uint16_t* a[NT];
      for (int t = 0; t < NT; ++t) {
        for (int r = 0; r < NR; ++r) acc[r][t] = _mm512_setzero_ps();
        a[t] = reinterpret_cast<const uint16_t*>(act + t * stride);
      }
      for (int64_t i = 0; i < n; i += 32) {
        const __mmask32 m = n - i >= 32 ? 0xFFFFFFFFu : static_cast<__mmask32>((1u << (n - i)) - 1);
        typename D::V wv[NR];
        for (int r = 0; r < NR; ++r) wv[r] = D::load(reinterpret_cast<const uint16_t*>(w + r * ws) + i, m);
        for (int t = 0; t < NT; ++t) {
          const typename D::V av = D::load(a[t] + i, m);
          for (int r = 0; r < NR; ++r) acc[r][t] = D::madd(acc[r][t], wv[r], av);
        }
      }
      for (int t = 0; t < NT; ++t)
        for (int r = 0; r < NR; ++r) y[t * ldy + r] = _mm512_reduce_add_ps(acc[r][t]);
    }
  };
};

}  // namespace ferrum::kernels
