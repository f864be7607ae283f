#include "core/quant_low.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "core/quant_fit.h"

// Bit-exactness with ggml depends on a*b + c not being fused into one fma.
#pragma STDC FP_CONTRACT OFF

namespace ferrum::quant_low {
namespace {

using quant_fit::nearest_int;

inline float h2f(uint16_t h) {
  return f16_to_f32(h);
}

// The two low bits of element 128c + 32j + l of a Q2_K / Q3_K super-block.
inline int low2(const uint8_t* qs, int c, int j, int l) {
  return (qs[32 * c + l] >> (2 * j)) & 3;
}

void put_low2(uint8_t* qs, const uint8_t* L) {
  std::memset(qs, 0, 64);
  for (int c = 0; c < 2; ++c)
    for (int j = 0; j < 4; ++j)
      for (int l = 0; l < 32; ++l)
        qs[32 * c + l] |= static_cast<uint8_t>((L[128 * c + 32 * j + l] & 3) << (2 * j));
}

// The super-block scale putting the largest magnitude of s[0..n) on level `top` (negative: the
// signed trick of Q6_K, so that the extreme keeps its full range).
float super_scale(const float* s, int n, float top) {
  float amax = 0, max = 0;
  for (int k = 0; k < n; ++k)
    if (std::fabs(s[k]) > amax) {
      amax = std::fabs(s[k]);
      max = s[k];
    }
  return amax == 0 ? 0.0f : max / top;
}

// The error weights of super-block i under an importance row (sigma2 = factor * the super-block's
// mean square, as llama.cpp weighs each type), in w; nullptr without one.
const float* super_block_weights(const float* x, const float* importance, int64_t i, float factor, float* w) {
  return importance ? quant_fit::block_weights(x, importance + 256 * i, 256, factor, w) : nullptr;
}

// The F16 super-block scale of n signed 6-bit sub-block scales s (sub-blocks of `sub` values):
// fitted with each sub-block's summed weights, or the largest magnitude on -32 without weights.
uint16_t signed_super_scale(const float* s, int n, int sub, const float* wb) {
  if (!wb) return f32_to_f16(super_scale(s, n, -32.0f));
  float sw[16];
  quant_fit::sum_per_block(wb, n, sub, sw);
  return f32_to_f16(quant_fit::fit_scale_sym(s, n, -32, 31, sw));
}

}  // namespace

// ---------------------------------------------------------------- dequantization (ggml order of ops)

void dequantize(const BlockQ4_1* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = h2f(x[i].d), m = h2f(x[i].m);
    for (int j = 0; j < 16; ++j) {
      y[j] = static_cast<float>(x[i].qs[j] & 0xF) * d + m;
      y[j + 16] = static_cast<float>(x[i].qs[j] >> 4) * d + m;
    }
  }
}

void dequantize(const BlockQ2_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = h2f(x[i].d), dmin = h2f(x[i].dmin);
    for (int c = 0; c < 2; ++c)
      for (int j = 0; j < 4; ++j)
        for (int h = 0; h < 2; ++h) {
          const uint8_t sc = x[i].scales[8 * c + 2 * j + h];
          const float dl = d * static_cast<float>(sc & 0xF), ml = dmin * static_cast<float>(sc >> 4);
          for (int l = 16 * h; l < 16 * h + 16; ++l)
            *y++ = dl * static_cast<float>(low2(x[i].qs, c, j, l)) - ml;
        }
  }
}

void dequantize(const BlockQ3_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = h2f(x[i].d);
    uint8_t sc[16];
    q3k_scales(x[i].scales, sc);
    for (int c = 0; c < 2; ++c)
      for (int j = 0; j < 4; ++j)
        for (int h = 0; h < 2; ++h) {
          const float dl = d * static_cast<float>(sc[8 * c + 2 * j + h] - 32);
          for (int l = 16 * h; l < 16 * h + 16; ++l) {
            const int hi = (x[i].hmask[l] >> (4 * c + j)) & 1;
            *y++ = dl * static_cast<float>(low2(x[i].qs, c, j, l) - (hi ? 0 : 4));
          }
        }
  }
}

void dequantize(const BlockIQ4_NL* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = h2f(x[i].d);
    for (int j = 0; j < 16; ++j) {
      y[j] = d * static_cast<float>(kIQ4Values[x[i].qs[j] & 0xF]);
      y[j + 16] = d * static_cast<float>(kIQ4Values[x[i].qs[j] >> 4]);
    }
  }
}

void dequantize(const BlockIQ4_XS* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = h2f(x[i].d);
    for (int k = 0; k < 8; ++k, y += 32) {
      const float dl = d * static_cast<float>(iq4xs_scale(x[i], k) - 32);
      const uint8_t* qs = x[i].qs + 16 * k;
      for (int j = 0; j < 16; ++j) {
        y[j] = dl * static_cast<float>(kIQ4Values[qs[j] & 0xF]);
        y[j + 16] = dl * static_cast<float>(kIQ4Values[qs[j] >> 4]);
      }
    }
  }
}

// ---------------------------------------------------------------- quantization

// ggml's reference Q4_1 quantizer: min and max of the block, levels 0..15.
void quantize(const float* x, BlockQ4_1* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += 32) {
    float mn = x[0], mx = x[0];
    for (int j = 1; j < 32; ++j) {
      mn = std::min(mn, x[j]);
      mx = std::max(mx, x[j]);
    }
    const float d = (mx - mn) / 15.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = f32_to_f16(d);
    y[i].m = f32_to_f16(mn);
    for (int j = 0; j < 16; ++j) {
      const int q0 = std::min(15, static_cast<int>((x[j] - mn) * id + 0.5f));
      const int q1 = std::min(15, static_cast<int>((x[j + 16] - mn) * id + 0.5f));
      y[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

// Own search: each sub-block of 16 fitted as s*q - m (q in 0..3), the scales and mins quantized to
// 4 bits against the super-block's largest (with an importance row: fitted, each weighing what its
// sub-block weighs), then the levels recomputed with the quantized values.
void quantize(const float* x, BlockQ2_K* y, int64_t nb, const float* importance) {
  float w[256];
  for (int64_t i = 0; i < nb; ++i, x += 256) {
    const float* wb = super_block_weights(x, importance, i, 1.0f, w);
    float s[16], m[16], max_s = 0, max_m = 0;
    for (int k = 0; k < 16; ++k) {
      quant_fit::fit_scale_min(x + 16 * k, 16, 3, s[k], m[k], wb ? wb + 16 * k : nullptr);
      max_s = std::max(max_s, s[k]);
      max_m = std::max(max_m, m[k]);
    }
    if (wb) {
      float sw[16];
      quant_fit::sum_per_block(wb, 16, 16, sw);
      y[i].d = f32_to_f16(quant_fit::fit_scale_unsigned(s, 16, 15, sw));
      y[i].dmin = f32_to_f16(quant_fit::fit_scale_unsigned(m, 16, 15, sw));
    } else {
      y[i].d = f32_to_f16(max_s / 15.0f);
      y[i].dmin = f32_to_f16(max_m / 15.0f);
    }
    const float d = h2f(y[i].d), dmin = h2f(y[i].dmin);
    uint8_t L[256];
    for (int k = 0; k < 16; ++k) {
      const int sc = d > 0 ? std::clamp(nearest_int(s[k] / d), 0, 15) : 0;
      const int mq = dmin > 0 ? std::clamp(nearest_int(m[k] / dmin), 0, 15) : 0;
      y[i].scales[k] = static_cast<uint8_t>(sc | (mq << 4));
      const float ds = d * static_cast<float>(sc), dm = dmin * static_cast<float>(mq);
      for (int l = 0; l < 16; ++l)
        L[16 * k + l] =
            static_cast<uint8_t>(ds > 0 ? std::clamp(nearest_int((x[16 * k + l] + dm) / ds), 0, 3) : 0);
    }
    put_low2(y[i].qs, L);
  }
}

// Own search: symmetric fits of the sub-blocks of 16 (q in -4..3), their scales quantized to 6 bits
// (scale - 32) against the super-block's largest magnitude, which lands on -32 (with an importance
// row: a symmetric fit of the scales, each weighing what its sub-block weighs).
void quantize(const float* x, BlockQ3_K* y, int64_t nb, const float* importance) {
  float w[256];
  for (int64_t i = 0; i < nb; ++i, x += 256) {
    const float* wb = super_block_weights(x, importance, i, 2.0f, w);
    float s[16];
    for (int k = 0; k < 16; ++k)
      s[k] = quant_fit::fit_scale_sym(x + 16 * k, 16, -4, 3, wb ? wb + 16 * k : nullptr);
    y[i].d = signed_super_scale(s, 16, 16, wb);
    const float d = h2f(y[i].d);
    uint8_t sc[16], L[256];
    for (int k = 0; k < 16; ++k) {
      const int q = d != 0 ? std::clamp(nearest_int(s[k] / d), -32, 31) : 0;
      sc[k] = static_cast<uint8_t>(q + 32);
      const float ds = d * static_cast<float>(q);
      for (int l = 0; l < 16; ++l)
        L[16 * k + l] =
            static_cast<uint8_t>(ds != 0 ? std::clamp(nearest_int(x[16 * k + l] / ds), -4, 3) + 4 : 4);
    }
    // Scales packed as q3k_scales reads them.
    std::memset(y[i].scales, 0, 12);
    for (int j = 0; j < 16; ++j) {
      y[i].scales[j % 8] |= static_cast<uint8_t>((sc[j] & 0xF) << (4 * (j / 8)));
      y[i].scales[8 + j % 4] |= static_cast<uint8_t>((sc[j] >> 4) << (2 * (j / 4)));
    }
    std::memset(y[i].hmask, 0, 32);
    for (int c = 0; c < 2; ++c)
      for (int j = 0; j < 4; ++j)
        for (int l = 0; l < 32; ++l)
          y[i].hmask[l] |= static_cast<uint8_t>((L[128 * c + 32 * j + l] >> 2) << (4 * c + j));
    put_low2(y[i].qs, L);
  }
}

namespace {

void pack_nibbles(const uint8_t* idx, uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>(idx[j] | (idx[j + 16] << 4));
}

}  // namespace

// With an importance row, llama.cpp's sigma2 of the weights is twice the block's mean square.
void quantize(const float* x, BlockIQ4_NL* y, int64_t nb, const float* importance) {
  uint8_t idx[32];
  float w[32];
  for (int64_t i = 0; i < nb; ++i, x += 32) {
    const float* wb = importance ? quant_fit::block_weights(x, importance + 32 * i, 32, 2.0f, w) : nullptr;
    y[i].d = f32_to_f16(quant_fit::fit_scale_levels(x, 32, kIQ4Values, idx, wb));
    // Levels again against the stored (F16) scale.
    const float d = h2f(y[i].d);
    for (int j = 0; j < 32; ++j)
      idx[j] = static_cast<uint8_t>(quant_fit::nearest_level(d != 0 ? x[j] / d : 0, kIQ4Values));
    pack_nibbles(idx, y[i].qs);
  }
}

// Own search: each sub-block of 32 fitted to the IQ4 levels, the scales quantized to 6 bits
// (scale - 32) against the largest magnitude, which lands on -32 (with an importance row: a
// symmetric fit of the scales, each weighing what its sub-block weighs).
void quantize(const float* x, BlockIQ4_XS* y, int64_t nb, const float* importance) {
  uint8_t idx[32];
  float w[256];
  for (int64_t i = 0; i < nb; ++i, x += 256) {
    const float* wb = super_block_weights(x, importance, i, 2.0f, w);
    float s[8];
    for (int k = 0; k < 8; ++k)
      s[k] = quant_fit::fit_scale_levels(x + 32 * k, 32, kIQ4Values, idx, wb ? wb + 32 * k : nullptr);
    y[i].d = signed_super_scale(s, 8, 32, wb);
    const float d = h2f(y[i].d);
    y[i].scales_h = 0;
    std::memset(y[i].scales_l, 0, 4);
    for (int k = 0; k < 8; ++k) {
      const int q = d != 0 ? std::clamp(nearest_int(s[k] / d), -32, 31) : 0;
      const int ls = q + 32;
      y[i].scales_l[k / 2] |= static_cast<uint8_t>((ls & 0xF) << (4 * (k % 2)));
      y[i].scales_h |= static_cast<uint16_t>((ls >> 4) << (2 * k));
      const float dl = d * static_cast<float>(q);
      for (int j = 0; j < 32; ++j)
        idx[j] = static_cast<uint8_t>(quant_fit::nearest_level(dl != 0 ? x[32 * k + j] / dl : 0, kIQ4Values));
      pack_nibbles(idx, y[i].qs + 16 * k);
    }
  }
}

}  // namespace ferrum::quant_low
