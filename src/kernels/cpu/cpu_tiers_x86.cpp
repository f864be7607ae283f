// x86-64 tiers: scalar, AVX2 (+ FMA, F16C, BMI2), AVX2 + AVX-VNNI, AVX-512 (F, BW, VL, DQ, VNNI:
// Cascade Lake, Ice Lake), AVX-512 + BF16 (Sapphire Rapids, Zen 4), each usable when CPUID reports
// it and the OS saves its registers (XCR0).
#include <cpuid.h>

#include <array>

#include "kernels/cpu/cpu_tiers.h"
#include "kernels/cpu/kernels.h"

namespace ferrum::kernels {
namespace {

struct CpuFeatures {
  bool avx2 = false;      // AVX2 + FMA + F16C (+ BMI2)
  bool avx2vnni = false;  // and AVX-VNNI (VEX vpdpbusd: Alder Lake, Zen 5 and later)
  bool avx512 = false;    // F + BW + VL + DQ + VNNI
  bool avx512bf16 = false;  // and BF16 (vdpbf16ps)
  bool amd_zen5 = false;    // AMD family 1Ah or later (a kernel tuning, not a tier: amd_zen5_or_later)
};

uint64_t xgetbv0() {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

CpuFeatures detect() {
  CpuFeatures f;
  unsigned a, b, c, d;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return f;
  const bool amd = b == 0x68747541u;  // "Auth" of "AuthenticAMD"
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  f.amd_zen5 = amd && ((a >> 8) & 0xF) + ((a >> 20) & 0xFF) >= 0x1A;  // base + extended family
  const bool osxsave = c & (1u << 27), fma = c & (1u << 12), f16c = c & (1u << 29), avx = c & (1u << 28);
  if (!osxsave || !avx) return f;
  const uint64_t xcr0 = xgetbv0();
  const bool os_avx = (xcr0 & 0x6) == 0x6, os_avx512 = (xcr0 & 0xe6) == 0xe6;
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  const bool avx2 = b & (1u << 5), bmi2 = b & (1u << 8);
  const bool f512 = b & (1u << 16), dq = b & (1u << 17), bw = b & (1u << 30), vl = b & (1u << 31);
  const bool vnni = c & (1u << 11);
  unsigned a1, b1, c1, d1;
  __cpuid_count(7, 1, a1, b1, c1, d1);
  const bool bf16 = a1 & (1u << 5), avxvnni = a1 & (1u << 4);
  f.avx2 = os_avx && avx2 && fma && f16c && bmi2;
  f.avx2vnni = f.avx2 && avxvnni;
  f.avx512 = f.avx2 && os_avx512 && f512 && dq && bw && vl && vnni;
  f.avx512bf16 = f.avx512 && bf16;
  return f;
}

const CpuFeatures& features() {
  static const CpuFeatures f = detect();
  return f;
}

}  // namespace

bool amd_zen5_or_later() {
  return features().amd_zen5;
}

// The AVX2 tier with the packed products' integer dot products done by AVX-VNNI.
const IsaKernels& avx2vnni_kernels() {
  static const IsaKernels k = [] {
    IsaKernels v = avx2_kernels();
    v.name = "avx2vnni";
    v.packed = &avxvnni_packed_kernels();
    return v;
  }();
  return k;
}

std::span<const CpuTier> cpu_tiers() {
  static constexpr std::array<CpuTier, 5> kTiers = {{
      {"scalar", [] { return true; }, scalar_kernels},
      {"avx2", [] { return features().avx2; }, avx2_kernels},
      {"avx2vnni", [] { return features().avx2vnni; }, avx2vnni_kernels},
      {"avx512", [] { return features().avx512; }, avx512_kernels},
      {"avx512bf16", [] { return features().avx512bf16; }, avx512bf16_kernels},
  }};
  return kTiers;
}

}  // namespace ferrum::kernels
