#include "core/quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "core/fail.h"
#include "core/fp16.h"
#include "core/quant_fit.h"
#include "core/quant_iq.h"
#include "core/quant_iq_write.h"
#include "core/quant_low.h"
#include "core/quant_mxfp4.h"
#include "core/quant_q4z.h"
#include "core/quant_weighted.h"

// Bit-exactness with ggml depends on a*b + c not being fused into one fma.
#pragma STDC FP_CONTRACT OFF

namespace ferrum {
namespace {

using quant_fit::fit_scale_min;
using quant_fit::fit_scale_sym;
using quant_fit::nearest_int;

inline float h2f(uint16_t h) {
  return f16_to_f32(h);
}

// ---------------------------------------------------------------- dequantization (ggml order of ops)

void deq_q4_0(const BlockQ4_0* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = h2f(x[i].d);
    for (int j = 0; j < 16; ++j) {
      const int x0 = (x[i].qs[j] & 0x0F) - 8;
      const int x1 = (x[i].qs[j] >> 4) - 8;
      y[j] = static_cast<float>(x0) * d;
      y[j + 16] = static_cast<float>(x1) * d;
    }
  }
}

void deq_q5_0(const BlockQ5_0* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = h2f(x[i].d);
    uint32_t qh;
    std::memcpy(&qh, x[i].qh, 4);
    for (int j = 0; j < 16; ++j) {
      const int xh0 = ((qh >> j) << 4) & 0x10;
      const int xh1 = (qh >> (j + 12)) & 0x10;
      const int x0 = ((x[i].qs[j] & 0x0F) | xh0) - 16;
      const int x1 = ((x[i].qs[j] >> 4) | xh1) - 16;
      y[j] = static_cast<float>(x0) * d;
      y[j + 16] = static_cast<float>(x1) * d;
    }
  }
}

void deq_q5_1(const BlockQ5_1* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = h2f(x[i].d);
    const float m = h2f(x[i].m);
    uint32_t qh;
    std::memcpy(&qh, x[i].qh, 4);
    for (int j = 0; j < 16; ++j) {
      const int xh0 = ((qh >> j) << 4) & 0x10;
      const int xh1 = (qh >> (j + 12)) & 0x10;
      const int x0 = (x[i].qs[j] & 0x0F) | xh0;
      const int x1 = (x[i].qs[j] >> 4) | xh1;
      const float p0 = static_cast<float>(x0) * d;
      const float p1 = static_cast<float>(x1) * d;
      y[j] = p0 + m;
      y[j + 16] = p1 + m;
    }
  }
}

void deq_q8_0(const BlockQ8_0* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = h2f(x[i].d);
    for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(x[i].qs[j]) * d;
  }
}

void deq_q4_k(const BlockQ4_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* q = x[i].qs;
    const float d = h2f(x[i].d);
    const float dmin = h2f(x[i].dmin);
    for (int j = 0; j < 8; j += 2) {
      uint8_t sc, m;
      k4_scale_min(j, x[i].scales, sc, m);
      const float d1 = d * sc, m1 = dmin * m;
      k4_scale_min(j + 1, x[i].scales, sc, m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) {
        const float p = d1 * static_cast<float>(q[l] & 0xF);
        *y++ = p - m1;
      }
      for (int l = 0; l < 32; ++l) {
        const float p = d2 * static_cast<float>(q[l] >> 4);
        *y++ = p - m2;
      }
      q += 32;
    }
  }
}

void deq_q5_k(const BlockQ5_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* ql = x[i].qs;
    const uint8_t* qh = x[i].qh;
    const float d = h2f(x[i].d);
    const float dmin = h2f(x[i].dmin);
    uint8_t u1 = 1, u2 = 2;
    for (int j = 0; j < 8; j += 2) {
      uint8_t sc, m;
      k4_scale_min(j, x[i].scales, sc, m);
      const float d1 = d * sc, m1 = dmin * m;
      k4_scale_min(j + 1, x[i].scales, sc, m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) {
        const float p = d1 * static_cast<float>((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0));
        *y++ = p - m1;
      }
      for (int l = 0; l < 32; ++l) {
        const float p = d2 * static_cast<float>((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0));
        *y++ = p - m2;
      }
      ql += 32;
      u1 <<= 2;
      u2 <<= 2;
    }
  }
}

void deq_q6_k(const BlockQ6_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = h2f(x[i].d);
    const uint8_t* ql = x[i].ql;
    const uint8_t* qh = x[i].qh;
    const int8_t* sc = x[i].scales;
    for (int n = 0; n < 256; n += 128) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l + 0] = (d * sc[is + 0]) * static_cast<float>(q1);
        y[l + 32] = (d * sc[is + 2]) * static_cast<float>(q2);
        y[l + 64] = (d * sc[is + 4]) * static_cast<float>(q3);
        y[l + 96] = (d * sc[is + 6]) * static_cast<float>(q4);
      }
      y += 128;
      ql += 64;
      qh += 32;
      sc += 8;
    }
  }
}

// ---------------------------------------------------------------- reference quantizers (ggml semantics)

void q_q8_0(const float* x, BlockQ8_0* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += 32) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = f32_to_f16(d);
    for (int j = 0; j < 32; ++j) y[i].qs[j] = static_cast<int8_t>(std::round(x[j] * id));
  }
}

// Signed value with the largest magnitude (the first one on ties), as ggml's Q4_0/Q5_0 search.
inline float signed_absmax(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

void q_q4_0(const float* x, BlockQ4_0* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += 32) {
    const float d = signed_absmax(x, 32) / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = f32_to_f16(d);
    for (int j = 0; j < 16; ++j) {
      const int q0 = std::min(15, static_cast<int>(x[j] * id + 8.5f));
      const int q1 = std::min(15, static_cast<int>(x[j + 16] * id + 8.5f));
      y[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void q_q5_0(const float* x, BlockQ5_0* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += 32) {
    const float d = signed_absmax(x, 32) / -16.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = f32_to_f16(d);
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      const int q0 = std::min(31, static_cast<int>(x[j] * id + 16.5f));
      const int q1 = std::min(31, static_cast<int>(x[j + 16] * id + 16.5f));
      y[i].qs[j] = static_cast<uint8_t>((q0 & 0xF) | ((q1 & 0xF) << 4));
      qh |= static_cast<uint32_t>((q0 >> 4) & 1) << j;
      qh |= static_cast<uint32_t>((q1 >> 4) & 1) << (j + 16);
    }
    std::memcpy(y[i].qh, &qh, 4);
  }
}

void q_q5_1(const float* x, BlockQ5_1* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += 32) {
    float mn = x[0], mx = x[0];
    for (int j = 1; j < 32; ++j) {
      mn = std::min(mn, x[j]);
      mx = std::max(mx, x[j]);
    }
    const float d = (mx - mn) / 31.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = f32_to_f16(d);
    y[i].m = f32_to_f16(mn);
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      const int q0 = std::min(31, static_cast<int>((x[j] - mn) * id + 0.5f));
      const int q1 = std::min(31, static_cast<int>((x[j + 16] - mn) * id + 0.5f));
      y[i].qs[j] = static_cast<uint8_t>((q0 & 0xF) | ((q1 & 0xF) << 4));
      qh |= static_cast<uint32_t>((q0 >> 4) & 1) << j;
      qh |= static_cast<uint32_t>((q1 >> 4) & 1) << (j + 16);
    }
    std::memcpy(y[i].qh, &qh, 4);
  }
}

void q_q8_k(const float* x, BlockQ8_K* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += 256) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 256; ++j) {
      if (std::fabs(x[j]) > amax) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    if (amax == 0.0f) {
      std::memset(&y[i], 0, sizeof(BlockQ8_K));
      continue;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < 256; ++j) y[i].qs[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * x[j])));
    for (int j = 0; j < 16; ++j) {
      int sum = 0;
      for (int k = 0; k < 16; ++k) sum += y[i].qs[j * 16 + k];
      y[i].bsums[j] = static_cast<int16_t>(sum);
    }
    y[i].d = 1.0f / iscale;
  }
}

// ---------------------------------------------------------------- K-quants (own search, quant_fit.h)

// Shared by Q4_K (nmax 15) and Q5_K (nmax 31): levels L[256] and packed scales. `w`: the 256 values'
// error weights, or nullptr.
void quantize_k4_block(const float* x, int nmax, uint16_t& d_out, uint16_t& dmin_out, uint8_t* scales,
                       uint8_t* L, const float* w) {
  float s[8], m[8];
  float max_s = 0, max_m = 0;
  for (int j = 0; j < 8; ++j) {
    fit_scale_min(x + 32 * j, 32, nmax, s[j], m[j], w ? w + 32 * j : nullptr);
    max_s = std::max(max_s, s[j]);
    max_m = std::max(max_m, m[j]);
  }
  if (w) {  // the 6-bit scales and mins fitted, each weighing what its sub-block's values weigh
    float sw[8];
    quant_fit::sum_per_block(w, 8, 32, sw);
    d_out = f32_to_f16(quant_fit::fit_scale_unsigned(s, 8, 63, sw));
    dmin_out = f32_to_f16(quant_fit::fit_scale_unsigned(m, 8, 63, sw));
  } else {
    d_out = f32_to_f16(max_s / 63.0f);
    dmin_out = f32_to_f16(max_m / 63.0f);
  }
  const float d = f16_to_f32(d_out), dmin = f16_to_f32(dmin_out);
  uint8_t sc[8], mq[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = static_cast<uint8_t>(d > 0 ? std::clamp(nearest_int(s[j] / d), 0, 63) : 0);
    mq[j] = static_cast<uint8_t>(dmin > 0 ? std::clamp(nearest_int(m[j] / dmin), 0, 63) : 0);
  }
  std::memset(scales, 0, 12);
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      scales[j] = sc[j];
      scales[j + 4] = mq[j];
    } else {
      scales[j + 4] = static_cast<uint8_t>((sc[j] & 0xF) | ((mq[j] & 0xF) << 4));
      scales[j - 4] |= static_cast<uint8_t>((sc[j] >> 4) << 6);
      scales[j] |= static_cast<uint8_t>((mq[j] >> 4) << 6);
    }
  }
  for (int j = 0; j < 8; ++j) {
    const float ds = d * sc[j], dm = dmin * mq[j];
    for (int i = 0; i < 32; ++i)
      L[32 * j + i] =
          static_cast<uint8_t>(ds > 0 ? std::clamp(nearest_int((x[32 * j + i] + dm) / ds), 0, nmax) : 0);
  }
}

// Q4_K / Q5_K weights: llama.cpp's sigma2 for them is twice the super-block's mean square.
const float* k4_weights(const float* x, const float* importance, int64_t i, float* w) {
  return importance ? quant_fit::block_weights(x, importance + 256 * i, 256, 2.0f, w) : nullptr;
}

void q_q4_k(const float* x, BlockQ4_K* y, int64_t nb, const float* importance) {
  uint8_t L[256];
  float w[256];
  for (int64_t i = 0; i < nb; ++i, x += 256) {
    quantize_k4_block(x, 15, y[i].d, y[i].dmin, y[i].scales, L, k4_weights(x, importance, i, w));
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l)
        y[i].qs[32 * c + l] = static_cast<uint8_t>(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
  }
}

void q_q5_k(const float* x, BlockQ5_K* y, int64_t nb, const float* importance) {
  uint8_t L[256];
  float w[256];
  for (int64_t i = 0; i < nb; ++i, x += 256) {
    quantize_k4_block(x, 31, y[i].d, y[i].dmin, y[i].scales, L, k4_weights(x, importance, i, w));
    std::memset(y[i].qh, 0, 32);
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        const int lo = L[64 * c + l], hi = L[64 * c + 32 + l];
        y[i].qs[32 * c + l] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
        y[i].qh[l] |= static_cast<uint8_t>(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
      }
    }
  }
}

// `importance` weighs the errors as it is (llama.cpp's Q6_K adds no sigma2 term).
void q_q6_k(const float* x, BlockQ6_K* y, int64_t nb, const float* importance) {
  for (int64_t i = 0; i < nb; ++i, x += 256) {
    const float* w = importance ? importance + 256 * i : nullptr;
    float s[16];
    float max_abs = 0, max_s = 0;
    for (int k = 0; k < 16; ++k) {
      s[k] = fit_scale_sym(x + 16 * k, 16, -32, 31, w ? w + 16 * k : nullptr);
      if (std::fabs(s[k]) > max_abs) {
        max_abs = std::fabs(s[k]);
        max_s = s[k];
      }
    }
    uint8_t L[256];
    if (max_abs == 0) {
      std::memset(&y[i], 0, sizeof(BlockQ6_K));
      std::memset(L, 32, sizeof(L));
    } else {
      const float iscale = -128.0f / max_s;
      y[i].d = f32_to_f16(1.0f / iscale);
      const float d = f16_to_f32(y[i].d);
      for (int k = 0; k < 16; ++k) {
        const int sc = std::clamp(nearest_int(iscale * s[k]), -128, 127);
        y[i].scales[k] = static_cast<int8_t>(sc);
        const float ds = d * static_cast<float>(sc);
        for (int l = 0; l < 16; ++l)
          L[16 * k + l] =
              static_cast<uint8_t>(ds != 0 ? std::clamp(nearest_int(x[16 * k + l] / ds), -32, 31) + 32 : 32);
      }
    }
    for (int n = 0; n < 2; ++n) {
      const uint8_t* Ln = L + 128 * n;
      uint8_t* ql = y[i].ql + 64 * n;
      uint8_t* qh = y[i].qh + 32 * n;
      for (int l = 0; l < 32; ++l) {
        const int q1 = Ln[l], q2 = Ln[l + 32], q3 = Ln[l + 64], q4 = Ln[l + 96];
        ql[l] = static_cast<uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
        ql[l + 32] = static_cast<uint8_t>((q2 & 0xF) | ((q4 & 0xF) << 4));
        qh[l] = static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
      }
    }
  }
}

int64_t blocks_of(DType t, int64_t n) {
  const auto& info = dtype_info(t);
  if (n < 0 || n % info.block_size != 0)
    fail("row of {} elements is not a multiple of the {} block size {}", n, info.name, info.block_size);
  return n / info.block_size;
}

// The grid i-quant of a type, if it is one.
std::optional<quant_iq::Kind> grid_kind(DType t) {
  using quant_iq::Kind;
  switch (t) {
    case DType::IQ2_XXS:
      return Kind::IQ2_XXS;
    case DType::IQ2_XS:
      return Kind::IQ2_XS;
    case DType::IQ2_S:
      return Kind::IQ2_S;
    case DType::IQ3_XXS:
      return Kind::IQ3_XXS;
    case DType::IQ3_S:
      return Kind::IQ3_S;
    case DType::IQ1_S:
      return Kind::IQ1_S;
    case DType::IQ1_M:
      return Kind::IQ1_M;
    default:
      return std::nullopt;
  }
}

}  // namespace

void dequantize_row(DType t, const void* src, float* dst, int64_t n) {
  const int64_t nb = blocks_of(t, n);
  switch (t) {
    case DType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return;
    case DType::F16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
      return;
    }
    case DType::BF16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
      return;
    }
    case DType::Q4_0:
      return deq_q4_0(static_cast<const BlockQ4_0*>(src), dst, nb);
    case DType::Q5_0:
      return deq_q5_0(static_cast<const BlockQ5_0*>(src), dst, nb);
    case DType::Q5_1:
      return deq_q5_1(static_cast<const BlockQ5_1*>(src), dst, nb);
    case DType::Q8_0:
      return deq_q8_0(static_cast<const BlockQ8_0*>(src), dst, nb);
    case DType::Q4_K:
      return deq_q4_k(static_cast<const BlockQ4_K*>(src), dst, nb);
    case DType::Q5_K:
      return deq_q5_k(static_cast<const BlockQ5_K*>(src), dst, nb);
    case DType::Q6_K:
      return deq_q6_k(static_cast<const BlockQ6_K*>(src), dst, nb);
    case DType::Q4_1:
      return quant_low::dequantize(static_cast<const BlockQ4_1*>(src), dst, nb);
    case DType::Q2_K:
      return quant_low::dequantize(static_cast<const BlockQ2_K*>(src), dst, nb);
    case DType::Q3_K:
      return quant_low::dequantize(static_cast<const BlockQ3_K*>(src), dst, nb);
    case DType::IQ4_NL:
      return quant_low::dequantize(static_cast<const BlockIQ4_NL*>(src), dst, nb);
    case DType::MXFP4:
      return quant_mxfp4::dequantize(static_cast<const BlockMXFP4*>(src), dst, nb);
    case DType::Q4_Z:
      return quant_q4z::dequantize(static_cast<const BlockQ4_Z*>(src), dst, nb);
    case DType::IQ4_XS:
      return quant_low::dequantize(static_cast<const BlockIQ4_XS*>(src), dst, nb);
    case DType::IQ2_XXS:
    case DType::IQ2_XS:
    case DType::IQ2_S:
    case DType::IQ3_XXS:
    case DType::IQ3_S:
    case DType::IQ1_S:
    case DType::IQ1_M:
      return quant_iq::dequantize(*grid_kind(t), src, dst, nb);
    case DType::Q8_K: {
      const auto* b = static_cast<const BlockQ8_K*>(src);
      for (int64_t i = 0; i < nb; ++i)
        for (int j = 0; j < 256; ++j) *dst++ = b[i].d * static_cast<float>(b[i].qs[j]);
      return;
    }
    default:
      fail("dequantize_row: tensor type {} is not supported", dtype_name(t));
  }
}

bool quantize_needs_importance(DType t) {
  return grid_kind(t) && quant_iq::needs_importance(*grid_kind(t));
}

void quantize_row(DType t, const float* src, void* dst, int64_t n, const float* importance) {
  const int64_t nb = blocks_of(t, n);
  if (const auto kind = grid_kind(t)) return quant_iq::quantize_row(*kind, src, dst, n, importance);
  switch (t) {
    case DType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return;
    case DType::F16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = f32_to_f16(src[i]);
      return;
    }
    case DType::BF16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
      return;
    }
    // Q4_0/Q5_0/Q4_1/Q5_1: ggml's reference quantizers, or weighted fits given an importance row.
    case DType::Q4_0:
      return importance ? quant_weighted::quantize(src, static_cast<BlockQ4_0*>(dst), nb, importance)
                        : q_q4_0(src, static_cast<BlockQ4_0*>(dst), nb);
    case DType::Q5_0:
      return importance ? quant_weighted::quantize(src, static_cast<BlockQ5_0*>(dst), nb, importance)
                        : q_q5_0(src, static_cast<BlockQ5_0*>(dst), nb);
    case DType::Q5_1:
      return importance ? quant_weighted::quantize(src, static_cast<BlockQ5_1*>(dst), nb, importance)
                        : q_q5_1(src, static_cast<BlockQ5_1*>(dst), nb);
    case DType::Q4_1:
      return importance ? quant_weighted::quantize(src, static_cast<BlockQ4_1*>(dst), nb, importance)
                        : quant_low::quantize(src, static_cast<BlockQ4_1*>(dst), nb);
    case DType::Q8_0:  // as llama.cpp, Q8_0 and MXFP4 quantize without the importance
      return q_q8_0(src, static_cast<BlockQ8_0*>(dst), nb);
    case DType::Q4_K:
      return q_q4_k(src, static_cast<BlockQ4_K*>(dst), nb, importance);
    case DType::Q5_K:
      return q_q5_k(src, static_cast<BlockQ5_K*>(dst), nb, importance);
    case DType::Q6_K:
      return q_q6_k(src, static_cast<BlockQ6_K*>(dst), nb, importance);
    case DType::Q8_K:
      return q_q8_k(src, static_cast<BlockQ8_K*>(dst), nb);
    case DType::Q2_K:
      return quant_low::quantize(src, static_cast<BlockQ2_K*>(dst), nb, importance);
    case DType::Q3_K:
      return quant_low::quantize(src, static_cast<BlockQ3_K*>(dst), nb, importance);
    case DType::IQ4_NL:
      return quant_low::quantize(src, static_cast<BlockIQ4_NL*>(dst), nb, importance);
    case DType::MXFP4:
      return quant_mxfp4::quantize(src, static_cast<BlockMXFP4*>(dst), nb);
    case DType::Q4_Z:  // in-memory only (GPTQ/AWQ layers are decoded, not requantized); for tests
      return quant_q4z::quantize(src, static_cast<BlockQ4_Z*>(dst), nb);
    case DType::IQ4_XS:
      return quant_low::quantize(src, static_cast<BlockIQ4_XS*>(dst), nb, importance);
    default:
      fail("quantize_row: ferrum does not write {}", dtype_name(t));
  }
}

}  // namespace ferrum
