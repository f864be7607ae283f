#include "grammar/utf8_ranges.h"

#include <algorithm>

namespace ferrum::grammar {

namespace {

std::vector<std::pair<uint32_t, uint32_t>> normalized(std::vector<std::pair<uint32_t, uint32_t>> r) {
  std::sort(r.begin(), r.end());
  std::vector<std::pair<uint32_t, uint32_t>> out;
  for (auto [lo, hi] : r) {
    if (lo > hi) continue;
    if (!out.empty() && lo <= out.back().second + 1)
      out.back().second = std::max(out.back().second, hi);
    else
      out.emplace_back(lo, hi);
  }
  return out;
}

// Splits [lo, hi] until each piece has one encoded length and its bytes vary independently (the
// classic regex-engine construction), then emits it.
void split(uint32_t lo, uint32_t hi, std::vector<Utf8Sequence>& out) {
  static constexpr uint32_t kLengthEnds[] = {0x7F, 0x7FF, 0xFFFF};
  for (uint32_t end : kLengthEnds)
    if (lo <= end && hi > end) {
      split(lo, end, out);
      split(end + 1, hi, out);
      return;
    }
  if (hi <= 0x7F) {
    out.push_back({{static_cast<uint8_t>(lo), static_cast<uint8_t>(hi)}});
    return;
  }
  const size_t n = encode_utf8(lo).size();
  for (size_t i = 1; i < n; ++i) {
    const uint32_t m = (uint32_t{1} << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        split(lo, lo | m, out);
        split((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        split(lo, (hi & ~m) - 1, out);
        split(hi & ~m, hi, out);
        return;
      }
    }
  }
  const auto a = encode_utf8(lo), b = encode_utf8(hi);
  Utf8Sequence seq;
  for (size_t i = 0; i < n; ++i) seq.push_back({a[i], b[i]});
  out.push_back(std::move(seq));
}

}  // namespace

std::vector<uint8_t> encode_utf8(uint32_t cp) {
  if (cp < 0x80) return {static_cast<uint8_t>(cp)};
  if (cp < 0x800) return {static_cast<uint8_t>(0xC0 | (cp >> 6)), static_cast<uint8_t>(0x80 | (cp & 0x3F))};
  if (cp < 0x10000)
    return {static_cast<uint8_t>(0xE0 | (cp >> 12)), static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F)),
            static_cast<uint8_t>(0x80 | (cp & 0x3F))};
  return {static_cast<uint8_t>(0xF0 | (cp >> 18)), static_cast<uint8_t>(0x80 | ((cp >> 12) & 0x3F)),
          static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F)), static_cast<uint8_t>(0x80 | (cp & 0x3F))};
}

std::vector<std::pair<uint32_t, uint32_t>> complement(std::vector<std::pair<uint32_t, uint32_t>> ranges) {
  std::vector<std::pair<uint32_t, uint32_t>> out;
  uint32_t next = 0;
  for (auto [lo, hi] : normalized(std::move(ranges))) {
    if (lo > kMaxCodePoint) break;
    if (lo > next) out.emplace_back(next, lo - 1);
    next = hi + 1;
  }
  if (next <= kMaxCodePoint) out.emplace_back(next, kMaxCodePoint);
  return out;
}

std::vector<Utf8Sequence> utf8_sequences(std::vector<std::pair<uint32_t, uint32_t>> ranges) {
  std::vector<Utf8Sequence> out;
  for (auto [lo, hi] : normalized(std::move(ranges))) {
    hi = std::min(hi, kMaxCodePoint);
    if (lo > hi) continue;
    // Surrogates are not encodable.
    if (lo < 0xD800 && hi >= 0xD800) {
      split(lo, 0xD7FF, out);
      if (hi > 0xDFFF) split(0xE000, hi, out);
    } else if (lo >= 0xD800 && lo <= 0xDFFF) {
      if (hi > 0xDFFF) split(0xE000, hi, out);
    } else {
      split(lo, hi, out);
    }
  }
  return out;
}

}  // namespace ferrum::grammar
