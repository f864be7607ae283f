// The packed products for AVX2 + FMA + F16C: integer dot products with vpmaddubsw (packed_ymm.h).
#include "kernels/cpu/packed_ymm.h"

namespace ferrum::kernels {

const PackedKernels& avx2_packed_kernels() {
  static constexpr PackedKernels k = ymm_packed_kernels<DotMaddubs>();
  return k;
}

}  // namespace ferrum::kernels
