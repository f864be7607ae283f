// API-key authentication: `Authorization: Bearer <key>` (scheme case-insensitive, as RFC 7235
// says) compared in constant time, so the answer's timing does not reveal how much of a guess
// was right.
#pragma once

#include <string_view>

namespace ferrum::server {

bool bearer_matches(std::string_view authorization_header, std::string_view key);
// A header that is the key itself (Anthropic's `x-api-key`), compared the same way.
bool key_matches(std::string_view value, std::string_view key);

}  // namespace ferrum::server
