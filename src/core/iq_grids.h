// Lookup grids of the i-quant types (iq_grids.cpp: data from the GGUF format) and the sign table.
#pragma once

#include <cstdint>

namespace ferrum::iq_grids {

extern const uint64_t kIQ2XXS[256];  // 8 magnitudes per entry (8, 25 or 43)
extern const uint64_t kIQ2XS[512];
extern const uint64_t kIQ2S[1024];
extern const uint32_t kIQ3XXS[256];  // 4 magnitudes per entry
extern const uint32_t kIQ3S[512];
extern const uint64_t kIQ1S[2048];  // 8 signed values per entry (-1, 0, 1)

// The 7 stored sign bits of 8 values plus an eighth that makes the count of set bits even (the
// ksigns_iq2xs table of the format, computed).
constexpr uint8_t signs8(uint32_t seven) {
  uint32_t p = seven & 127, v = p;
  v ^= v >> 4;
  v ^= v >> 2;
  v ^= v >> 1;
  return static_cast<uint8_t>(p | ((v & 1) << 7));
}

}  // namespace ferrum::iq_grids
