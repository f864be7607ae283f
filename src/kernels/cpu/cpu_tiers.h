// The kernel tiers of the architecture this build targets, from the simplest (scalar) to the
// best, each with its CPU check (cpu_tiers_x86.cpp: CPUID and the OS-enabled register state;
// cpu_tiers_arm.cpp: the kernel's hardware capability bits). isa.cpp picks among them.
#pragma once

#include <span>

namespace ferrum::kernels {

struct IsaKernels;

struct CpuTier {
  const char* name;
  bool (*supported)();
  const IsaKernels& (*kernels)();
};
std::span<const CpuTier> cpu_tiers();

#if defined(__x86_64__)
// An AMD Zen 5 or later core (family 1Ah+): a tuning of the AVX-512 gemvs (packed_avx512.cpp).
bool amd_zen5_or_later();
#endif

}  // namespace ferrum::kernels
