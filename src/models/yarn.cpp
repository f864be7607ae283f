#include "models/yarn.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/fail.h"

namespace ferrum {
namespace {

// The pair index at which a frequency turns `turns` times over orig_ctx positions.
double correction_dim(double turns, int dim, double base, int orig_ctx) {
  return dim * std::log(orig_ctx / (turns * 2 * std::numbers::pi)) / (2 * std::log(base));
}

double mscale(double factor, double m) {
  return factor <= 1 ? 1.0 : 0.1 * m * std::log(factor) + 1.0;
}

}  // namespace

std::vector<float> yarn_freq_factors(const ModelConfig& c) {
  const auto& y = c.yarn;
  if (!(y.factor > 0) || y.orig_ctx <= 0 || c.n_rot <= 0)
    fail("YaRN needs a positive factor and original context (got factor {}, original context {})", y.factor,
         y.orig_ctx);
  const int dim = c.n_rot;
  double low = correction_dim(y.beta_fast, dim, c.rope_theta, y.orig_ctx),
         high = correction_dim(y.beta_slow, dim, c.rope_theta, y.orig_ctx);
  if (y.truncate) low = std::floor(low), high = std::ceil(high);
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(dim - 1));
  if (low == high) high += 0.001;
  std::vector<float> out(static_cast<size_t>(dim / 2));
  for (int i = 0; i < dim / 2; ++i) {
    const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);  // 0: kept, 1: interpolated
    out[static_cast<size_t>(i)] = static_cast<float>(1.0 / (ramp / y.factor + (1.0 - ramp)));
  }
  return out;
}

float yarn_attn_factor(const ModelConfig& c) {
  return c.yarn.attn_factor > 0 ? c.yarn.attn_factor : static_cast<float>(mscale(c.yarn.factor, 1.0));
}

}  // namespace ferrum
