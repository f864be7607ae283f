// FNV-1a, 64 bits: cheap, stable across runs and machines (file checksums, folder names).
#pragma once

#include <cstdint>
#include <span>

namespace ferrum {

inline uint64_t fnv1a64(std::span<const uint8_t> bytes, uint64_t h = 0xcbf29ce484222325ull) {
  for (uint8_t c : bytes) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

}  // namespace ferrum
