// Portable reference row kernels of Q2_K, Q3_K and IQ4_XS against Q8_K activations: integer dots
// per sub-block, scaled once per super-block (the same sums as the SIMD tiers).
#include <cstring>

#include "core/fp16.h"
#include "kernels/cpu/kernels_lowbit.h"

namespace ferrum::kernels {
namespace {

const BlockQ8_K& act_block(const uint8_t* act, size_t stride, int t, int64_t b) {
  return reinterpret_cast<const BlockQ8_K*>(act + t * stride)[b];
}

// Levels of element 128c + 32j + l (the order of the Q8_K activations) from the two low bits.
void low2_levels(const uint8_t* qs, int* q) {
  for (int c = 0; c < 2; ++c)
    for (int j = 0; j < 4; ++j)
      for (int l = 0; l < 32; ++l) q[128 * c + 32 * j + l] = (qs[32 * c + l] >> (2 * j)) & 3;
}

// sum over sub-block k (16 elements) of q * a.
int dot16(const int* q, const int8_t* a, int k) {
  int s = 0;
  for (int l = 0; l < 16; ++l) s += q[16 * k + l] * a[16 * k + l];
  return s;
}

// w = d*sc*q - dmin*m: sum_k sc_k (q.a)_k and sum_k m_k bsums_k.
void q2_k(const uint8_t* w, int64_t n, const uint8_t* act, size_t stride, int nt, float* y, int64_t ldy) {
  float acc[kMaxTile] = {};
  int q[256];
  for (int64_t b = 0; b < n / 256; ++b) {
    const auto& wb = reinterpret_cast<const BlockQ2_K*>(w)[b];
    low2_levels(wb.qs, q);
    const float d = f16_to_f32(wb.d), dmin = f16_to_f32(wb.dmin);
    for (int t = 0; t < nt; ++t) {
      const BlockQ8_K& a = act_block(act, stride, t, b);
      int isum = 0, msum = 0;
      for (int k = 0; k < 16; ++k) {
        isum += (wb.scales[k] & 0xF) * dot16(q, a.qs, k);
        msum += (wb.scales[k] >> 4) * a.bsums[k];
      }
      acc[t] += (d * a.d) * static_cast<float>(isum) - (dmin * a.d) * static_cast<float>(msum);
    }
  }
  for (int t = 0; t < nt; ++t) y[t * ldy] = acc[t];
}

// w = d*(sc - 32)*(q - 4) with q = low 2 bits + 4 * hmask bit: sum_k (sc_k - 32) ((q.a)_k - 4 bsums_k).
void q3_k(const uint8_t* w, int64_t n, const uint8_t* act, size_t stride, int nt, float* y, int64_t ldy) {
  float acc[kMaxTile] = {};
  int q[256];
  uint8_t sc[16];
  for (int64_t b = 0; b < n / 256; ++b) {
    const auto& wb = reinterpret_cast<const BlockQ3_K*>(w)[b];
    low2_levels(wb.qs, q);
    for (int c = 0; c < 2; ++c)
      for (int j = 0; j < 4; ++j)
        for (int l = 0; l < 32; ++l) q[128 * c + 32 * j + l] |= ((wb.hmask[l] >> (4 * c + j)) & 1) << 2;
    q3k_scales(wb.scales, sc);
    const float d = f16_to_f32(wb.d);
    for (int t = 0; t < nt; ++t) {
      const BlockQ8_K& a = act_block(act, stride, t, b);
      int isum = 0;
      for (int k = 0; k < 16; ++k) isum += (sc[k] - 32) * (dot16(q, a.qs, k) - 4 * a.bsums[k]);
      acc[t] += (d * a.d) * static_cast<float>(isum);
    }
  }
  for (int t = 0; t < nt; ++t) y[t * ldy] = acc[t];
}

// w = d*(ls - 32)*kIQ4Values[q] per sub-block of 32.
void iq4_xs(const uint8_t* w, int64_t n, const uint8_t* act, size_t stride, int nt, float* y, int64_t ldy) {
  float acc[kMaxTile] = {};
  int v[256];
  for (int64_t b = 0; b < n / 256; ++b) {
    const auto& wb = reinterpret_cast<const BlockIQ4_XS*>(w)[b];
    for (int k = 0; k < 8; ++k)
      for (int j = 0; j < 16; ++j) {
        v[32 * k + j] = kIQ4Values[wb.qs[16 * k + j] & 0xF];
        v[32 * k + 16 + j] = kIQ4Values[wb.qs[16 * k + j] >> 4];
      }
    const float d = f16_to_f32(wb.d);
    for (int t = 0; t < nt; ++t) {
      const BlockQ8_K& a = act_block(act, stride, t, b);
      int isum = 0;
      for (int k = 0; k < 8; ++k)
        isum += (iq4xs_scale(wb, k) - 32) * (dot16(v, a.qs, 2 * k) + dot16(v, a.qs, 2 * k + 1));
      acc[t] += (d * a.d) * static_cast<float>(isum);
    }
  }
  for (int t = 0; t < nt; ++t) y[t * ldy] = acc[t];
}

}  // namespace

LowbitRows lowbit_rows_scalar() {
  return {rows_of<q2_k>, rows_of<q3_k>, rows_of<iq4_xs>};
}

}  // namespace ferrum::kernels
