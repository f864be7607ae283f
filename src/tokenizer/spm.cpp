// SentencePiece-style BPE as llama.cpp runs it on GGUF "llama" vocabularies: start from UTF-8
// characters, repeatedly merge the adjacent pair whose concatenation is the vocabulary entry with
// the highest score (ties: leftmost), then map leftover characters to <0xXX> byte tokens.
// A priority queue over candidate pairs with lazy invalidation keeps this O(n log n).
#include <queue>

#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

namespace ferrum::tok {

namespace {

struct Sym {
  int prev, next;
  uint32_t off, len;  // byte range in the text; len 0 once merged into the left neighbour
};

struct Bigram {
  float score;
  int left, right;
  uint32_t size;
  bool operator<(const Bigram& o) const {  // max-heap: higher score, then smaller left first
    return score < o.score || (score == o.score && left > o.left);
  }
};

}  // namespace

void spm_encode(const TokenizerImpl& t, std::string_view text, std::vector<int32_t>& out) {
  thread_local std::vector<Sym> syms;
  syms.clear();
  for (size_t off = 0; off < text.size();) {
    const size_t len = std::min(unicode::utf8_len(static_cast<uint8_t>(text[off])), text.size() - off);
    const int idx = static_cast<int>(syms.size());
    syms.push_back({idx - 1, off + len == text.size() ? -1 : idx + 1, static_cast<uint32_t>(off),
                    static_cast<uint32_t>(len)});
    off += len;
  }
  if (syms.empty()) return;

  std::vector<Bigram> storage;
  storage.reserve(syms.size() * 2);
  std::priority_queue<Bigram> queue(std::less<Bigram>(), std::move(storage));
  auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const uint32_t size = syms[left].len + syms[right].len;
    const int32_t id = t.find(text.substr(syms[left].off, size));
    if (id < 0) return;
    queue.push({t.score[id], left, right, size});
  };
  for (int i = 1; i < static_cast<int>(syms.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Sym& l = syms[b.left];
    Sym& r = syms[b.right];
    // Stale entry: one side was merged away or changed since this pair was queued.
    if (l.len == 0 || r.len == 0 || l.len + r.len != b.size || l.next != b.right) continue;
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = b.left;
    try_add(l.prev, b.left);
    try_add(b.left, l.next);
  }

  for (int i = 0; i != -1; i = syms[i].next) {
    const Sym& s = syms[i];
    const int32_t id = t.find(text.substr(s.off, s.len));
    if (id >= 0) {
      out.push_back(id);
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

}  // namespace ferrum::tok
