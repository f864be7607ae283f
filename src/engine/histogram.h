// A fixed-bucket latency histogram (Prometheus semantics: cumulative buckets, sum, count).
#pragma once

#include <cstdint>
#include <vector>

namespace ferrum {

struct Histogram {
  std::vector<double> bounds;    // upper bounds, ascending (seconds)
  std::vector<uint64_t> counts;  // per bucket (not cumulative), one more for +Inf
  double sum = 0;
  uint64_t count = 0;

  Histogram() : counts(1, 0) {}
  explicit Histogram(std::vector<double> b) : bounds(std::move(b)), counts(bounds.size() + 1, 0) {}
  void observe(double v) {
    size_t i = 0;
    while (i < bounds.size() && v > bounds[i]) ++i;
    ++counts[i];
    sum += v;
    ++count;
  }
};

}  // namespace ferrum
