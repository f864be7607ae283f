// AVX-512 version of lowrank_up_add (compiled with the avx512 flags; used when those kernels are).
// Tiles of up to 4 rows x 64 outputs: each loaded (converted) Bt vector serves 4 rows.
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/lowrank.h"

namespace ferrum::kernels {
namespace {

constexpr int kV = 4;  // 64 outputs per block

template <int NT>
void tile(const float* u, int64_t ldu, const TensorView& bt, int64_t ob, const __mmask16* mk,
          const int64_t* rows, float* y, int64_t ldy) {
  const int64_t out = bt.ne[0], r = bt.ne[1];
  __m512 acc[NT][kV];
  for (int t = 0; t < NT; ++t)
    for (int v = 0; v < kV; ++v) acc[t][v] = _mm512_setzero_ps();
  for (int64_t j = 0; j < r; ++j) {
    __m512 b[kV];
    for (int v = 0; v < kV; ++v) {
      const int64_t i = j * out + ob + 16 * v;
      b[v] = bt.type == DType::F16
                 ? _mm512_cvtph_ps(
                       _mm256_maskz_loadu_epi16(mk[v], reinterpret_cast<const uint16_t*>(bt.data) + i))
                 : _mm512_maskz_loadu_ps(mk[v], reinterpret_cast<const float*>(bt.data) + i);
    }
    for (int t = 0; t < NT; ++t) {
      const __m512 uj = _mm512_set1_ps(u[t * ldu + j]);
      for (int v = 0; v < kV; ++v) acc[t][v] = _mm512_fmadd_ps(uj, b[v], acc[t][v]);
    }
  }
  for (int t = 0; t < NT; ++t)
    for (int v = 0; v < kV; ++v) {
      float* dst = y + rows[t] * ldy + ob + 16 * v;
      _mm512_mask_storeu_ps(dst, mk[v], _mm512_add_ps(_mm512_maskz_loadu_ps(mk[v], dst), acc[t][v]));
    }
}

}  // namespace

void lowrank_up_add_avx512(const float* u, int64_t ldu, int64_t n, const TensorView& bt, int64_t o0,
                           int64_t o1, const int64_t* rows, float* y, int64_t ldy) {
  for (int64_t ob = o0; ob < o1; ob += 16 * kV) {
    __mmask16 mk[kV];
    for (int v = 0; v < kV; ++v) {
      const int64_t left = o1 - (ob + 16 * v);
      mk[v] = left >= 16 ? 0xFFFF : left <= 0 ? 0 : static_cast<__mmask16>((1u << left) - 1);
    }
    int64_t t = 0;
    for (; t + 4 <= n; t += 4) tile<4>(u + t * ldu, ldu, bt, ob, mk, rows + t, y, ldy);
    switch (n - t) {
      case 3:
        tile<3>(u + t * ldu, ldu, bt, ob, mk, rows + t, y, ldy);
        break;
      case 2:
        tile<2>(u + t * ldu, ldu, bt, ob, mk, rows + t, y, ldy);
        break;
      case 1:
        tile<1>(u + t * ldu, ldu, bt, ob, mk, rows + t, y, ldy);
        break;
    }
  }
}

}  // namespace ferrum::kernels
