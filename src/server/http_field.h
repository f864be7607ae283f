// HTTP field values: the optional whitespace (RFC 9110's OWS: spaces and tabs) around them.
#pragma once

#include <string_view>

namespace ferrum::server {

inline std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace ferrum::server
