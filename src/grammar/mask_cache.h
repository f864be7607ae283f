// Token masks of matcher states by the tops of their stacks, shared by every sequence of a
// grammar (XGrammar's adaptive token mask cache, keyed by the tops of a state's stacks instead of
// one grammar position).
//
// A key is the top kDepth positions of each stack of a state (Matcher::top_positions), sorted.
// From those stacks detached from what lies below them (Matcher::detached), one walk of the
// vocabulary trie sorts every token into: accepted whatever lies below (matched before a detached
// stack is exhausted), rejected whatever lies below, or uncertain (only reachable by returning
// below the detached part). Uncertain tokens are kept as trie subtrees, which the mask re-walks
// from the real state. Thread-safe; an entry is computed once (one full trie walk) on first use
// and kept for the grammar's life, up to kMaxEntries.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/token_vocab.h"

namespace ferrum::grammar {

struct StackMask {
  std::vector<uint64_t> accepted;   // a bit per token id of the vocabulary
  std::vector<uint32_t> uncertain;  // trie nodes (preorder) whose subtrees need the real stack
};

class MaskCache {
 public:
  static constexpr size_t kDepth = 8;
  static constexpr size_t kMaxEntries = 4096;

  MaskCache(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenVocab> v)
      : g_(std::move(g)), v_(std::move(v)) {}
  // A key: the stacks' top positions (each top first), sorted, without duplicates.
  using Key = std::vector<std::vector<uint32_t>>;
  // The entry of a key; null when the cache is full.
  std::shared_ptr<const StackMask> get(const Key& key);
  size_t size() const;

 private:
  std::shared_ptr<const StackMask> compute(const Key& key) const;

  std::shared_ptr<const Grammar> g_;
  std::shared_ptr<const TokenVocab> v_;
  mutable std::mutex mu_;
  std::map<Key, std::shared_ptr<const StackMask>> entries_;
};

}  // namespace ferrum::grammar
