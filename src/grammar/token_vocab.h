// A tokenizer's vocabulary as the grammar sees it: each token's bytes and a trie over them, built
// once per tokenizer and shared by every grammar and sequence.
//
// The trie is stored in preorder (node i's subtree is [i, subtree_end[i])), so the mask walk is a
// loop that skips a whole subtree when its prefix is rejected: shared prefixes are matched once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ferrum {
class Tokenizer;
}

namespace ferrum::grammar {

struct TokenVocab {
  // `bytes[id]` empty: a token no grammar allows (control, unused); `eog`: end-of-generation ids,
  // allowed exactly where the grammar may end. strip_first_space: the detokenizer drops the first
  // token's leading space (SentencePiece), so that space is not matched.
  TokenVocab(std::vector<std::string> bytes, std::vector<int32_t> eog, bool strip_first_space);
  static std::shared_ptr<const TokenVocab> from_tokenizer(const Tokenizer& tok);

  int32_t size() const { return static_cast<int32_t>(bytes.size()); }
  bool is_eog(int32_t id) const;

  std::vector<std::string> bytes;
  std::vector<int32_t> eog;
  bool strip_first_space = false;

  // Trie nodes (preorder); node 0 is the root (no byte). Node i has byte[i] at depth[i] and the
  // tokens sorted_ids[tok_begin[i] .. tok_begin[i+1]) end at it.
  std::vector<uint8_t> byte;
  std::vector<uint32_t> depth, subtree_end, tok_begin, parent;
  std::vector<int32_t> sorted_ids;
  uint32_t max_depth = 0;

 private:
  std::vector<uint8_t> eog_flag_;
};

}  // namespace ferrum::grammar
