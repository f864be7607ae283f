// ARM64 tiers: scalar, NEON (Advanced SIMD, in every ARMv8-A core) and NEON + the dot-product
// extension (SDOT/UDOT: ARMv8.2 and later, e.g. Cortex-A55/A76, Neoverse N1, Apple M1), each usable
// when the kernel reports it in the hardware capability bits.
#include <asm/hwcap.h>
#include <sys/auxv.h>

#include <array>

#include "kernels/cpu/cpu_tiers.h"
#include "kernels/cpu/kernels.h"

namespace ferrum::kernels {

// The NEON tier with the packed products' integer dot products done by SDOT.
const IsaKernels& neondot_kernels() {
  static const IsaKernels k = [] {
    IsaKernels v = neon_kernels();
    v.name = "neondot";
    v.packed = &neondot_packed_kernels();
    return v;
  }();
  return k;
}

std::span<const CpuTier> cpu_tiers() {
  static constexpr std::array<CpuTier, 3> kTiers = {{
      {"scalar", [] { return true; }, scalar_kernels},
      {"neon", [] { return (getauxval(AT_HWCAP) & HWCAP_ASIMD) != 0; }, neon_kernels},
      {"neondot",
       [] { return (getauxval(AT_HWCAP) & (HWCAP_ASIMD | HWCAP_ASIMDDP)) == (HWCAP_ASIMD | HWCAP_ASIMDDP); },
       neondot_kernels},
  }};
  return kTiers;
}

}  // namespace ferrum::kernels
