#include "core/quant_q4z.h"

#include <algorithm>
#include <cmath>

namespace ferrum::quant_q4z {

void dequantize(const BlockQ4_Z* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = q4z_scale(x[i]);
    const int z = x[i].z;
    for (int j = 0; j < 16; ++j) {
      y[j] = d * static_cast<float>((x[i].qs[j] & 0xF) - z);
      y[j + 16] = d * static_cast<float>((x[i].qs[j] >> 4) - z);
    }
  }
}

void quantize(const float* x, BlockQ4_Z* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += 32) {
    float mn = 0, mx = 0;
    for (int j = 0; j < 32; ++j) {
      mn = std::min(mn, x[j]);
      mx = std::max(mx, x[j]);
    }
    const uint16_t h = f32_to_f16((mx - mn) / 15.0f);
    const float d = f16_to_f32(h);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const int z = std::clamp(static_cast<int>(std::nearbyint(-mn * id)), 0, 15);
    set_q4z_scale(y[i], h);
    y[i].z = static_cast<uint8_t>(z);
    auto level = [&](float v) { return std::clamp(static_cast<int>(std::nearbyint(v * id)) + z, 0, 15); };
    for (int j = 0; j < 16; ++j) y[i].qs[j] = static_cast<uint8_t>(level(x[j]) | (level(x[j + 16]) << 4));
  }
}

}  // namespace ferrum::quant_q4z
