// Unicode helpers for the tokenizers: general categories, NFC/NFD and lower-casing from tables
// generated out of the Unicode Character Database (unicode_tables.cpp). UTF-8 coding is core/utf8.h.
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

// Canonical decomposition (NFD) and composition (NFC) of code point sequences.
std::vector<uint32_t> nfd(const std::vector<uint32_t>& cps);
std::vector<uint32_t> nfc(const std::vector<uint32_t>& cps);
std::string nfc(std::string_view text);
// Appends the full lower-case mapping of cp (one to three code points).
void append_lower(std::vector<uint32_t>& out, uint32_t cp);
// Full canonical decomposition of one code point (itself if none); Hangul included.
void append_nfd(std::vector<uint32_t>& out, uint32_t cp);
// True if s is certainly already NFC (quick check: all code points below U+0300).
bool quick_nfc(std::string_view s);

}  // namespace ferrum::unicode
