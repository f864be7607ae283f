// Portable reference row kernels of Q2_K, Q3_K and IQ4_XS against Q8_K activations: integer dots
// per sub-block, scaled once per super-block (the same sums as the SIMD tiers).
#include <cstring>

#include "core/fp16.h"
#include "core/quant_iq_fields.h"
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

// w = d*(ls - 32)*kIQ4Values[q] per sub-block of 32, against Q8Act activations (one scale per 32, as
// the packed IQ4_XS kernels read them: the same numbers whether a matrix is packed or not).
void iq4_xs(const uint8_t* w, int64_t n, const uint8_t* act, size_t stride, int nt, float* y, int64_t ldy) {
  float acc[kMaxTile] = {};
  for (int64_t b = 0; b < n / 256; ++b) {
    const auto& wb = reinterpret_cast<const BlockIQ4_XS*>(w)[b];
    const float d = f16_to_f32(wb.d);
    for (int k = 0; k < 8; ++k) {
      const float dk = d * static_cast<float>(iq4xs_scale(wb, k) - 32);
      for (int t = 0; t < nt; ++t) {
        const Q8Act a(act + t * stride, n);
        const int8_t* q = a.qs + 256 * b + 32 * k;
        int sum = 0;
        for (int j = 0; j < 16; ++j)
          sum += kIQ4Values[wb.qs[16 * k + j] & 0xF] * q[j] + kIQ4Values[wb.qs[16 * k + j] >> 4] * q[j + 16];
        acc[t] += static_cast<float>(sum) * (dk * a.d[8 * b + k]);
      }
    }
  }
  for (int t = 0; t < nt; ++t) y[t * ldy] = acc[t];
}

// The grid i-quants: value = D * scale * (level + offset/8) per sub-block half (quant_iq.h). Per
// token: sum_k scale_k (levels . a)_k, IQ1's levels taken as 8 * level + offset with the factor D/8 (the
// SIMD tiers' integers).
template <quant_iq::Kind K>
void iq(const uint8_t* w, int64_t n, const uint8_t* act, size_t stride, int nt, float* y, int64_t ldy) {
  constexpr size_t block = quant_iq::block_bytes(K);
  float acc[kMaxTile] = {};
  int level[256];
  int16_t scale[16];
  for (int64_t b = 0; b < n / 256; ++b) {
    const uint8_t* blk = w + b * block;
    for (int ib = 0; ib < 8; ++ib) {
      IqSub sub;
      quant_iq::sub_block(K, blk, ib, sub);
      scale[2 * ib] = sub.scale[0];
      scale[2 * ib + 1] = sub.scale[1];
      for (int l = 0; l < 4; ++l)
        for (int j = 0; j < 8; ++j) {
          const int byte = static_cast<int>((sub.g[l].bytes >> (8 * j)) & 0xFF);
          int& v = level[32 * ib + 8 * l + j];
          v = quant_iq::has_offset(K) ? 8 * static_cast<int8_t>(byte) + sub.g[l].offset
                                      : (sub.g[l].signs >> j & 1 ? -byte : byte);
        }
    }
    const float d =
        quant_iq::has_offset(K) ? 0.125f * quant_iq::scale_of(K, blk) : quant_iq::scale_of(K, blk);
    for (int t = 0; t < nt; ++t) {
      const BlockQ8_K& a = act_block(act, stride, t, b);
      int isum = 0;
      for (int k = 0; k < 16; ++k) isum += scale[k] * dot16(level, a.qs, k);
      acc[t] += (d * a.d) * static_cast<float>(isum);
    }
  }
  for (int t = 0; t < nt; ++t) y[t * ldy] = acc[t];
}

}  // namespace

LowbitRows lowbit_rows_scalar() {
  using K = quant_iq::Kind;
  return {rows_of<q2_k>,          rows_of<q3_k>,         rows_of<iq4_xs>,         rows_of<iq<K::IQ2_XXS>>,
          rows_of<iq<K::IQ2_XS>>, rows_of<iq<K::IQ2_S>>, rows_of<iq<K::IQ3_XXS>>, rows_of<iq<K::IQ3_S>>,
          rows_of<iq<K::IQ1_S>>,  rows_of<iq<K::IQ1_M>>};
}

}  // namespace ferrum::kernels
