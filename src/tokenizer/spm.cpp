// SentencePiece-style BPE as llama.cpp runs it on GGUF "llama" vocabularies: start from UTF-8
// characters, repeatedly merge the adjacent pair whose concatenation is the vocabulary entry with
// the highest score (ties: leftmost), then map leftover characters to <0xXX> byte tokens.
// A priority queue over candidate pairs with lazy invalidation keeps this O(n log n).
#include <algorithm>

#include "core/utf8.h"
#include "tokenizer/tokenizer_impl.h"

namespace ferrum::tok {

namespace {

struct Sym {
  int prev, next;
  uint32_t off, len;  // byte range in the text; len 0 once merged into the left neighbour
  int32_t id;         // vocabulary id of the text, -1 if none
};

struct Bigram {
  float score;
  int left, right;
  uint32_t size;
  int32_t id;                              // token the pair merges into
  bool operator<(const Bigram& o) const {  // max-heap: higher score, then smaller left first
    return score < o.score || (score == o.score && left > o.left);
  }
};

}  // namespace

namespace {

void encode_segment(const TokenizerImpl& t, std::string_view text, std::vector<int32_t>& out) {
  thread_local std::vector<Sym> syms;
  thread_local std::vector<Bigram> heap;
  syms.clear();
  heap.clear();
  for (size_t off = 0; off < text.size();) {
    const size_t len = std::min(utf8::lead_len(static_cast<uint8_t>(text[off])), text.size() - off);
    const int idx = static_cast<int>(syms.size());
    syms.push_back({idx - 1, off + len == text.size() ? -1 : idx + 1, static_cast<uint32_t>(off),
                    static_cast<uint32_t>(len), t.find(text.substr(off, len))});
    off += len;
  }
  if (syms.empty()) return;

  auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const uint32_t size = syms[left].len + syms[right].len;
    int32_t id;
    if (syms[left].id >= 0 && syms[right].id >= 0) {
      // Both sides are tokens: the precomputed pair table answers without hashing text.
      const auto* m = t.spm_pairs.find((uint64_t(uint32_t(syms[left].id)) << 32) | uint32_t(syms[right].id));
      id = m ? m->first : -1;
    } else {
      id = t.find(text.substr(syms[left].off, size));
    }
    if (id < 0) return;
    heap.push_back({t.score[id], left, right, size, id});
    std::push_heap(heap.begin(), heap.end());
  };
  for (int i = 1; i < static_cast<int>(syms.size()); ++i) try_add(i - 1, i);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end());
    const Bigram b = heap.back();
    heap.pop_back();
    Sym& l = syms[b.left];
    Sym& r = syms[b.right];
    // Stale entry: one side was merged away or changed since this pair was queued.
    if (l.len == 0 || r.len == 0 || l.len + r.len != b.size || l.next != b.right) continue;
    l.len += r.len;
    l.id = b.id;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = b.left;
    try_add(l.prev, b.left);
    try_add(b.left, l.next);
  }

  for (int i = 0; i != -1; i = syms[i].next) {
    const Sym& s = syms[i];
    if (s.id >= 0) {
      out.push_back(s.id);
      continue;
    }
    // Byte fallback: one <0xXX> token per byte (unknown token if the vocab has none).
    for (uint32_t k = 0; k < s.len; ++k) {
      const int32_t bt = t.byte_token[static_cast<uint8_t>(text[s.off + k])];
      if (bt >= 0) {
        out.push_back(bt);
      } else if (t.unk >= 0) {
        out.push_back(t.unk);
      }
    }
  }
}

}  // namespace

void spm_encode(const TokenizerImpl& t, std::string_view text, std::vector<int32_t>& out) {
  if (!t.spm_word_local) {
    encode_segment(t, text, out);
    return;
  }
  // No vocabulary entry has "▁" after another character, so no merge can cross the start of a
  // "▁" run: encode each such segment on its own (same result, small cache-friendly heaps).
  static constexpr std::string_view kSp = "\xE2\x96\x81";
  size_t start = 0;
  for (size_t pos = text.find(kSp, 1); pos != std::string_view::npos;
       pos = text.find(kSp, pos + kSp.size())) {
    const bool run_start = pos < kSp.size() || text.compare(pos - kSp.size(), kSp.size(), kSp) != 0;
    if (run_start && pos > start) {
      encode_segment(t, text.substr(start, pos - start), out);
      start = pos;
    }
  }
  encode_segment(t, text.substr(start), out);
}

}  // namespace ferrum::tok
