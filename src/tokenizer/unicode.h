// Unicode helpers for the tokenizers: UTF-8 coding, general categories, NFC/NFD and lower-casing
// from tables generated out of the Unicode Character Database (unicode_tables.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ferrum::unicode {

// Order matches gen_unicode_tables.py CATS.
enum class Category : uint8_t {
  Cn,
  Lu,
  Ll,
  Lt,
  Lm,
  Lo,
  Mn,
  Mc,
  Me,
  Nd,
  Nl,
  No,
  Pc,
  Pd,
  Ps,
  Pe,
  Pi,
  Pf,
  Po,
  Sm,
  Sc,
  Sk,
  So,
  Zs,
  Zl,
  Zp,
  Cc,
  Cf,
  Cs,
  Co
};

Category category(uint32_t cp);
inline bool is_letter(Category c) {
  return c >= Category::Lu && c <= Category::Lo;
}
inline bool is_mark(Category c) {
  return c >= Category::Mn && c <= Category::Me;
}
inline bool is_number(Category c) {
  return c >= Category::Nd && c <= Category::No;
}
inline bool is_punct(Category c) {
  return c >= Category::Pc && c <= Category::Po;
}
inline bool is_symbol(Category c) {
  return c >= Category::Sm && c <= Category::So;
}
inline bool is_separator(Category c) {
  return c >= Category::Zs && c <= Category::Zp;
}
inline bool is_other(Category c) {
  return c == Category::Cn || c >= Category::Cc;
}
// Unicode White_Space property (Rust char::is_whitespace).
bool is_white_space(uint32_t cp);
uint8_t combining_class(uint32_t cp);

// Length of the UTF-8 sequence starting with byte b (1 for continuation/invalid bytes).
inline size_t utf8_len(uint8_t b) {
  static constexpr uint8_t lut[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return lut[b >> 4];
}
void append_utf8(std::string& out, uint32_t cp);
// Offset of the first ill-formed byte, or npos if s is valid UTF-8.
size_t find_invalid_utf8(std::string_view s);
// Decodes a valid UTF-8 string (call find_invalid_utf8 first).
std::vector<uint32_t> decode_utf8(std::string_view s);
// Decodes one code point at s[i] (valid UTF-8 assumed); advances i.
uint32_t next_cp(std::string_view s, size_t& i);
std::string encode_utf8(const std::vector<uint32_t>& cps);

// Canonical decomposition (NFD) and composition (NFC) of code point sequences.
std::vector<uint32_t> nfd(const std::vector<uint32_t>& cps);
std::vector<uint32_t> nfc(const std::vector<uint32_t>& cps);
std::string nfc(std::string_view utf8);
// Appends the full lower-case mapping of cp (one to three code points).
void append_lower(std::vector<uint32_t>& out, uint32_t cp);
// Full canonical decomposition of one code point (itself if none); Hangul included.
void append_nfd(std::vector<uint32_t>& out, uint32_t cp);
// True if s is certainly already NFC (quick check: all code points below U+0300).
bool quick_nfc(std::string_view s);

}  // namespace ferrum::unicode
