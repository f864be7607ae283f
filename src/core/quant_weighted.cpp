#include "core/quant_weighted.h"

#include <algorithm>
#include <cstring>

#include "core/fp16.h"
#include "core/quant_fit.h"

// Same bits on every architecture: no a*b + c fused into one fma.
#pragma STDC FP_CONTRACT OFF

namespace ferrum::quant_weighted {
namespace {

using quant_fit::nearest_int;

// Calls block(x of block i, its 32 weights, i) for the nb blocks of a row. A value's weight is its
// importance times sqrt(sigma2 + x^2), sigma2 the mean square of the whole row (llama.cpp's weights
// for these types).
template <typename Block>
void for_each_block(const float* x, int64_t nb, const float* importance, Block&& block) {
  const float sigma2 = quant_fit::mean_square(x, static_cast<int>(32 * nb));
  float w[32];
  for (int64_t i = 0; i < nb; ++i) {
    quant_fit::importance_weights(x + 32 * i, importance + 32 * i, 32, sigma2, w);
    block(x + 32 * i, w, i);
  }
}

// A symmetric block, value = d * (L - 2^bits / 2): returns d as stored (F16); the levels are
// rounded against that stored scale, the best ones for it whatever the weights.
uint16_t fit_symmetric(const float* x, const float* w, int bits, uint8_t* L) {
  const int qmin = -(1 << (bits - 1)), qmax = -qmin - 1;
  const uint16_t d = f32_to_f16(quant_fit::fit_scale_sym(x, 32, qmin, qmax, w));
  const float ds = f16_to_f32(d);
  for (int j = 0; j < 32; ++j)
    L[j] = static_cast<uint8_t>((ds != 0 ? std::clamp(nearest_int(x[j] / ds), qmin, qmax) : 0) - qmin);
  return d;
}

// A block with an offset, value = d * L + m (m <= 0 as fitted), levels against the stored d and m.
void fit_with_offset(const float* x, const float* w, int bits, uint16_t& d, uint16_t& m, uint8_t* L) {
  const int nmax = (1 << bits) - 1;
  float s, sub;  // x ~= s*q - sub
  quant_fit::fit_scale_min(x, 32, nmax, s, sub, w);
  d = f32_to_f16(s);
  m = f32_to_f16(-sub);
  const float ds = f16_to_f32(d), ms = f16_to_f32(m);
  for (int j = 0; j < 32; ++j)
    L[j] = static_cast<uint8_t>(ds > 0 ? std::clamp(nearest_int((x[j] - ms) / ds), 0, nmax) : 0);
}

// Low nibbles: elements 0..15, high nibbles: 16..31.
void pack_nibbles(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>((L[j] & 0xF) | ((L[j + 16] & 0xF) << 4));
}

// Bit j: the fifth bit of element j.
void pack_fifth_bits(const uint8_t* L, uint8_t* qh) {
  uint32_t h = 0;
  for (int j = 0; j < 32; ++j) h |= static_cast<uint32_t>((L[j] >> 4) & 1) << j;
  std::memcpy(qh, &h, 4);
}

}  // namespace

void quantize(const float* x, BlockQ4_0* y, int64_t nb, const float* importance) {
  for_each_block(x, nb, importance, [&](const float* xb, const float* w, int64_t i) {
    uint8_t L[32];
    y[i].d = fit_symmetric(xb, w, 4, L);
    pack_nibbles(L, y[i].qs);
  });
}

void quantize(const float* x, BlockQ5_0* y, int64_t nb, const float* importance) {
  for_each_block(x, nb, importance, [&](const float* xb, const float* w, int64_t i) {
    uint8_t L[32];
    y[i].d = fit_symmetric(xb, w, 5, L);
    pack_nibbles(L, y[i].qs);
    pack_fifth_bits(L, y[i].qh);
  });
}

void quantize(const float* x, BlockQ4_1* y, int64_t nb, const float* importance) {
  for_each_block(x, nb, importance, [&](const float* xb, const float* w, int64_t i) {
    uint8_t L[32];
    fit_with_offset(xb, w, 4, y[i].d, y[i].m, L);
    pack_nibbles(L, y[i].qs);
  });
}

void quantize(const float* x, BlockQ5_1* y, int64_t nb, const float* importance) {
  for_each_block(x, nb, importance, [&](const float* xb, const float* w, int64_t i) {
    uint8_t L[32];
    fit_with_offset(xb, w, 5, y[i].d, y[i].m, L);
    pack_nibbles(L, y[i].qs);
    pack_fifth_bits(L, y[i].qh);
  });
}

}  // namespace ferrum::quant_weighted
