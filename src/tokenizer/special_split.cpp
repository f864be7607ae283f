#include "tokenizer/special_split.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace ferrum::tok {

namespace {
bool is_space_byte(char c) {
  return std::isspace(static_cast<unsigned char>(c)) != 0;
}

// Whether [b, e) shares a byte with one of the sorted, disjoint spans.
bool touches(const std::vector<Span>& spans, size_t b, size_t e) {
  auto it =
      std::upper_bound(spans.begin(), spans.end(), b, [](size_t x, const Span& s) { return x < s.end; });
  return it != spans.end() && it->begin < e;
}

// Claimed ranges: start -> (end, id or -1 for whitespace removed by lstrip/rstrip).
using Claims = std::map<size_t, std::pair<size_t, int32_t>>;

// llama.cpp's priority order: each token in turn (longest text first) takes its leftmost
// occurrences that overlap nothing claimed before, with the whitespace its lstrip/rstrip removes.
Claims claim(std::string_view text, const std::vector<AddedToken>& added, const std::vector<size_t>& len,
             const std::vector<std::vector<size_t>>& occ) {
  Claims claimed;
  auto overlaps = [&](size_t b, size_t e) {
    auto it = claimed.lower_bound(e);  // first range starting at or after e
    if (it == claimed.begin()) return false;
    --it;
    return it->second.first > b;
  };
  auto next_start = [&](size_t p) {
    auto it = claimed.upper_bound(p);
    return it == claimed.end() ? text.size() : it->first;
  };
  auto prev_end = [&](size_t p) {
    auto it = claimed.upper_bound(p);
    if (it == claimed.begin()) return size_t(0);
    --it;
    return it->second.first;
  };
  for (size_t k = 0; k < added.size(); ++k) {
    size_t own_end = 0;
    for (size_t p : occ[k]) {
      const size_t e = p + len[k];
      if (p < own_end || overlaps(p, e)) continue;
      size_t lb = p, re = e;
      if (added[k].lstrip) {
        const size_t lim = prev_end(p);
        while (lb > lim && is_space_byte(text[lb - 1])) --lb;
      }
      if (added[k].rstrip) {
        const size_t lim = next_start(e);
        while (re < lim && is_space_byte(text[re])) ++re;
      }
      claimed[p] = {e, added[k].id};
      if (lb < p) claimed[lb] = {p, -1};
      if (re > e) claimed[e] = {re, -1};
      own_end = re;
    }
  }
  return claimed;
}

}  // namespace

void SpecialSplitter::build(const std::vector<AddedToken>& added, const std::vector<std::string>& text) {
  added_ = &added;
  len_.assign(added.size(), 0);
  terminal_.assign(1, -1);
  std::fill(std::begin(root_), std::end(root_), -1);
  edges_.clear();
  for (size_t k = 0; k < added.size(); ++k) {
    const std::string& s = text[added[k].id];
    len_[k] = s.size();
    if (s.empty()) continue;
    int node = 0;
    for (unsigned char c : s) {
      int next = child(node, c);
      if (next < 0) {
        next = static_cast<int>(terminal_.size());
        terminal_.push_back(-1);
        if (node == 0) {
          root_[c] = next;
        } else {
          edges_.emplace((uint64_t(uint32_t(node)) << 8) | c, next);
        }
      }
      node = next;
    }
    if (terminal_[node] < 0) terminal_[node] = static_cast<int32_t>(k);  // first wins
  }
}

void SpecialSplitter::split(std::string_view text, bool parse_special, bool llamacpp_policy,
                            std::vector<Fragment>& out, const std::vector<Span>& literal) const {
  out.clear();
  const Filter f{parse_special, literal};
  if (llamacpp_policy) {
    split_llamacpp(text, f, out);
  } else {
    split_leftmost_longest(text, f, out);
  }
}

bool SpecialSplitter::allowed(int32_t k, size_t i, const Filter& f) const {
  if (!(*added_)[k].special) return true;
  return f.parse_special && (f.literal.empty() || !touches(f.literal, i, i + len_[k]));
}

// HF: leftmost-longest.
void SpecialSplitter::split_leftmost_longest(std::string_view text, const Filter& f,
                                             std::vector<Fragment>& out) const {
  const std::vector<AddedToken>& added = *added_;
  size_t pos = 0, i = 0;
  while (i < text.size()) {
    int node = 0, best = -1;
    for (size_t j = i; j < text.size(); ++j) {
      node = child(node, static_cast<uint8_t>(text[j]));
      if (node < 0) break;
      const int32_t k = terminal_[node];
      if (k >= 0 && allowed(k, i, f)) best = k;
    }
    if (best < 0) {
      ++i;
      continue;
    }
    size_t b = i, e = i + len_[best];
    if (added[best].lstrip) {
      while (b > pos && is_space_byte(text[b - 1])) --b;
    }
    if (added[best].rstrip) {
      while (e < text.size() && is_space_byte(text[e])) ++e;
    }
    if (b > pos) out.push_back({-1, pos, b});
    out.push_back({added[best].id, b, e});
    pos = i = e;
  }
  if (pos < text.size()) out.push_back({-1, pos, text.size()});
}

bool SpecialSplitter::occurrences(std::string_view text, const Filter& f,
                                  std::vector<std::vector<size_t>>& occ) const {
  occ.assign(added_->size(), {});
  bool any = false;
  for (size_t i = 0; i < text.size(); ++i) {
    int node = root_[static_cast<uint8_t>(text[i])];
    for (size_t j = i + 1; node >= 0; ++j) {
      const int32_t k = terminal_[node];
      if (k >= 0 && allowed(k, i, f)) {
        occ[k].push_back(i);
        any = true;
      }
      if (j >= text.size()) break;
      node = child(node, static_cast<uint8_t>(text[j]));
    }
  }
  return any;
}

// llama.cpp: gather all occurrences per token, then let tokens claim them in priority order.
void SpecialSplitter::split_llamacpp(std::string_view text, const Filter& f,
                                     std::vector<Fragment>& out) const {
  std::vector<std::vector<size_t>> occ;
  if (!occurrences(text, f, occ)) {
    if (!text.empty()) out.push_back({-1, 0, text.size()});
    return;
  }
  const Claims claimed = claim(text, *added_, len_, occ);
  size_t pos = 0;
  for (const auto& [b, v] : claimed) {
    if (b > pos) out.push_back({-1, pos, b});
    if (v.second >= 0) out.push_back({v.second, b, v.first});
    pos = v.first;
  }
  if (pos < text.size()) out.push_back({-1, pos, text.size()});
}

}  // namespace ferrum::tok
