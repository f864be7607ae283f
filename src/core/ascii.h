// ASCII-only text rules for names and protocol tokens (config keys, HTTP media types), which
// compare case-insensitively without any locale.
#pragma once

#include <string>
#include <string_view>

namespace ferrum {

inline std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

}  // namespace ferrum
