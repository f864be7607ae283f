// UTF-8 and Python str helpers for the Jinja interpreter (strip/split/slicing by code point,
// Python's whitespace set and str repr).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ferrum::jinja::text {

// Byte offsets of every code point start, plus s.size() at the end.
std::vector<size_t> cp_offsets(std::string_view s);
size_t cp_count(std::string_view s);
uint32_t decode_at(std::string_view s, size_t& i);  // lenient: invalid bytes decode as themselves
void append_utf8(std::string& out, uint32_t cp);

// Python str.isspace() for one code point.
bool is_space(uint32_t cp);
// Python str.strip/lstrip/rstrip; chars = nullopt strips whitespace.
std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);
// Python str.split / rsplit (sep = nullopt: runs of whitespace); maxsplit < 0: no limit.
std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
std::vector<std::string> splitlines(std::string_view s, bool keepends);
std::string replace(std::string_view s, std::string_view old, std::string_view repl, int64_t count);
int64_t count(std::string_view s, std::string_view sub);

// Case mapping: ASCII plus Latin-1/Latin Extended-A, Greek and Cyrillic basics.
std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string capitalize(std::string_view s);  // Python str.capitalize
std::string title(std::string_view s);       // Python str.title
std::string swapcase(std::string_view s);
bool is_upper_cp(uint32_t cp);
bool is_lower_cp(uint32_t cp);
bool is_alpha_cp(uint32_t cp);  // approximation: cased letters and non-ASCII letters above U+00C0
bool is_digit_cp(uint32_t cp);

// markupsafe.escape: & < > " ' as HTML entities.
std::string html_escape(std::string_view s);

// Python repr() of a str.
std::string repr(std::string_view s);

}  // namespace ferrum::jinja::text
