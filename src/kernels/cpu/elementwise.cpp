#include "kernels/cpu/elementwise.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/kernels.h"

namespace ferrum::kernels {

void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  const float scale = 1.0f / std::sqrt(static_cast<float>(sum / n) + eps);
  if (w) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale * w[i];
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale;
  }
}

void layer_norm(const float* x, const float* w, const float* b, float* y, int64_t n, float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += x[i];
  const float mean = static_cast<float>(sum / n);
  double var = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const float d = x[i] - mean;
    var += static_cast<double>(d) * d;
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(var / n) + eps);
  for (int64_t i = 0; i < n; ++i) {
    float v = (x[i] - mean) * scale;
    if (w) v *= w[i];
    if (b) v += b[i];
    y[i] = v;
  }
}

void rope_cache(float* cos_sin, int64_t pos, int n_rot, float base, float freq_scale,
                const float* freq_factors, float mscale) {
  const float theta_scale = std::pow(base, -2.0f / static_cast<float>(n_rot));
  float theta = static_cast<float>(pos);
  for (int i = 0; i < n_rot / 2; ++i) {
    const float ff = freq_factors ? freq_factors[i] : 1.0f;
    const float angle = freq_scale * (theta / ff);
    cos_sin[2 * i] = std::cos(angle) * mscale;
    cos_sin[2 * i + 1] = std::sin(angle) * mscale;
    theta *= theta_scale;
  }
}

void rope_apply(float* x, const float* cs, int n_rot, bool interleaved) {
  const int half = n_rot / 2;
  if (interleaved) {
    for (int i = 0; i < half; ++i) {
      const float c = cs[2 * i], s = cs[2 * i + 1];
      const float x0 = x[2 * i], x1 = x[2 * i + 1];
      x[2 * i] = x0 * c - x1 * s;
      x[2 * i + 1] = x0 * s + x1 * c;
    }
  } else {
    for (int i = 0; i < half; ++i) {
      const float c = cs[2 * i], s = cs[2 * i + 1];
      const float x0 = x[i], x1 = x[i + half];
      x[i] = x0 * c - x1 * s;
      x[i + half] = x0 * s + x1 * c;
    }
  }
}

void swiglu(const float* gate, const float* up, float* out, int64_t n) {
  active_kernels().swiglu(gate, up, out, n);
}

void swiglu_clamped(const float* gate, const float* up, float* out, int64_t n, float limit, float alpha) {
  constexpr int64_t kChunk = 256;  // stack buffers: no allocation per call
  float g[kChunk], u[kChunk];
  for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
    const int64_t m = std::min(kChunk, n - i0);
    for (int64_t i = 0; i < m; ++i) {
      g[i] = alpha * std::min(gate[i0 + i], limit);
      u[i] = (std::clamp(up[i0 + i], -limit, limit) + 1.0f) / alpha;
    }
    active_kernels().swiglu(g, u, out + i0, m);
  }
}

void geglu_tanh(const float* gate, const float* up, float* out, int64_t n) {
  active_kernels().geglu(gate, up, out, n);
}

void gelu_erf(float* x, int64_t n) {
  active_kernels().gelu(x, n);
}

void softmax(float* x, int64_t n) {
  active_kernels().softmax(x, n);
}

void add_inplace(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

}  // namespace ferrum::kernels
