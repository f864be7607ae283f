#include "core/quant_mxfp4.h"

#include <algorithm>
#include <cmath>

namespace ferrum::quant_mxfp4 {

void dequantize(const BlockMXFP4* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = mxfp4_scale(x[i].e);
    for (int j = 0; j < 16; ++j) {
      y[j] = static_cast<float>(kMXFP4Values[x[i].qs[j] & 0xF]) * d;
      y[j + 16] = static_cast<float>(kMXFP4Values[x[i].qs[j] >> 4]) * d;
    }
  }
}

namespace {

// The nibble whose level times d is nearest to v (the first of equals).
uint8_t nearest(float v, float d) {
  uint8_t best = 0;
  float err = INFINITY;
  for (uint8_t k = 0; k < 16; ++k) {
    const float e = std::fabs(static_cast<float>(kMXFP4Values[k]) * d - v);
    if (e < err) err = e, best = k;
  }
  return best;
}

}  // namespace

void quantize(const float* x, BlockMXFP4* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += 32) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const int e = amax > 0 ? static_cast<int>(std::floor(std::log2(amax))) - 2 + 127 : 0;
    y[i].e = static_cast<uint8_t>(std::clamp(e, 0, 254));
    const float d = mxfp4_scale(y[i].e);
    for (int j = 0; j < 16; ++j)
      y[i].qs[j] = static_cast<uint8_t>(nearest(x[j], d) | (nearest(x[j + 16], d) << 4));
  }
}

}  // namespace ferrum::quant_mxfp4
