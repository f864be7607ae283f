// e^x on 4 float lanes (AArch64 Advanced SIMD, baseline ARMv8.0), shared by the *_neon.cpp translation
// units. The same steps and accuracy as exp8 (exp_avx2.h) and exp16 (exp_avx512.h).
#pragma once

#include <arm_neon.h>

namespace ferrum::kernels {

// e^x for 4 lanes: x = n ln2 + r (ln2 split in two so n ln2 is exact to float precision), e^r by its
// Taylor polynomial to degree 7, times 2^n built in the exponent field. Measured: under 0.9 ulp from
// e^x on [-87, 88], and bitwise exp8's results (the same operations, each rounded once).
// Below -87.3 (and for NaN) the result is 0, so exp(-inf) = 0 for masked scores; above 88 it
// saturates at e^88. n stays in [-126, 127], so 2^n is a normal float.
inline float32x4_t exp4(float32x4_t x) {
  const uint32x4_t live = vcgeq_f32(x, vdupq_n_f32(-87.3f));
  x = vminq_f32(vmaxq_f32(x, vdupq_n_f32(-87.3f)), vdupq_n_f32(88.0f));
  // Round to nearest, ties to even (frintn), as _MM_FROUND_TO_NEAREST_INT.
  const float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
  float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693145751953125f));
  r = vfmsq_f32(r, n, vdupq_n_f32(1.42860682030941723212e-6f));
  float32x4_t p = vdupq_n_f32(1.0f / 5040);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 720), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 120), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 24), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 6), p, r);
  p = vfmaq_f32(vdupq_n_f32(0.5f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  // n is a whole number, so truncation converts it exactly.
  const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
  const float32x4_t y = vmulq_f32(p, vreinterpretq_f32_s32(e));
  return vreinterpretq_f32_u32(vandq_u32(live, vreinterpretq_u32_f32(y)));
}

}  // namespace ferrum::kernels
