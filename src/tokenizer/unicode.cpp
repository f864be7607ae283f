#include "tokenizer/unicode.h"

#include <algorithm>
#include <unordered_map>

#include "tokenizer/unicode_tables.h"

namespace ferrum::unicode {

namespace t = tables;

namespace {

// Hangul syllable constants (Unicode standard, section 3.12).
constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr uint32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount,
                   kSCount = kLCount * kNCount;

const std::unordered_map<uint64_t, uint32_t>& composition_map() {
  static const std::unordered_map<uint64_t, uint32_t> m = [] {
    std::unordered_map<uint64_t, uint32_t> r;
    r.reserve(t::kCompSize);
    for (size_t i = 0; i < t::kCompSize; ++i) {
      r.emplace((uint64_t(t::kComp[i].a) << 21) | t::kComp[i].b, t::kComp[i].c);
    }
    return r;
  }();
  return m;
}

template <typename E>
const E* find_entry(const E* table, size_t n, uint32_t cp) {
  const E* end = table + n;
  const E* it = std::lower_bound(table, end, cp, [](const E& e, uint32_t v) { return e.cp < v; });
  return (it != end && it->cp == cp) ? it : nullptr;
}

}  // namespace

Category category(uint32_t cp) {
  if (cp >= 0x110000) return Category::Cn;
  const t::CatRange* end = t::kCategoryRanges + t::kCategoryRangesSize;
  const t::CatRange* it = std::upper_bound(t::kCategoryRanges, end, cp,
                                           [](uint32_t v, const t::CatRange& r) { return v < r.first; });
  return static_cast<Category>((it - 1)->cat);
}

bool is_white_space(uint32_t cp) {
  return std::binary_search(t::kWhiteSpace, t::kWhiteSpace + t::kWhiteSpaceSize, cp);
}

uint8_t combining_class(uint32_t cp) {
  if (cp < 0x300) return 0;
  const t::CccRange* end = t::kCccRanges + t::kCccRangesSize;
  const t::CccRange* it =
      std::upper_bound(t::kCccRanges, end, cp, [](uint32_t v, const t::CccRange& r) { return v < r.first; });
  if (it == t::kCccRanges) return 0;
  --it;
  return cp <= it->last ? it->ccc : 0;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

size_t find_invalid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const uint8_t b = p[i];
    if (b < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if ((b & 0xE0) == 0xC0) {
      len = 2, cp = b & 0x1F;
    } else if ((b & 0xF0) == 0xE0) {
      len = 3, cp = b & 0x0F;
    } else if ((b & 0xF8) == 0xF0) {
      len = 4, cp = b & 0x07;
    } else {
      return i;
    }
    if (i + len > n) return i;
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    const bool overlong = (len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
    if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return std::string_view::npos;
}

uint32_t next_cp(std::string_view s, size_t& i) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const uint8_t b = p[i];
  if (b < 0x80) {
    ++i;
    return b;
  }
  const size_t len = utf8_len(b);
  uint32_t cp = len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
  for (size_t k = 1; k < len && i + k < s.size(); ++k) cp = (cp << 6) | (p[i + k] & 0x3F);
  i += len;
  return cp;
}

std::vector<uint32_t> decode_utf8(std::string_view s) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) out.push_back(next_cp(s, i));
  return out;
}

std::string encode_utf8(const std::vector<uint32_t>& cps) {
  std::string out;
  out.reserve(cps.size());
  for (uint32_t cp : cps) append_utf8(out, cp);
  return out;
}

void append_nfd(std::vector<uint32_t>& out, uint32_t cp) {
  if (cp < 0xC0) {
    out.push_back(cp);
    return;
  }
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const uint32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount) out.push_back(kTBase + s % kTCount);
    return;
  }
  if (const auto* e = find_entry(t::kDecomp, t::kDecompSize, cp)) {
    out.insert(out.end(), t::kDecompData + e->offset, t::kDecompData + e->offset + e->len);
  } else {
    out.push_back(cp);
  }
}

// Canonical ordering: stable sort of each run of non-starters by combining class.
static void canonical_order(std::vector<uint32_t>& v) {
  size_t i = 0;
  while (i < v.size()) {
    if (combining_class(v[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < v.size() && combining_class(v[j]) != 0) ++j;
    if (j - i > 1) {
      std::stable_sort(v.begin() + i, v.begin() + j,
                       [](uint32_t a, uint32_t b) { return combining_class(a) < combining_class(b); });
    }
    i = j;
  }
}

std::vector<uint32_t> nfd(const std::vector<uint32_t>& cps) {
  std::vector<uint32_t> out;
  out.reserve(cps.size() + 8);
  for (uint32_t cp : cps) append_nfd(out, cp);
  canonical_order(out);
  return out;
}

static uint32_t compose_pair(uint32_t a, uint32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount) {
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  }
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase &&
      b < kTBase + kTCount) {
    return a + (b - kTBase);
  }
  const auto& m = composition_map();
  auto it = m.find((uint64_t(a) << 21) | b);
  return it == m.end() ? 0 : it->second;
}

std::vector<uint32_t> nfc(const std::vector<uint32_t>& cps) {
  std::vector<uint32_t> d = nfd(cps);
  if (d.empty()) return d;
  // Canonical composition algorithm (UAX #15): a character combines with the last starter unless
  // a character between them has combining class 0 or >= its own.
  std::vector<uint32_t> out;
  out.reserve(d.size());
  size_t starter = 0;
  bool have_starter = false;
  int last_ccc = 0;  // combining class of out.back()
  for (uint32_t cp : d) {
    const int ccc = combining_class(cp);
    if (have_starter) {
      const bool adjacent = out.size() - 1 == starter;
      if (adjacent || (last_ccc != 0 && last_ccc < ccc)) {
        if (const uint32_t c = compose_pair(out[starter], cp)) {
          out[starter] = c;
          continue;
        }
      }
    }
    if (ccc == 0) {
      starter = out.size();
      have_starter = true;
    }
    last_ccc = ccc;
    out.push_back(cp);
  }
  return out;
}

bool quick_nfc(std::string_view s) {
  for (unsigned char c : s) {
    if (c >= 0xCC) return false;  // lead bytes of U+0300 and above
  }
  return true;
}

std::string nfc(std::string_view utf8) {
  if (quick_nfc(utf8)) return std::string(utf8);
  return encode_utf8(nfc(decode_utf8(utf8)));
}

void append_lower(std::vector<uint32_t>& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(cp >= 'A' && cp <= 'Z' ? cp + 32 : cp);
    return;
  }
  if (const auto* e = find_entry(t::kLower, t::kLowerSize, cp)) {
    out.insert(out.end(), t::kLowerData + e->offset, t::kLowerData + e->offset + e->len);
  } else {
    out.push_back(cp);
  }
}

}  // namespace ferrum::unicode
