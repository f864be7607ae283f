#include "dist/transport_group.h"

#include <cstring>

#include "core/fail.h"

namespace ferrum::dist {

void TransportGroup::sum(float* x, int64_t n) {
  const int ranks = size();
  if (static_cast<int64_t>(all_.size()) < ranks * n) all_.resize(ranks * n);
  t_.allgather(x, n * sizeof(float), all_.data());
  for (int64_t i = 0; i < n; ++i) {
    float s = all_[i];
    for (int r = 1; r < ranks; ++r) s += all_[r * n + i];
    x[i] = s;
  }
}

void TransportGroup::gather_columns(const float* part, int64_t rows, std::span<const int64_t> cols,
                                    float* out, int64_t ld) {
  if (static_cast<int>(cols.size()) != size())
    fail("tensor parallelism: {} column shares for {} ranks", cols.size(), size());
  int64_t total = 0;
  bytes_.clear();
  for (int64_t c : cols) {
    bytes_.push_back(rows * c * sizeof(float));
    total += c;
  }
  if (rank() == 0 && static_cast<int64_t>(all_.size()) < rows * total) all_.resize(rows * total);
  t_.gather(part, bytes_, all_.data());
  if (rank() != 0) return;
  const float* from = all_.data();
  for (int64_t c0 = 0; int64_t c : cols) {  // rank r's block: rows x c, row-major
    for (int64_t t = 0; t < rows; ++t) std::memcpy(out + t * ld + c0, from + t * c, c * sizeof(float));
    from += rows * c;
    c0 += c;
  }
}

}  // namespace ferrum::dist
