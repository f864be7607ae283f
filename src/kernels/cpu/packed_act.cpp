// Preparation of the packed kernels' activations (layouts in packed_act.h). Plain C++: one pass over
// a token's n values, against the n x rows multiply-adds of the product that reads them.
#include "kernels/cpu/packed_act.h"

#include <cstring>

#include "core/quant.h"
#include "kernels/cpu/kernels.h"

namespace ferrum::kernels {
namespace {

// Levels and scales exactly as the row-major path's Q8Act (the same offsets: levels, then scales);
// its per-block sums land where the biases go and are overwritten.
void prep_q8b(const IsaKernels& k, const float* x, uint8_t* out, int64_t n, int32_t offset) {
  k.quantize_q8_1f(x, out, n);
  const int64_t nb = n / 32;
  const auto* qs = reinterpret_cast<const int8_t*>(out);
  auto* bias = reinterpret_cast<int32_t*>(out + n + 4 * nb);
  for (int64_t b = 0; b < nb; ++b) {
    int32_t s = 0;
    for (int j = 0; j < 32; ++j) s += qs[32 * b + j];
    bias[b] = -offset * s;
    if (offset == 8) bias[nb + b] = bias[b] & 0xFFFF;  // Q4_0's 16-bit form (packed_act.h)
  }
}

void prep_q8k(const IsaKernels& k, DType t, const float* x, uint8_t* out, int64_t n) {
  const int64_t nsb = n / 256;
  auto* qs = reinterpret_cast<int8_t*>(out);
  auto* ds = reinterpret_cast<float*>(out + n);
  uint8_t* sums = out + n + 4 * nsb;
  BlockQ8_K tmp;
  for (int64_t b = 0; b < nsb; ++b) {
    k.quantize_q8_k(x + 256 * b, &tmp, 256);
    std::memcpy(qs + 256 * b, tmp.qs, 256);
    ds[b] = tmp.d;
    if (t == DType::Q4_K || t == DType::Q5_K) {
      auto* bs = reinterpret_cast<int16_t*>(sums) + 8 * b;
      for (int j = 0; j < 8; ++j) bs[j] = static_cast<int16_t>(tmp.bsums[2 * j] + tmp.bsums[2 * j + 1]);
    } else {
      auto* bias = reinterpret_cast<int32_t*>(sums);
      int16_t* level_sums = reinterpret_cast<int16_t*>(bias + 16 * nsb) + 16 * b;  // q6k_level_sums
      const int offset = t == DType::Q3_K ? 4 : 32;  // Q3_K's levels - 4, Q6_K's - 32
      for (int j = 0; j < 16; ++j) {
        bias[16 * b + j] = -offset * tmp.bsums[j];
        level_sums[j] = tmp.bsums[j];
      }
    }
  }
}

}  // namespace

size_t packed_act_bytes(DType t, int64_t n) {
  switch (t) {
    case DType::Q4_K:
    case DType::Q5_K:
      return static_cast<size_t>(n + 4 * (n / 256) + 16 * (n / 256));
    case DType::Q6_K:
    case DType::Q3_K:
    case DType::Q2_K:
      return static_cast<size_t>(n + 4 * (n / 256) + 64 * (n / 256) + 32 * (n / 256));
    case DType::BF16:
      return static_cast<size_t>(2 * n);
    case DType::Q4_0:  // and the biases' 16-bit form
      return static_cast<size_t>(n + 4 * (n / 32) + 8 * (n / 32));
    default:
      return static_cast<size_t>(n + 4 * (n / 32) + 4 * (n / 32));
  }
}

void prep_packed_act(const IsaKernels& k, DType t, const float* x, uint8_t* out, int64_t n) {
  switch (t) {
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
    case DType::Q3_K:
    case DType::Q2_K:  // only the level sums (for the mins) are read
      return prep_q8k(k, t, x, out, n);
    case DType::BF16:
      return quantize_row(DType::BF16, x, out, n);
    case DType::Q4_1:  // the row-major path's Q8Act as it is: the float sums d * sum(levels) for the mins
    case DType::Q4_Z:  // (Q4_Z: the zero points' term, -z * d_w times the same sums)
      return k.quantize_q8_1f(x, out, n);
    default:
      // The weights' unsigned offset: Q8_0, IQ4_NL, IQ4_XS and MXFP4 (levels + 128), Q5_0 16, Q4_0 8.
      return prep_q8b(k, x, out, n,
                      t == DType::Q8_0 || t == DType::IQ4_NL || t == DType::IQ4_XS || t == DType::MXFP4 ? 128
                      : t == DType::Q5_0                                                                ? 16
                                                                                                        : 8);
  }
}

void interleave_lane_tokens(const uint8_t* act, size_t stride, int nt, int64_t n, uint8_t* out) {
  const int64_t nsb = n / 256;
  std::memset(out, 0, lane_act_bytes(n));
  for (int t = 0; t < nt; ++t) {
    const uint8_t* p = act + t * stride;
    const auto* ds = reinterpret_cast<const float*>(p + n);
    const uint8_t* sums = p + n + 4 * nsb;  // int16[8] per super-block
    for (int64_t b = 0; b < nsb; ++b) {
      uint8_t* o = out + b * kLaneBlockBytes;
      for (int q = 0; q < 64; ++q)
        std::memcpy(o + kLaneLevels + (q * kLaneTokens + t) * 4, p + 256 * b + 4 * q, 4);
      std::memcpy(o + kLaneScales + 4 * t, ds + b, 4);
      for (int pr = 0; pr < 4; ++pr)
        std::memcpy(o + kLaneSums + (pr * kLaneTokens + t) * 4, sums + 16 * b + 4 * pr, 4);
    }
  }
}

}  // namespace ferrum::kernels
