// The packed products for ARMv8.0 NEON: integer dot products with SMLAL (packed_neon.h).
#include "kernels/cpu/packed_neon.h"

namespace ferrum::kernels {

const PackedKernels& neon_packed_kernels() {
  static constexpr PackedKernels k = neon_packed_table<DotSmlal>();
  return k;
}

}  // namespace ferrum::kernels
