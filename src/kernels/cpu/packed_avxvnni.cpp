// The packed products for AVX2 + AVX-VNNI: integer dot products with the VEX vpdpbusd
// (packed_ymm.h).
#include "kernels/cpu/packed_ymm.h"

namespace ferrum::kernels {

const PackedKernels& avxvnni_packed_kernels() {
  static constexpr PackedKernels k = ymm_packed_kernels<DotVnni>();
  return k;
}

}  // namespace ferrum::kernels
