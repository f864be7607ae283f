// Scale searches shared by the quantizers (own implementation): fits of one sub-block's values to
// integer levels with a scale (and a min).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace ferrum::quant_fit {

// Round half to even, as ggml's nearest_int does. Below 2^22 in magnitude adding 1.5 * 2^23 leaves
// the rounded integer in the low mantissa bits (inline; std::nearbyint is a libm call on baseline
// x86-64, a large share of the quantizers' time); beyond, saturated, and NaN gives 0.
inline int nearest_int(float v) {
  if (std::fabs(v) < 4194303.0f) {
    const float f = v + 12582912.0f;
    int32_t i;
    std::memcpy(&i, &f, sizeof(i));
    return (i & 0x007fffff) - 0x00400000;
  }
  if (std::isnan(v)) return 0;
  return v > 0 ? (v < 2.0e9f ? static_cast<int>(std::nearbyint(v)) : 2000000000)
               : (v > -2.0e9f ? static_cast<int>(std::nearbyint(v)) : -2000000000);
}

// Fits x ~= s*q - m (q in [0, nmax], m >= 0) for one sub-block of n values: a grid of scale
// candidates, each refined by least squares. Returns the best scale and min.
void fit_scale_min(const float* x, int n, int nmax, float& best_s, float& best_m);

// Symmetric fit x ~= s*q, q in [qmin, qmax] (qmin = -qmax - 1), for one sub-block of n values; the
// scale is negative when the largest magnitude is positive (so it maps to qmin). 0 for all zeros.
float fit_scale_sym(const float* x, int n, int qmin, int qmax);

// Fit x ~= s * levels[k] for one sub-block of n values and 16 sorted levels: returns s (its sign
// picks which end of the levels the largest magnitude maps to) and writes the indices to idx.
float fit_scale_levels(const float* x, int n, const int8_t* levels, uint8_t* idx);

// Index of the level nearest to v (levels sorted ascending, 16 of them).
int nearest_level(float v, const int8_t* levels);

}  // namespace ferrum::quant_fit
