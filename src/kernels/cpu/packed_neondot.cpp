// The packed products for NEON + the dot-product extension (ARMv8.2 SDOT by lane; packed_neon.h).
#include "kernels/cpu/packed_neon.h"

namespace ferrum::kernels {

const PackedKernels& neondot_packed_kernels() {
  static constexpr PackedKernels k = neon_packed_table<DotSdot>();
  return k;
}

}  // namespace ferrum::kernels
