#include "core/quant_fit.h"

#include <algorithm>
#include <cstdint>

namespace ferrum::quant_fit {
namespace {

// The weight of value i: 1 without weights (a product with it is exact, so the unweighted fits
// keep their bits).
inline float weight_at(const float* w, int i) {
  return w ? w[i] : 1.0f;
}

// `w`, or nullptr when it weighs nothing (all zeros): no value would matter, so fit them all alike.
const float* usable(const float* w, int n) {
  if (w)
    for (int i = 0; i < n; ++i)
      if (w[i] > 0) return w;
  return nullptr;
}

}  // namespace

void fit_scale_min(const float* x, int n, int nmax, float& best_s, float& best_m, const float* w) {
  w = usable(w, n);
  float mn = x[0], mx = x[0];
  for (int i = 1; i < n; ++i) {
    mn = std::min(mn, x[i]);
    mx = std::max(mx, x[i]);
  }
  mn = std::min(mn, 0.0f);
  best_s = 0.0f;
  best_m = -mn;
  if (mx <= mn) return;
  float best_err = INFINITY;
  // Candidates: the range on nmax levels give or take 0.9 of a level, in steps of 0.15 refitted three
  // times each; with weights in steps of 0.1 refitted twice (the weighted error has more local
  // minima; about the same work).
  const int steps = w ? 9 : 6, refits = w ? 2 : 3;
  const float step_size = w ? 0.1f : 0.15f;
  for (int step = -steps; step <= steps; ++step) {
    float s = (mx - mn) / (static_cast<float>(nmax) + step_size * static_cast<float>(step));
    float m = -mn;
    for (int iter = 0; iter < refits; ++iter) {
      // Assign levels, then solve the 2x2 least-squares problem for (s, m).
      double sw = 0, sq = 0, sqq = 0, sx = 0, sxq = 0;
      for (int i = 0; i < n; ++i) {
        const int q = std::clamp(nearest_int((x[i] + m) / s), 0, nmax);
        const double wi = weight_at(w, i);
        sw += wi;
        sq += wi * q;
        sqq += wi * q * q;
        sx += wi * x[i];
        sxq += wi * x[i] * q;
      }
      const double det = sw * sqq - sq * sq;
      if (det <= 0) break;
      double ns = (sw * sxq - sq * sx) / det;
      double nm = (sq * sxq - sqq * sx) / det;  // x ~= ns*q - nm
      if (nm < 0) {                             // offset must not be positive: fit the scale alone
        nm = 0;
        ns = sqq > 0 ? sxq / sqq : 0;
      }
      if (ns <= 0) break;
      s = static_cast<float>(ns);
      m = static_cast<float>(nm);
    }
    float err = 0;
    for (int i = 0; i < n; ++i) {
      const int q = std::clamp(nearest_int((x[i] + m) / s), 0, nmax);
      const float e = s * q - m - x[i];
      err += weight_at(w, i) * e * e;
    }
    if (err < best_err) {
      best_err = err;
      best_s = s;
      best_m = m;
    }
  }
}

float fit_scale_sym(const float* x, int n, int qmin, int qmax, const float* w) {
  w = usable(w, n);
  float amax = 0, max = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  if (amax == 0) return 0;
  float best_s = 0, best_err = INFINITY;
  // Candidates: the largest magnitude on qmin, +-2.5% (steps of 0.1 level for qmin = -32), refitted
  // twice each; with weights give or take 2 levels in steps of 0.1, refitted once (a large value that
  // weighs little may be better clipped).
  const int steps = w ? 20 : 8, refits = w ? 1 : 2;
  const float span = w ? 0.1f : 0.1f * static_cast<float>(-qmin) / 32.0f;
  for (int step = -steps; step <= steps; ++step) {
    float s = max / (static_cast<float>(qmin) + span * static_cast<float>(step));
    for (int iter = 0; iter < refits; ++iter) {
      double sxq = 0, sqq = 0;
      for (int i = 0; i < n; ++i) {
        const int q = std::clamp(nearest_int(x[i] / s), qmin, qmax);
        const double wi = weight_at(w, i);
        sxq += wi * x[i] * q;
        sqq += wi * q * q;
      }
      if (sqq <= 0) break;
      s = static_cast<float>(sxq / sqq);
    }
    float err = 0;
    for (int i = 0; i < n; ++i) {
      const float e = s * std::clamp(nearest_int(x[i] / s), qmin, qmax) - x[i];
      err += weight_at(w, i) * e * e;
    }
    if (err < best_err) {
      best_err = err;
      best_s = s;
    }
  }
  return best_s;
}

int nearest_level(float v, const int8_t* levels) {
  int lo = 0, hi = 15;  // levels[lo] <= v <= levels[hi] after the search, or v outside the range
  if (v <= levels[0]) return 0;
  if (v >= levels[15]) return 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    (v < levels[mid] ? hi : lo) = mid;
  }
  return v - levels[lo] < levels[hi] - v ? lo : hi;
}

float fit_scale_levels(const float* x, int n, const int8_t* levels, uint8_t* idx, const float* w) {
  w = usable(w, n);
  float amax = 0, max = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  if (amax == 0) {
    for (int i = 0; i < n; ++i) idx[i] = static_cast<uint8_t>(nearest_level(0.0f, levels));
    return 0;
  }
  float best_s = 0, best_err = INFINITY;
  uint8_t cand[256];
  for (int step = -10; step <= 10; ++step) {
    // The largest magnitude on the level with the largest magnitude (levels[0]), give or take.
    float s = max / (static_cast<float>(levels[0]) * (1.0f + 0.02f * static_cast<float>(step)));
    for (int iter = 0; iter < 2; ++iter) {
      double sxv = 0, svv = 0;
      for (int i = 0; i < n; ++i) {
        cand[i] = static_cast<uint8_t>(nearest_level(x[i] / s, levels));
        const double v = levels[cand[i]], wi = weight_at(w, i);
        sxv += wi * x[i] * v;
        svv += wi * v * v;
      }
      if (svv <= 0 || sxv == 0) break;
      s = static_cast<float>(sxv / svv);
    }
    float err = 0;
    for (int i = 0; i < n; ++i) {
      cand[i] = static_cast<uint8_t>(nearest_level(x[i] / s, levels));
      const float e = s * levels[cand[i]] - x[i];
      err += weight_at(w, i) * e * e;
    }
    if (err < best_err) {
      best_err = err;
      best_s = s;
      std::copy(cand, cand + n, idx);
    }
  }
  return best_s;
}

float fit_scale_unsigned(const float* v, int n, int nmax, const float* w) {
  w = usable(w, n);
  float max = 0;
  for (int i = 0; i < n; ++i) max = std::max(max, v[i]);
  if (max <= 0) return 0;
  float best_s = max / static_cast<float>(nmax), best_err = INFINITY;
  // Candidates: the largest value on nmax, give or take 0.8 of a level, each refined by least squares.
  for (int step = -8; step <= 8; ++step) {
    float s = max / (static_cast<float>(nmax) + 0.1f * static_cast<float>(step));
    for (int iter = 0; iter < 2; ++iter) {
      double svq = 0, sqq = 0;
      for (int i = 0; i < n; ++i) {
        const int q = std::clamp(nearest_int(v[i] / s), 0, nmax);
        const double wi = weight_at(w, i);
        svq += wi * v[i] * q;
        sqq += wi * q * q;
      }
      if (sqq <= 0 || svq <= 0) break;
      s = static_cast<float>(svq / sqq);
    }
    float err = 0;
    for (int i = 0; i < n; ++i) {
      const float e = s * std::clamp(nearest_int(v[i] / s), 0, nmax) - v[i];
      err += weight_at(w, i) * e * e;
    }
    if (err < best_err) {
      best_err = err;
      best_s = s;
    }
  }
  return best_s;
}

void importance_weights(const float* x, const float* importance, int n, float sigma2, float* w) {
  for (int i = 0; i < n; ++i) w[i] = importance[i] * std::sqrt(sigma2 + x[i] * x[i]);
}

float mean_square(const float* x, int n) {
  float sum = 0;
  for (int i = 0; i < n; ++i) sum += x[i] * x[i];
  return sum / static_cast<float>(n);
}

const float* block_weights(const float* x, const float* importance, int n, float factor, float* w) {
  importance_weights(x, importance, n, factor * mean_square(x, n), w);
  return w;
}

void sum_per_block(const float* w, int n_blocks, int block, float* sums) {
  for (int k = 0; k < n_blocks; ++k) {
    sums[k] = 0;
    for (int i = 0; i < block; ++i) sums[k] += w[block * k + i];
  }
}

}  // namespace ferrum::quant_fit
