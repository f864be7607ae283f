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

}  // namespace ferrum::kernels
