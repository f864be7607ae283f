#include "tokenizer/unicode.h"

#include <algorithm>
#include <unordered_map>

#include "core/utf8.h"
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

std::string nfc(std::string_view text) {
  if (quick_nfc(text)) return std::string(text);
  return utf8::encode(nfc(utf8::decode(text)));
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
