// Code point ranges as UTF-8 byte-range sequences: [U+0080, U+07FF] is [C2-DF][80-BF], so a
// character class can be matched one byte at a time.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace ferrum::grammar {

struct ByteRange {
  uint8_t lo, hi;
};
using Utf8Sequence = std::vector<ByteRange>;  // one byte range per encoded byte

inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// Every code point in the (sorted or not, possibly overlapping) ranges exactly once, as byte-range
// sequences. Surrogates (U+D800-DFFF) are left out: they are not valid in UTF-8.
std::vector<Utf8Sequence> utf8_sequences(std::vector<std::pair<uint32_t, uint32_t>> ranges);

// Sorted, merged complement of `ranges` over [0, kMaxCodePoint].
std::vector<std::pair<uint32_t, uint32_t>> complement(std::vector<std::pair<uint32_t, uint32_t>> ranges);

// UTF-8 bytes of one code point (<= kMaxCodePoint).
std::vector<uint8_t> encode_utf8(uint32_t cp);

}  // namespace ferrum::grammar
