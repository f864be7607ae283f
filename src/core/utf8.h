// UTF-8: the one place that knows the byte rules (well-formed sequences: no overlongs, surrogates
// or code points above U+10FFFF), for the model-file readers (formats) and the tokenizers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ferrum::utf8 {

// True for a continuation byte (10xxxxxx).
inline bool is_continuation(uint8_t b) {
  return (b & 0xC0) == 0x80;
}
// Length of the sequence that lead byte b announces (1 for ASCII, continuation and invalid bytes;
// 0xF8-0xFF count as 4). For stepping through text already known to be valid.
inline size_t lead_len(uint8_t b) {
  static constexpr uint8_t lut[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return lut[b >> 4];
}

// Length of the well-formed sequence starting at s[i] (i < s.size()), or 0 if it is ill-formed.
size_t valid_len(std::string_view s, size_t i);
// Offset of the first ill-formed byte, or npos if s is well-formed.
size_t find_invalid(std::string_view s);
inline bool valid(std::string_view s) {
  return find_invalid(s) == std::string_view::npos;
}
// s with every byte that is not part of a well-formed sequence replaced by U+FFFD.
std::string sanitize(std::string_view s);
// Length of an incomplete (but so far well-formed) sequence at the end of s, else 0.
size_t incomplete_tail(std::string_view s);

// Decodes one code point at s[i] (valid UTF-8 assumed); advances i.
uint32_t next_cp(std::string_view s, size_t& i);
// Decodes a valid UTF-8 string (check it with find_invalid first).
std::vector<uint32_t> decode(std::string_view s);
void append(std::string& out, uint32_t cp);
std::string encode(const std::vector<uint32_t>& cps);

}  // namespace ferrum::utf8
