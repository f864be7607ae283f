// Constrained decoding for one sequence: which tokens the grammar allows next (a bit per token id),
// accepting the sampled token, and rolling back accepted tokens (speculative verification).
//
// The mask walks the vocabulary trie from the matcher's current state: a trie node's byte is
// matched once for every token sharing that prefix, and a rejected prefix skips its subtree.
// Masks are memoized per matcher state (a JSON string's body, a run of digits: the state repeats
// from token to token), so a repeated state costs a copy. End-of-generation tokens are allowed
// exactly where the grammar may end; tokens with no bytes (control, unused) never are.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/token_vocab.h"

namespace ferrum::grammar {

// A grammar bound to a vocabulary: immutable, shared by every sequence that uses it.
struct CompiledGrammar {
  std::shared_ptr<const Grammar> grammar;
  std::shared_ptr<const TokenVocab> vocab;
};

class TokenMask {
 public:
  // at_text_start: the first token starts the text, so a vocabulary with strip_first_space loses
  // that token's leading space (as the detokenizer does).
  TokenMask(std::shared_ptr<const CompiledGrammar> g, bool at_text_start);

  // Sets `bits` (n_bits bits, rounded up to words) to the tokens allowed now; ids beyond the
  // vocabulary are never allowed.
  void fill(std::vector<uint64_t>& bits, int n_bits);
  // Advances by token `id`; false (state unchanged) when the grammar does not allow it. An
  // end-of-generation token is accepted (without moving) where the grammar may end.
  bool accept_token(int32_t id);
  void rollback(size_t n_tokens);  // undoes the last n accept_token()s
  bool can_end() const { return m_.can_end(); }
  bool done() const { return m_.done(); }
  size_t n_accepted() const { return m_.history_size(); }

  // Walks the trie without the memo (for the benchmark and tests).
  void compute(std::vector<uint64_t>& bits, int n_bits);

 private:
  bool strip_now() const { return strip_first_ && m_.history_size() == 0; }

  std::shared_ptr<const CompiledGrammar> g_;
  Matcher m_;
  bool strip_first_;
  std::vector<Matcher::State> depth_states_;  // the walk's state after each depth of the prefix
  // Memo: state (+ first-token flag) -> mask, bounded (oldest entry evicted).
  std::unordered_map<std::string, std::vector<uint64_t>> memo_;
  std::list<std::string> memo_order_;
};

inline bool bit_set(const std::vector<uint64_t>& bits, int32_t id) {
  return (bits[id >> 6] >> (id & 63)) & 1;
}

}  // namespace ferrum::grammar
