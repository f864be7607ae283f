// Scalar half / bfloat16 <-> float conversions (bit-exact, round to nearest even).
// Vector versions live in the kernels.
#pragma once

#include <cstdint>
#include <cstring>

namespace ferrum {

inline float fp32_from_bits(uint32_t w) {
  float f;
  std::memcpy(&f, &w, 4);
  return f;
}
inline uint32_t fp32_to_bits(float f) {
  uint32_t w;
  std::memcpy(&w, &f, 4);
  return w;
}

// IEEE half -> float, exact for every input including subnormals, inf and NaN.
inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0) {
    if (mant == 0) return fp32_from_bits(sign);
    // Subnormal: normalise.
    exp = 127 - 15 + 1;
    while ((mant & 0x400) == 0) {
      mant <<= 1;
      --exp;
    }
    mant &= 0x3ff;
    return fp32_from_bits(sign | (exp << 23) | (mant << 13));
  }
  if (exp == 0x1f) return fp32_from_bits(sign | 0x7f800000u | (mant << 13));
  return fp32_from_bits(sign | ((exp + 127 - 15) << 23) | (mant << 13));
}

// float -> IEEE half, round to nearest even, overflow to inf, NaN preserved.
inline uint16_t f32_to_f16(float f) {
  const uint32_t x = fp32_to_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000;
  const uint32_t abs = x & 0x7fffffff;
  if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00);  // rounds to >= 65520 -> inf
  if (abs < 0x38800000u) {                                               // result is subnormal or zero
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);         // < half of smallest subnormal
    const uint32_t e = abs >> 23;
    const uint32_t m = (abs & 0x7fffff) | 0x800000;
    const uint32_t s = 126 - e;  // value = m * 2^(e-150); in units of 2^-24 that is m >> (126-e)
    uint32_t r = m >> s;
    const uint32_t rem = m & ((1u << s) - 1);
    const uint32_t half = 1u << (s - 1);
    if (rem > half || (rem == half && (r & 1))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  uint32_t r = ((abs >> 13) - ((127 - 15) << 10));
  const uint32_t rem = abs & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) ++r;
  return static_cast<uint16_t>(sign | r);
}

inline float bf16_to_f32(uint16_t h) { return fp32_from_bits(static_cast<uint32_t>(h) << 16); }

// float -> bfloat16, round to nearest even; NaN stays NaN.
inline uint16_t f32_to_bf16(float f) {
  uint32_t x = fp32_to_bits(f);
  if ((x & 0x7fffffff) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

}  // namespace ferrum
