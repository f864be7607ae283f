// UTF-8 validation helpers for text read from model files.
#pragma once

#include <string>
#include <string_view>

namespace ferrum {

// True if s is well-formed UTF-8 (no overlongs, surrogates or code points above U+10FFFF).
bool utf8_valid(std::string_view s);
// s with every byte that is not part of a well-formed UTF-8 sequence replaced by U+FFFD.
std::string utf8_sanitize(std::string_view s);

}  // namespace ferrum
