#include "core/quant_fit.h"

#include <algorithm>
#include <cstdint>

namespace ferrum::quant_fit {

void fit_scale_min(const float* x, int n, int nmax, float& best_s, float& best_m) {
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
  for (int step = -6; step <= 6; ++step) {
    float s = (mx - mn) / (static_cast<float>(nmax) + 0.15f * static_cast<float>(step));
    float m = -mn;
    for (int iter = 0; iter < 3; ++iter) {
      // Assign levels, then solve the 2x2 least-squares problem for (s, m).
      double sq = 0, sqq = 0, sx = 0, sxq = 0;
      for (int i = 0; i < n; ++i) {
        const int q = std::clamp(nearest_int((x[i] + m) / s), 0, nmax);
        sq += q;
        sqq += static_cast<double>(q) * q;
        sx += x[i];
        sxq += static_cast<double>(x[i]) * q;
      }
      const double det = n * sqq - sq * sq;
      if (det <= 0) break;
      double ns = (n * sxq - sq * sx) / det;
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
      err += e * e;
    }
    if (err < best_err) {
      best_err = err;
      best_s = s;
      best_m = m;
    }
  }
}

float fit_scale_sym(const float* x, int n, int qmin, int qmax) {
  float amax = 0, max = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  if (amax == 0) return 0;
  float best_s = 0, best_err = INFINITY;
  // Candidates: the largest magnitude on qmin, +-2.5% (steps of 0.1 level for qmin = -32).
  const float span = 0.1f * static_cast<float>(-qmin) / 32.0f;
  for (int step = -8; step <= 8; ++step) {
    float s = max / (static_cast<float>(qmin) + span * static_cast<float>(step));
    for (int iter = 0; iter < 2; ++iter) {
      double sxq = 0, sqq = 0;
      for (int i = 0; i < n; ++i) {
        const int q = std::clamp(nearest_int(x[i] / s), qmin, qmax);
        sxq += static_cast<double>(x[i]) * q;
        sqq += static_cast<double>(q) * q;
      }
      if (sqq <= 0) break;
      s = static_cast<float>(sxq / sqq);
    }
    float err = 0;
    for (int i = 0; i < n; ++i) {
      const float e = s * std::clamp(nearest_int(x[i] / s), qmin, qmax) - x[i];
      err += e * e;
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

float fit_scale_levels(const float* x, int n, const int8_t* levels, uint8_t* idx) {
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
        const double v = levels[cand[i]];
        sxv += x[i] * v;
        svv += v * v;
      }
      if (svv <= 0 || sxv == 0) break;
      s = static_cast<float>(sxv / svv);
    }
    float err = 0;
    for (int i = 0; i < n; ++i) {
      cand[i] = static_cast<uint8_t>(nearest_level(x[i] / s, levels));
      const float e = s * levels[cand[i]] - x[i];
      err += e * e;
    }
    if (err < best_err) {
      best_err = err;
      best_s = s;
      std::copy(cand, cand + n, idx);
    }
  }
  return best_s;
}

}  // namespace ferrum::quant_fit
