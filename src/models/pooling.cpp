#include "models/pooling.h"

#include <cmath>
#include <cstring>

#include "core/fail.h"

namespace ferrum {

const char* pooling_name(Pooling p) {
  switch (p) {
    case Pooling::Mean:
      return "mean";
    case Pooling::Cls:
      return "cls";
    case Pooling::Last:
      return "last";
  }
  return "?";
}

Pooling parse_pooling(const std::string& s) {
  if (s == "mean") return Pooling::Mean;
  if (s == "cls") return Pooling::Cls;
  if (s == "last") return Pooling::Last;
  fail("unknown pooling '{}' (expected mean, cls or last)", s);
}

void pool_rows(const float* rows, int64_t n, int64_t d, Pooling p, float* out) {
  FERRUM_ASSERT(n > 0, "pooling {} rows", n);
  if (p == Pooling::Mean) {
    for (int64_t c = 0; c < d; ++c) {
      double sum = 0;
      for (int64_t i = 0; i < n; ++i) sum += rows[i * d + c];
      out[c] = static_cast<float>(sum / n);
    }
    return;
  }
  const int64_t row = p == Pooling::Cls ? 0 : n - 1;
  std::memcpy(out, rows + row * d, d * sizeof(float));
}

void l2_normalize(std::span<float> v) {
  double ss = 0;
  for (float a : v) ss += double(a) * a;
  const double norm = std::sqrt(ss);
  if (norm > 0)
    for (float& a : v) a = static_cast<float>(a / norm);
}

}  // namespace ferrum
