// Splitting raw text at special/added tokens before normal tokenization. A byte trie over the
// token texts finds every occurrence in one pass; the two policies are then applied exactly:
//  - llama.cpp (tokenizer_st_partition): tokens in order (longest text first), each taking its
//    leftmost non-overlapping occurrences in the text left free by earlier tokens;
//  - HF added vocabulary: leftmost-longest match.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/tokenizer_impl.h"

namespace ferrum::tok {

struct Fragment {
  int32_t id;  // >= 0: a matched special token; -1: text [b, e)
  size_t b, e;
};

// A byte range [begin, end) of text.
struct Span {
  size_t begin, end;
};

class SpecialSplitter {
 public:
  // `added` must stay alive and unchanged (index order = llama.cpp priority order).
  void build(const std::vector<AddedToken>& added, const std::vector<std::string>& text);
  // `literal`: sorted, disjoint spans in which no special token (one matched only with
  // parse_special) may be matched, even when parse_special is on.
  void split(std::string_view text, bool parse_special, bool llamacpp_policy, std::vector<Fragment>& out,
             const std::vector<Span>& literal = {}) const;

 private:
  // Which matches are allowed: special tokens only with parse_special and outside the literal spans.
  struct Filter {
    bool parse_special;
    const std::vector<Span>& literal;
  };
  bool allowed(int32_t k, size_t i, const Filter& f) const;  // added index k matched at byte i
  void split_leftmost_longest(std::string_view text, const Filter& f, std::vector<Fragment>& out) const;
  void split_llamacpp(std::string_view text, const Filter& f, std::vector<Fragment>& out) const;
  // Every allowed occurrence (start byte) of each added index; false if there is none.
  bool occurrences(std::string_view text, const Filter& f, std::vector<std::vector<size_t>>& occ) const;
  int child(int node, uint8_t c) const {
    if (node == 0) return root_[c];
    auto it = edges_.find((uint64_t(uint32_t(node)) << 8) | c);
    return it == edges_.end() ? -1 : it->second;
  }
  const std::vector<AddedToken>* added_ = nullptr;
  std::vector<size_t> len_;        // text length per added index
  std::vector<int32_t> terminal_;  // per node: added index ending here, -1 none
  int32_t root_[256];
  std::unordered_map<uint64_t, int32_t> edges_;
};

}  // namespace ferrum::tok
