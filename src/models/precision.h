// ModelOptions::precision as the kernels see it: the activations' treatment in every product and
// what happens to F16/F32 weight matrices at load.
#pragma once

#include "ferrum/model.h"
#include "kernels/cpu/bf16_round.h"
#include "kernels/cpu/matmul.h"

namespace ferrum {

inline kernels::Precision kernel_precision(Precision p) {
  return p == Precision::Exact ? kernels::Precision::Exact : kernels::Precision::Fast;
}

inline kernels::WeightRounding weight_rounding(Precision p) {
  return p == Precision::BF16 ? kernels::WeightRounding::Bf16 : kernels::WeightRounding::None;
}

}  // namespace ferrum
