// AArch64 Advanced SIMD version of lowrank_up_add (baseline ARMv8.0; used by the neon and neondot tiers).
// Tiles of up to 4 rows x 16 outputs: each loaded (converted) Bt vector serves every row of the tile, and
// each row's rank values are loaded 4 at a time and used by lane (fmla by element). The chain of each
// output runs along the rank as in the other versions.
#include <arm_neon.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/lowrank.h"

namespace ferrum::kernels {
namespace {

constexpr int kV = 4;  // 16 outputs per block

// 4 values of Bt at element i; Partial: only the first m (the rest zero, nothing read past them).
template <bool Partial>
inline float32x4_t load_bt(const TensorView& bt, int64_t i, int64_t m) {
  if (bt.type == DType::F16) {
    const auto* p = reinterpret_cast<const uint16_t*>(bt.data) + i;
    uint16x4_t h;
    if (!Partial || m >= 4) {
      h = vld1_u16(p);
    } else {
      uint16_t t[4] = {};
      std::memcpy(t, p, static_cast<size_t>(std::max<int64_t>(m, 0)) * 2);
      h = vld1_u16(t);
    }
    return vcvt_f32_f16(vreinterpret_f16_u16(h));
  }
  const float* p = reinterpret_cast<const float*>(bt.data) + i;
  if (!Partial || m >= 4) return vld1q_f32(p);
  float t[4] = {};
  std::memcpy(t, p, static_cast<size_t>(std::max<int64_t>(m, 0)) * 4);
  return vld1q_f32(t);
}

// NT rows x the 16 outputs from ob (Partial: the block runs past o1).
template <int NT, bool Partial>
void tile(const float* u, int64_t ldu, const TensorView& bt, int64_t ob, int64_t o1, const int64_t* rows,
          float* y, int64_t ldy) {
  const int64_t out = bt.ne[0], r = bt.ne[1];
  float32x4_t acc[NT][kV];
  for (int t = 0; t < NT; ++t)
    for (int v = 0; v < kV; ++v) acc[t][v] = vdupq_n_f32(0.0f);
  const auto step = [&](int64_t j, auto&& fma) {
    float32x4_t b[kV];
    for (int v = 0; v < kV; ++v) b[v] = load_bt<Partial>(bt, j * out + ob + 4 * v, o1 - (ob + 4 * v));
    for (int t = 0; t < NT; ++t)
      for (int v = 0; v < kV; ++v) acc[t][v] = fma(t, acc[t][v], b[v]);
  };
  int64_t j = 0;
  for (; j + 4 <= r; j += 4) {
    float32x4_t uj[NT];
    for (int t = 0; t < NT; ++t) uj[t] = vld1q_f32(u + t * ldu + j);
    step(j, [&](int t, float32x4_t a, float32x4_t b) { return vfmaq_laneq_f32(a, b, uj[t], 0); });
    step(j + 1, [&](int t, float32x4_t a, float32x4_t b) { return vfmaq_laneq_f32(a, b, uj[t], 1); });
    step(j + 2, [&](int t, float32x4_t a, float32x4_t b) { return vfmaq_laneq_f32(a, b, uj[t], 2); });
    step(j + 3, [&](int t, float32x4_t a, float32x4_t b) { return vfmaq_laneq_f32(a, b, uj[t], 3); });
  }
  // The last r mod 4 terms: fmla by a scalar, fused as the lane form.
  for (; j < r; ++j)
    step(j, [&](int t, float32x4_t a, float32x4_t b) { return vfmaq_n_f32(a, b, u[t * ldu + j]); });
  for (int t = 0; t < NT; ++t)
    for (int v = 0; v < kV; ++v) {
      float* dst = y + rows[t] * ldy + ob + 4 * v;
      const int64_t m = Partial ? std::min<int64_t>(4, o1 - (ob + 4 * v)) : 4;
      if (m >= 4) {
        vst1q_f32(dst, vaddq_f32(vld1q_f32(dst), acc[t][v]));
      } else if (m > 0) {
        float a[4];
        vst1q_f32(a, acc[t][v]);
        for (int64_t i = 0; i < m; ++i) dst[i] += a[i];
      }
    }
}

template <bool Partial>
void block(const float* u, int64_t ldu, int64_t n, const TensorView& bt, int64_t ob, int64_t o1,
           const int64_t* rows, float* y, int64_t ldy) {
  int64_t t = 0;
  for (; t + 4 <= n; t += 4) tile<4, Partial>(u + t * ldu, ldu, bt, ob, o1, rows + t, y, ldy);
  switch (n - t) {
    case 3:
      return tile<3, Partial>(u + t * ldu, ldu, bt, ob, o1, rows + t, y, ldy);
    case 2:
      return tile<2, Partial>(u + t * ldu, ldu, bt, ob, o1, rows + t, y, ldy);
    case 1:
      return tile<1, Partial>(u + t * ldu, ldu, bt, ob, o1, rows + t, y, ldy);
  }
}

}  // namespace

void lowrank_up_add_neon(const float* u, int64_t ldu, int64_t n, const TensorView& bt, int64_t o0, int64_t o1,
                         const int64_t* rows, float* y, int64_t ldy) {
  int64_t ob = o0;
  for (; ob + 4 * kV <= o1; ob += 4 * kV) block<false>(u, ldu, n, bt, ob, o1, rows, y, ldy);
  if (ob < o1) block<true>(u, ldu, n, bt, ob, o1, rows, y, ldy);
}

}  // namespace ferrum::kernels
