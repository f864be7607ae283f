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

// The fits below minimise sum w[i] * (fitted - x[i])^2 over one sub-block. `w` nullptr (or all
// zeros, where no value matters): the unweighted fits, bit for bit as they were before weights; with
// weights they search their own (larger) grids of candidates.

// Fits x ~= s*q - m (q in [0, nmax], m >= 0) for one sub-block of n values: a grid of scale
// candidates, each refined by least squares. Returns the best scale and min.
void fit_scale_min(const float* x, int n, int nmax, float& best_s, float& best_m, const float* w = nullptr);

// Symmetric fit x ~= s*q, q in [qmin, qmax] (qmin = -qmax - 1), for one sub-block of n values; the
// scale is negative when the largest magnitude is positive (so it maps to qmin). 0 for all zeros.
float fit_scale_sym(const float* x, int n, int qmin, int qmax, const float* w = nullptr);

// Fit x ~= s * levels[k] for one sub-block of n values and 16 sorted levels: returns s (its sign
// picks which end of the levels the largest magnitude maps to) and writes the indices to idx.
float fit_scale_levels(const float* x, int n, const int8_t* levels, uint8_t* idx, const float* w = nullptr);

// Fit v ~= s*q, q in [0, nmax], of n values >= 0 (the sub-block scales or mins of a super-block,
// weighted by how much their sub-blocks weigh): returns s > 0, or 0 when every value is 0.
float fit_scale_unsigned(const float* v, int n, int nmax, const float* w);

// Index of the level nearest to v (levels sorted ascending, 16 of them).
int nearest_level(float v, const int8_t* levels);

// llama.cpp's weights of the values' errors under an importance row: importance[i] *
// sqrt(sigma2 + x[i]^2), the x term leaning towards the large values (sigma2: a mean square of the
// span the type scales together, times a factor that differs per type).
void importance_weights(const float* x, const float* importance, int n, float sigma2, float* w);
// Mean of x[i]^2 over n values (float sum, as the weights' sigma2 is made).
float mean_square(const float* x, int n);
// importance_weights of a (super-)block of n values with sigma2 = factor * their mean square,
// written to w; returns w.
const float* block_weights(const float* x, const float* importance, int n, float factor, float* w);
// sums[k] = the sum of block k's `block` values of w, for n_blocks blocks.
void sum_per_block(const float* w, int n_blocks, int block, float* sums);

}  // namespace ferrum::quant_fit
