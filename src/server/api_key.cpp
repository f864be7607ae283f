#include "server/api_key.h"

#include <strings.h>

#include <cstdint>

#include "server/http_field.h"

namespace ferrum::server {
namespace {

// Equal strings in time that depends only on the lengths (the key's length is not secret).
bool same_bytes(std::string_view guess, std::string_view key) {
  if (key.empty()) return false;
  uint8_t diff = guess.size() == key.size() ? 0 : 1;
  for (size_t i = 0; i < guess.size(); ++i) diff |= static_cast<uint8_t>(guess[i] ^ key[i % key.size()]);
  return diff == 0;
}

}  // namespace

bool key_matches(std::string_view value, std::string_view key) {
  return same_bytes(trim_ows(value), key);
}

bool bearer_matches(std::string_view header, std::string_view key) {
  header = trim_ows(header);
  constexpr std::string_view kScheme = "bearer";
  if (header.size() <= kScheme.size() || strncasecmp(header.data(), kScheme.data(), kScheme.size()) != 0)
    return false;
  const char sep = header[kScheme.size()];
  if (sep != ' ' && sep != '\t') return false;
  return same_bytes(trim_ows(header.substr(kScheme.size())), key);
}

}  // namespace ferrum::server
