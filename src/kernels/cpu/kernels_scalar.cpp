// Portable reference kernels: every type, no SIMD. Also the activation quantizers shared by all ISAs.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/kernels_lowbit.h"

namespace ferrum::kernels {
namespace {

float dot_f32(const float* a, const float* b, int64_t n) {
  // Eight partial sums: F32 accumulation, but less rounding drift than one running sum.
  float s[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) s[k] += a[i + k] * b[i + k];
  for (; i < n; ++i) s[0] += a[i] * b[i];
  return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
}

const BlockQ8_K* actk(const uint8_t* act, size_t stride, int t) {
  return reinterpret_cast<const BlockQ8_K*>(act + t * stride);
}

// Shared loop for the 32-element types: unpack(block, q, d, c) gives levels q (0..31, or signed
// for Q8_0), the scale d and the offset coefficient c: w = d*q + c.
template <typename Block, typename Unpack>
void row_dot_32(const uint8_t* w, int64_t n, const uint8_t* act, size_t stride, int nt, float* y, int64_t ldy,
                Unpack unpack) {
  const auto* wb = reinterpret_cast<const Block*>(w);
  float acc[kMaxTile] = {}, off[kMaxTile] = {};
  int q[32];
  for (int64_t b = 0; b < n / 32; ++b) {
    float d, c;
    unpack(wb[b], q, d, c);
    for (int t = 0; t < nt; ++t) {
      const Q8Act a(act + t * stride, n);
      int sum = 0;
      for (int j = 0; j < 32; ++j) sum += q[j] * a.qs[32 * b + j];
      acc[t] += static_cast<float>(sum) * (d * a.d[b]);
      off[t] += c * a.s[b];
    }
  }
  for (int t = 0; t < nt; ++t) y[t * ldy] = acc[t] + off[t];
}

void unpack_nibbles(const uint8_t* qs, int* q) {
  for (int j = 0; j < 16; ++j) {
    q[j] = qs[j] & 0xF;
    q[j + 16] = qs[j] >> 4;
  }
}
void add_high_bits(const uint8_t* qh_bytes, int* q) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, 4);
  for (int j = 0; j < 32; ++j) q[j] |= ((qh >> j) & 1) << 4;
}

void q4_0(const uint8_t* w, int64_t n, const uint8_t* act, size_t stride, int nt, float* y, int64_t ldy) {
  row_dot_32<BlockQ4_0>(w, n, act, stride, nt, y, ldy, [](const BlockQ4_0& b, int* q, float& d, float& c) {
    unpack_nibbles(b.qs, q);
    d = f16_to_f32(b.d);
    c = -8.0f * d;
  });
}
void q4_1(const uint8_t* w, int64_t n, const uint8_t* act, size_t stride, int nt, float* y, int64_t ldy) {
  row_dot_32<BlockQ4_1>(w, n, act, stride, nt, y, ldy, [](const BlockQ4_1& b, int* q, float& d, float& c) {
    unpack_nibbles(b.qs, q);
    d = f16_to_f32(b.d);
    c = f16_to_f32(b.m);
  });
}
void q4_z(const uint8_t* w, int64_t n, const uint8_t* act, size_t stride, int nt, float* y, int64_t ldy) {
  row_dot_32<BlockQ4_Z>(w, n, act, stride, nt, y, ldy, [](const BlockQ4_Z& b, int* q, float& d, float& c) {
    unpack_nibbles(b.qs, q);
    d = q4z_scale(b);
    c = -static_cast<float>(b.z) * d;
  });
}
void iq4_nl(const uint8_t* w, int64_t n, const uint8_t* act, size_t stride, int nt, float* y, int64_t ldy) {
  row_dot_32<BlockIQ4_NL>(w, n, act, stride, nt, y, ldy,
                          [](const BlockIQ4_NL& b, int* q, float& d, float& c) {
                            unpack_nibbles(b.qs, q);
                            for (int j = 0; j < 32; ++j) q[j] = kIQ4Values[q[j]];
                            d = f16_to_f32(b.d);
                            c = 0.0f;
                          });
}
void mxfp4(const uint8_t* w, int64_t n, const uint8_t* act, size_t stride, int nt, float* y, int64_t ldy) {
  row_dot_32<BlockMXFP4>(w, n, act, stride, nt, y, ldy, [](const BlockMXFP4& b, int* q, float& d, float& c) {
    unpack_nibbles(b.qs, q);
    for (int j = 0; j < 32; ++j) q[j] = kMXFP4Values[q[j]];
    d = mxfp4_scale(b.e);
    c = 0.0f;
  });
}
void q5_0(const uint8_t* w, int64_t n, const uint8_t* act, size_t stride, int nt, float* y, int64_t ldy) {
  row_dot_32<BlockQ5_0>(w, n, act, stride, nt, y, ldy, [](const BlockQ5_0& b, int* q, float& d, float& c) {
    unpack_nibbles(b.qs, q);
    add_high_bits(b.qh, q);
    d = f16_to_f32(b.d);
    c = -16.0f * d;
  });
}
void q5_1(const uint8_t* w, int64_t n, const uint8_t* act, size_t stride, int nt, float* y, int64_t ldy) {
  row_dot_32<BlockQ5_1>(w, n, act, stride, nt, y, ldy, [](const BlockQ5_1& b, int* q, float& d, float& c) {
    unpack_nibbles(b.qs, q);
    add_high_bits(b.qh, q);
    d = f16_to_f32(b.d);
    c = f16_to_f32(b.m);
  });
}
void q8_0(const uint8_t* w, int64_t n, const uint8_t* act, size_t stride, int nt, float* y, int64_t ldy) {
  row_dot_32<BlockQ8_0>(w, n, act, stride, nt, y, ldy, [](const BlockQ8_0& b, int* q, float& d, float& c) {
    for (int j = 0; j < 32; ++j) q[j] = b.qs[j];
    d = f16_to_f32(b.d);
    c = 0.0f;
  });
}

// Q4_K / Q5_K: w = d*sc[j]*q - dmin*m[j] per sub-block j of 32.
template <bool kFive>
void qk4(const uint8_t* w, int64_t n, const uint8_t* act, size_t stride, int nt, float* y, int64_t ldy) {
  float acc[kMaxTile] = {};
  int q[256];
  for (int64_t b = 0; b < n / 256; ++b) {
    const uint8_t* scales;
    const uint8_t* qs;
    uint16_t dh, dminh;
    if constexpr (kFive) {
      const auto& wb = reinterpret_cast<const BlockQ5_K*>(w)[b];
      scales = wb.scales, qs = wb.qs, dh = wb.d, dminh = wb.dmin;
      for (int c = 0; c < 4; ++c)
        for (int l = 0; l < 32; ++l) {
          q[64 * c + l] = (qs[32 * c + l] & 0xF) | (((wb.qh[l] >> (2 * c)) & 1) << 4);
          q[64 * c + 32 + l] = (qs[32 * c + l] >> 4) | (((wb.qh[l] >> (2 * c + 1)) & 1) << 4);
        }
    } else {
      const auto& wb = reinterpret_cast<const BlockQ4_K*>(w)[b];
      scales = wb.scales, qs = wb.qs, dh = wb.d, dminh = wb.dmin;
      for (int c = 0; c < 4; ++c)
        for (int l = 0; l < 32; ++l) {
          q[64 * c + l] = qs[32 * c + l] & 0xF;
          q[64 * c + 32 + l] = qs[32 * c + l] >> 4;
        }
    }
    uint8_t sc[8], m[8];
    for (int j = 0; j < 8; ++j) k4_scale_min(j, scales, sc[j], m[j]);
    const float d = f16_to_f32(dh), dmin = f16_to_f32(dminh);
    for (int t = 0; t < nt; ++t) {
      const BlockQ8_K& a = actk(act, stride, t)[b];
      int isum = 0, msum = 0;
      for (int j = 0; j < 8; ++j) {
        int s = 0;
        for (int l = 0; l < 32; ++l) s += q[32 * j + l] * a.qs[32 * j + l];
        isum += s * sc[j];
        msum += m[j] * (a.bsums[2 * j] + a.bsums[2 * j + 1]);
      }
      acc[t] += (d * a.d) * static_cast<float>(isum) - (dmin * a.d) * static_cast<float>(msum);
    }
  }
  for (int t = 0; t < nt; ++t) y[t * ldy] = acc[t];
}

void q6_k(const uint8_t* w, int64_t n, const uint8_t* act, size_t stride, int nt, float* y, int64_t ldy) {
  float acc[kMaxTile] = {};
  int q[256];
  for (int64_t b = 0; b < n / 256; ++b) {
    const auto& wb = reinterpret_cast<const BlockQ6_K*>(w)[b];
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = wb.ql + 64 * h;
      const uint8_t* qh = wb.qh + 32 * h;
      int* qq = q + 128 * h;
      for (int l = 0; l < 32; ++l) {
        qq[l] = (ql[l] & 0xF) | ((qh[l] & 3) << 4);
        qq[l + 32] = (ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4);
        qq[l + 64] = (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4);
        qq[l + 96] = (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4);
      }
    }
    const float d = f16_to_f32(wb.d);
    for (int t = 0; t < nt; ++t) {
      const BlockQ8_K& a = actk(act, stride, t)[b];
      int isum = 0;
      for (int k = 0; k < 16; ++k) {
        int s = 0;
        for (int l = 0; l < 16; ++l) s += q[16 * k + l] * a.qs[16 * k + l];
        isum += wb.scales[k] * (s - 32 * a.bsums[k]);
      }
      acc[t] += (d * a.d) * static_cast<float>(isum);
    }
  }
  for (int t = 0; t < nt; ++t) y[t * ldy] = acc[t];
}

void bf16(const uint8_t* w, int64_t n, const uint8_t* act, size_t stride, int nt, float* y, int64_t ldy) {
  const auto* wr = reinterpret_cast<const uint16_t*>(w);
  for (int t = 0; t < nt; ++t) {
    const auto* a = reinterpret_cast<const uint16_t*>(act + t * stride);
    float s[8] = {};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
      for (int k = 0; k < 8; ++k) s[k] += bf16_to_f32(wr[i + k]) * bf16_to_f32(a[i + k]);
    for (; i < n; ++i) s[0] += bf16_to_f32(wr[i]) * bf16_to_f32(a[i]);
    y[t * ldy] = ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
  }
}

void f16(const uint8_t* w, int64_t n, const uint8_t* act, size_t stride, int nt, float* y, int64_t ldy) {
  const auto* wr = reinterpret_cast<const uint16_t*>(w);
  for (int t = 0; t < nt; ++t) {
    const auto* a = reinterpret_cast<const float*>(act + t * stride);
    float s[8] = {};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
      for (int k = 0; k < 8; ++k) s[k] += f16_to_f32(wr[i + k]) * a[i + k];
    for (; i < n; ++i) s[0] += f16_to_f32(wr[i]) * a[i];
    y[t * ldy] = ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
  }
}

void f32(const uint8_t* w, int64_t n, const uint8_t* act, size_t stride, int nt, float* y, int64_t ldy) {
  for (int t = 0; t < nt; ++t)
    y[t * ldy] =
        dot_f32(reinterpret_cast<const float*>(w), reinterpret_cast<const float*>(act + t * stride), n);
}

void quantize_q8_1f(const float* x, uint8_t* out, int64_t n) {
  auto* qs = reinterpret_cast<int8_t*>(out);
  float* ds = reinterpret_cast<float*>(out + n);
  float* ss = ds + n / 32;
  for (int64_t b = 0; b < n / 32; ++b, x += 32) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    // As llama.cpp's Q8_0/Q8_1 activations: levels from 127/amax, the scale kept as F16.
    const float d = f16_to_f32(f32_to_f16(amax / 127.0f));
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    int sum = 0;
    for (int j = 0; j < 32; ++j) {
      // (Finite rows land in [-127, 127]; a NaN or an infinity from broken weights becomes 0 or the
      // end of the range instead of an undefined conversion.)
      const float f = x[j] * id;
      const int v = f == f ? static_cast<int>(std::nearbyint(std::clamp(f, -127.0f, 127.0f))) : 0;
      qs[32 * b + j] = static_cast<int8_t>(v);
      sum += v;
    }
    ds[b] = d;
    ss[b] = d * static_cast<float>(sum);
  }
}

void quantize_q8_k(const float* x, BlockQ8_K* y, int64_t n) {
  quantize_row(DType::Q8_K, x, y, n);
}

void f16_row(const uint16_t* x, float* y, int64_t n) {
  dequantize_row(DType::F16, x, y, n);
}

void softmax(float* x, int64_t n) {
  float mx = -INFINITY;
  for (int64_t i = 0; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const float e = std::exp(x[i] - mx);
    x[i] = e;
    sum += e;
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void geglu(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i], y = g * (kGeluTanhC1 + kGeluTanhC3 * g * g);
    out[i] = g / (1.0f + std::exp(-y)) * up[i];
  }
}

void swiglu(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void gelu(float* x, int64_t n) {
  constexpr float kInvSqrt2 = 0.70710678118654752440f;
  for (int64_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * kInvSqrt2));
}

}  // namespace

const IsaKernels& scalar_kernels() {
  // Built on first use: the Q2_K/Q3_K/IQ4_XS kernels come from another translation unit.
  static const IsaKernels k = {"scalar",
                               rows_of<q4_0>,
                               rows_of<q4_1>,
                               rows_of<q5_0>,
                               rows_of<q5_1>,
                               rows_of<q8_0>,
                               rows_of<iq4_nl>,
                               rows_of<mxfp4>,
                               rows_of<q4_z>,
                               rows_of<qk4<false>>,
                               rows_of<qk4<true>>,
                               rows_of<q6_k>,
                               lowbit_rows_scalar(),
                               rows_of<bf16>,
                               rows_of<f16>,
                               rows_of<f32>,
                               quantize_q8_1f,
                               quantize_q8_k,
                               f16_row,
                               softmax,
                               swiglu,
                               geglu,
                               gelu,
                               nullptr,
                               nullptr,
                               1,
                               lowrank_up_add_portable};
  return k;
}

}  // namespace ferrum::kernels
