// Softmax, SwiGLU and GELU on every ISA the CPU has, against float64 references: vectorised
// exponentials stay within a few float ulps, masked (-inf) entries give exactly 0, odd lengths.
#include "kernels/cpu/elementwise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/cpu/matmul.h"

namespace ferrum::kernels {
namespace {

using test::IsaGuard;

TEST(Elementwise, SoftmaxMatchesFloat64OnEveryIsa) {
  IsaGuard guard;
  for (const char* isa : test::supported_tiers()) {
    force_isa(isa);
    for (int64_t n : {1, 7, 16, 33, 1000}) {
      auto x = test::gaussian(static_cast<size_t>(n), static_cast<uint32_t>(n));
      for (auto& v : x) v *= 8.0f;  // spread: exponents from about -60 to 0 after the max shift
      if (n > 2) x[1] = -INFINITY;  // a masked position
      // Reference from the float differences x - max (rounded as the kernels round them): what is
      // compared is the exponential and the normalisation.
      std::vector<double> want(x.size());
      float mx = -INFINITY;
      double sum = 0;
      for (float v : x) mx = std::max(mx, v);
      for (size_t i = 0; i < x.size(); ++i) sum += want[i] = std::exp(static_cast<double>(x[i] - mx));
      softmax(x.data(), n);
      for (size_t i = 0; i < x.size(); ++i) {
        const double w = want[i] / sum;
        EXPECT_NEAR(x[i], w, 4e-7 * w + 1e-30) << isa << " n " << n << " i " << i;
      }
      if (n > 2) EXPECT_EQ(x[1], 0.0f) << isa;
    }
  }
}

TEST(Elementwise, SwigluMatchesFloat64OnEveryIsa) {
  IsaGuard guard;
  for (const char* isa : test::supported_tiers()) {
    force_isa(isa);
    const int64_t n = 301;
    auto g = test::gaussian(n, 1), u = test::gaussian(n, 2);
    for (auto& v : g) v *= 30.0f;  // both tails: silu(-90) ~ 0, silu(90) = 90
    std::vector<float> out(n);
    swiglu(g.data(), u.data(), out.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double gi = g[i], want = gi / (1.0 + std::exp(-gi)) * u[i];
      EXPECT_NEAR(out[i], want, 4e-7 * std::fabs(want) + 1e-30) << isa << " gate " << g[i];
    }
  }
}

// GeGLU with the tanh GELU (Gemma): both tails and the middle, against float64 tanh.
TEST(Elementwise, GegluTanhMatchesFloat64OnEveryIsa) {
  IsaGuard guard;
  for (const char* isa : test::supported_tiers()) {
    force_isa(isa);
    const int64_t n = 301;
    auto g = test::gaussian(n, 4), u = test::gaussian(n, 5);
    for (int64_t i = 0; i < n; ++i) g[i] = i < 40 ? -20.0f + 1.0f * i : 3.0f * g[i];
    std::vector<float> out(n);
    geglu_tanh(g.data(), u.data(), out.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double x = g[i],
                   want = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))) * u[i];
      EXPECT_NEAR(out[i], want, 1e-6 * std::fabs(u[i]) + 4e-7 * std::fabs(want)) << isa << " gate " << g[i];
    }
  }
}

// GELU (erf form): the SIMD tiers' erf (Abramowitz & Stegun 7.1.26, |error| <= 1.5e-7, over the
// tier's exp) against std::erf in float64; both tails (gelu(-12) ~ 0, gelu(12) = 12) and the
// middle, where BERT's activations are.
TEST(Elementwise, GeluMatchesFloat64OnEveryIsa) {
  IsaGuard guard;
  for (const char* isa : test::supported_tiers()) {
    force_isa(isa);
    const int64_t n = 403;
    auto x = test::gaussian(n, 3);
    for (int64_t i = 0; i < n; ++i) x[i] = i < 40 ? -12.0f + 0.6f * i : 3.0f * x[i];
    std::vector<float> out = x;
    gelu_erf(out.data(), n);
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double xi = x[i], want = 0.5 * xi * (1.0 + std::erf(xi / std::sqrt(2.0)));
      worst = std::max(worst, std::fabs(out[i] - want) / (1.0 + std::fabs(xi)));
      EXPECT_NEAR(out[i], want, 2.5e-7 * (1.0 + std::fabs(xi))) << isa << " x " << x[i];
    }
    if (std::getenv("FERRUM_TEST_PRINT_ERR")) std::printf("gelu %s: %.3g\n", isa, worst);
  }
}

}  // namespace
}  // namespace ferrum::kernels
