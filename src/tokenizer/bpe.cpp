// Rank-driven BPE on one pre-token: start from characters (bytes for byte-level vocabularies),
// merge the adjacent pair with the lowest merge rank (ties: leftmost) until none applies.
// Linked list + priority queue with lazy invalidation: O(n log n) per pre-token.
#include <algorithm>
#include <array>

#include "core/utf8.h"
#include "tokenizer/tokenizer_impl.h"

namespace ferrum::tok {

namespace {

struct Sym {
  int32_t id;
  int prev, next;
};

struct Cand {
  int32_t rank;
  int left;
  int32_t left_id, right_id;
  bool operator<(const Cand& o) const {  // max-heap on "better": lower rank, then leftmost
    return rank > o.rank || (rank == o.rank && left > o.left);
  }
};

}  // namespace

// GPT-2 byte-level map (bytes_to_unicode in openai/gpt-2 encoder.py): printable Latin-1 bytes
// map to themselves, the other 68 bytes to U+0100.. in byte order.
uint32_t byte_to_cp(uint8_t b) {
  static const auto table = [] {
    std::array<uint32_t, 256> m{};
    uint32_t n = 0;
    for (int i = 0; i < 256; ++i) {
      const bool keep = (i >= 0x21 && i <= 0x7E) || (i >= 0xA1 && i <= 0xAC) || (i >= 0xAE);
      m[i] = keep ? i : 0x100 + n++;
    }
    return m;
  }();
  return table[b];
}

int cp_to_byte(uint32_t cp) {
  static const auto table = [] {
    std::array<int16_t, 0x144> m;
    m.fill(-1);
    for (int b = 0; b < 256; ++b) m[byte_to_cp(static_cast<uint8_t>(b))] = static_cast<int16_t>(b);
    return m;
  }();
  return cp < table.size() ? table[cp] : -1;
}

void bpe_encode_word(const TokenizerImpl& t, std::string_view word, std::vector<int32_t>& out) {
  if (word.empty()) return;
  if (t.ignore_merges) {
    const int32_t* id = (t.byte_level ? t.bytes_to_id : t.to_id).find(word);
    if (id) {
      out.push_back(*id);
      return;
    }
  }

  thread_local std::vector<Sym> syms;
  syms.clear();
  auto push_sym = [&](int32_t id) {
    // fuse_unk: consecutive unknown pieces become one unknown token.
    if (id == t.unk && t.fuse_unk && !syms.empty() && syms.back().id == t.unk) return;
    const int idx = static_cast<int>(syms.size());
    syms.push_back({id, idx - 1, idx + 1});
  };
  if (t.byte_level) {
    for (unsigned char c : word) {
      if (t.byte_token[c] >= 0) push_sym(t.byte_token[c]);
    }
  } else {
    for (size_t i = 0; i < word.size();) {
      const size_t len = std::min(utf8::lead_len(static_cast<uint8_t>(word[i])), word.size() - i);
      const int32_t id = t.find(word.substr(i, len));
      // Byte fallback needs a <0xXX> token for every byte of the character (else it is unknown,
      // as in HF tokenizers); a missing one was pushed as id -1.
      bool all_bytes = t.byte_fallback;
      for (size_t k = 0; all_bytes && k < len; ++k)
        all_bytes = t.byte_token[static_cast<uint8_t>(word[i + k])] >= 0;
      if (id >= 0) {
        push_sym(id);
      } else if (all_bytes) {
        for (size_t k = 0; k < len; ++k) push_sym(t.byte_token[static_cast<uint8_t>(word[i + k])]);
      } else if (t.unk >= 0) {
        push_sym(t.unk);
      }
      i += len;
    }
  }
  if (syms.empty()) return;
  syms.back().next = -1;

  auto lookup = [&](int32_t a, int32_t b) {
    return t.merges.find((uint64_t(uint32_t(a)) << 32) | uint32_t(b));
  };
  thread_local std::vector<Cand> heap;  // binary heap, reused across words
  heap.clear();
  auto try_add = [&](int left) {
    if (left < 0) return;
    const int right = syms[left].next;
    if (right < 0) return;
    if (const auto* m = lookup(syms[left].id, syms[right].id)) {
      heap.push_back({m->first, left, syms[left].id, syms[right].id});
      std::push_heap(heap.begin(), heap.end());
    }
  };
  for (int i = 0; i + 1 < static_cast<int>(syms.size()); ++i) try_add(i);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end());
    const Cand c = heap.back();
    heap.pop_back();
    Sym& l = syms[c.left];
    if (l.id != c.left_id || l.next < 0) continue;
    Sym& r = syms[l.next];
    if (r.id != c.right_id) continue;
    const auto* m = lookup(l.id, r.id);
    l.id = m->second;
    r.id = -2;  // dead
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = c.left;
    try_add(l.prev);
    try_add(c.left);
  }
  for (int i = 0; i != -1; i = syms[i].next) out.push_back(syms[i].id);
}

}  // namespace ferrum::tok
