// ModelOptions::precision as the kernels see it: the activations' treatment in every product and
// what happens to F16/F32 weight matrices at load.
#pragma once

#include "ferrum/model.h"
#include "kernels/cpu/bf16_round.h"
#include "kernels/cpu/matmul.h"
#include "models/weights.h"

namespace ferrum {

inline kernels::Precision kernel_precision(Precision p) {
  return p == Precision::Exact ? kernels::Precision::Exact : kernels::Precision::Fast;
}

inline kernels::WeightRounding weight_rounding(Precision p) {
  return p == Precision::BF16 ? kernels::WeightRounding::Bf16 : kernels::WeightRounding::None;
}

// For a matrix a model multiplies itself (not through kernels::Linear, which rounds its own):
// under `r`, an F16/F32 `t` is replaced by a BF16 copy kept alive in `copies`, and its file pages
// are released; other types stay as they are.
inline void round_matrix(TensorView& t, kernels::WeightRounding r, const WeightSet& w, ThreadPool& pool,
                         std::vector<std::shared_ptr<const uint8_t>>& copies) {
  if (!kernels::rounds_to_bf16(r, t.type)) return;
  kernels::Bf16Copy c = kernels::copy_as_bf16(t, pool);
  w.release_pages(t);  // the copy replaces the file pages
  t = c.view;
  copies.push_back(std::move(c.data));
}

}  // namespace ferrum
