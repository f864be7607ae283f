// AVX2 + FMA version of lowrank_up_add (compiled with the avx2 flags; used by the avx2 and
// avx2vnni tiers). Tiles of up to 2 rows x 32 outputs: each loaded (converted) Bt vector serves
// both rows; the chain of each output runs along the rank as in the other versions.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/lowrank.h"

namespace ferrum::kernels {
namespace {

constexpr int kV = 4;  // 32 outputs per block

// 8 values of Bt at element i (the first m only, the rest zero, when m < 8).
inline __m256 load_bt(const TensorView& bt, int64_t i, int64_t m) {
  if (bt.type == DType::F16) {
    const auto* p = reinterpret_cast<const uint16_t*>(bt.data) + i;
    if (m >= 8) return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    alignas(16) uint16_t t[8] = {};
    std::memcpy(t, p, static_cast<size_t>(std::max<int64_t>(m, 0)) * 2);
    return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(t)));
  }
  const float* p = reinterpret_cast<const float*>(bt.data) + i;
  if (m >= 8) return _mm256_loadu_ps(p);
  alignas(32) float t[8] = {};
  std::memcpy(t, p, static_cast<size_t>(std::max<int64_t>(m, 0)) * 4);
  return _mm256_load_ps(t);
}

template <int NT>
void tile(const float* u, int64_t ldu, const TensorView& bt, int64_t ob, int64_t o1, const int64_t* rows,
          float* y, int64_t ldy) {
  const int64_t out = bt.ne[0], r = bt.ne[1];
  __m256 acc[NT][kV];
  for (int t = 0; t < NT; ++t)
    for (int v = 0; v < kV; ++v) acc[t][v] = _mm256_setzero_ps();
  for (int64_t j = 0; j < r; ++j) {
    __m256 b[kV];
    for (int v = 0; v < kV; ++v) b[v] = load_bt(bt, j * out + ob + 8 * v, o1 - (ob + 8 * v));
    for (int t = 0; t < NT; ++t) {
      const __m256 uj = _mm256_broadcast_ss(u + t * ldu + j);
      for (int v = 0; v < kV; ++v) acc[t][v] = _mm256_fmadd_ps(uj, b[v], acc[t][v]);
    }
  }
  for (int t = 0; t < NT; ++t)
    for (int v = 0; v < kV; ++v) {
      float* dst = y + rows[t] * ldy + ob + 8 * v;
      const int64_t m = std::min<int64_t>(8, o1 - (ob + 8 * v));
      if (m >= 8) {
        _mm256_storeu_ps(dst, _mm256_add_ps(_mm256_loadu_ps(dst), acc[t][v]));
      } else if (m > 0) {
        alignas(32) float a[8];
        _mm256_store_ps(a, acc[t][v]);
        for (int64_t i = 0; i < m; ++i) dst[i] += a[i];
      }
    }
}

}  // namespace

void lowrank_up_add_avx2(const float* u, int64_t ldu, int64_t n, const TensorView& bt, int64_t o0, int64_t o1,
                         const int64_t* rows, float* y, int64_t ldy) {
  for (int64_t ob = o0; ob < o1; ob += 8 * kV) {
    int64_t t = 0;
    for (; t + 2 <= n; t += 2) tile<2>(u + t * ldu, ldu, bt, ob, o1, rows + t, y, ldy);
    if (t < n) tile<1>(u + t * ldu, ldu, bt, ob, o1, rows + t, y, ldy);
  }
}

}  // namespace ferrum::kernels
