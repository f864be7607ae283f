// Constrained decoding for one sequence: which tokens the grammar allows next (a bit per token id),
// accepting the sampled token, and rolling back accepted tokens (speculative verification).
//
// The mask is the cached mask of the tops of the state's stacks (mask_cache.h) plus the cache's
// uncertain trie subtrees walked from the real state; the first token when a
// leading space is stripped, or a full cache, takes a full walk of the vocabulary trie from the
// state (a trie node's byte is matched once for every token sharing that prefix, and a rejected
// prefix skips its subtree). End-of-generation tokens are allowed exactly where the grammar may
// end; tokens with no bytes (control, unused) never are.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/mask_cache.h"
#include "grammar/matcher.h"
#include "grammar/token_vocab.h"

namespace ferrum::grammar {

// A grammar bound to a vocabulary: immutable, shared by every sequence that uses it.
struct CompiledGrammar {
  std::shared_ptr<const Grammar> grammar;
  std::shared_ptr<const TokenVocab> vocab;
  std::shared_ptr<MaskCache> masks;  // null: every mask is a full trie walk
};

// grammar + vocabulary + an empty mask cache.
std::shared_ptr<const CompiledGrammar> bind(std::shared_ptr<const Grammar> g,
                                            std::shared_ptr<const TokenVocab> v);

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

  // The same mask by a full trie walk from the state, without the cache (tests, benchmark).
  void compute_walk(std::vector<uint64_t>& bits, int n_bits);

 private:
  bool strip_now() const { return strip_first_ && m_.history_size() == 0; }
  // Sets the bits of the tokens in trie nodes [begin, end) matched from depth_states_ at
  // depth[begin] - 1.
  void walk(uint32_t begin, uint32_t end, std::vector<uint64_t>& bits, bool strip);
  void walk_uncertain(uint32_t root, uint32_t& last_parent, std::vector<uint64_t>& bits);
  void start(std::vector<uint64_t>& bits, int n_bits) const;
  void clear_beyond(std::vector<uint64_t>& bits, int n_bits) const;

  std::shared_ptr<const CompiledGrammar> g_;
  Matcher m_;
  bool strip_first_;
  std::vector<Matcher::State> depth_states_;  // the walk's state after each depth of the prefix
  std::vector<uint32_t> top_;                 // scratch: a stack's top positions
  MaskCache::Key key_;                        // scratch: the state's key in the mask cache
  std::vector<uint8_t> path_;                 // scratch: a trie node's prefix
};

inline bool bit_set(const std::vector<uint64_t>& bits, int32_t id) {
  return (bits[id >> 6] >> (id & 63)) & 1;
}

}  // namespace ferrum::grammar
