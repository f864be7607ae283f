// The tensor-parallel group (models/tensor_parallel.h) over a transport's collectives: a sum is
// an all-gather of the ranks' partial sums, added in rank order on every rank (so every rank holds
// the same bits, as one reduction order of MPI_Allreduce would not promise for 3 ranks and more).
#pragma once

#include <vector>

#include "dist/transport.h"
#include "models/tensor_parallel.h"

namespace ferrum::dist {

class TransportGroup : public TensorParallelGroup {
 public:
  explicit TransportGroup(Transport& t) : t_(t) {}
  int rank() const override { return t_.rank(); }
  int size() const override { return t_.size(); }
  void sum(float* x, int64_t n) override;
  void gather_columns(const float* part, int64_t rows, std::span<const int64_t> cols, float* out,
                      int64_t ld) override;

 private:
  Transport& t_;
  std::vector<float> all_;  // grow-only
  std::vector<size_t> bytes_;
};

}  // namespace ferrum::dist
