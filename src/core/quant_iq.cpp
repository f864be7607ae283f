#include "core/quant_iq.h"

#include <cstring>

#include "core/fp16.h"
#include "core/quant_iq_fields.h"

// Bit-exactness with ggml depends on a*b + c not being fused into one fma.
#pragma STDC FP_CONTRACT OFF

namespace ferrum::quant_iq {
namespace {

// ggml's per-sub-block factor from d and the scale field s.
float sub_factor(Kind k, float d, int s) {
  switch (k) {
    case Kind::IQ3_XXS:
      return d * (0.5f + static_cast<float>(s)) * 0.5f;
    case Kind::IQ3_S:
    case Kind::IQ1_S:
    case Kind::IQ1_M:
      return d * static_cast<float>(2 * s + 1);
    default:
      return d * (0.5f + static_cast<float>(s)) * 0.25f;  // IQ2
  }
}

}  // namespace

void dequantize(Kind k, const void* src, float* y, int64_t nb) {
  const auto* p = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < nb; ++i, p += block_bytes(k)) {
    const float d = fields::d_of(k, p);
    for (int ib = 0; ib < 8; ++ib) {
      IqSub o;
      fields::fields(k, p, ib, o);
      for (int l = 0; l < 4; ++l, y += 8) {
        const float db = sub_factor(k, d, o.scale[l / 2]);
        const IqGroup& g = o.g[l];
        for (int j = 0; j < 8; ++j) {
          const int byte = static_cast<int>((g.bytes >> (8 * j)) & 0xFF);
          if (has_offset(k))  // dl * (grid + delta), delta = +-1/8
            y[j] = db * (static_cast<float>(static_cast<int8_t>(byte)) + (g.offset < 0 ? -0.125f : 0.125f));
          else
            y[j] = db * static_cast<float>(byte) * (g.signs >> j & 1 ? -1.f : 1.f);
        }
      }
    }
  }
}

}  // namespace ferrum::quant_iq
