// Token masks of stack tops, shared by every sequence of a grammar (XGrammar's adaptive token
// mask cache, keyed by the top of a stack instead of one grammar position).
//
// For the top kDepth positions of a stack, detached from what lies below (Matcher::detached),
// one walk of the vocabulary trie sorts every token into: accepted whatever lies below (it is
// matched before the detached stack is exhausted), rejected whatever lies below, or uncertain
// (only reachable by returning below the detached part). Uncertain tokens are kept as trie
// subtrees, which the mask re-walks from the real stack. Thread-safe; an entry is computed once
// (one full trie walk) on first use and kept for the grammar's life, up to kMaxEntries.
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
  // The entry for these top positions (top first); null when the cache is full.
  std::shared_ptr<const StackMask> get(const std::vector<uint32_t>& top);
  size_t size() const;

 private:
  std::shared_ptr<const StackMask> compute(const std::vector<uint32_t>& top) const;

  std::shared_ptr<const Grammar> g_;
  std::shared_ptr<const TokenVocab> v_;
  mutable std::mutex mu_;
  std::map<std::vector<uint32_t>, std::shared_ptr<const StackMask>> entries_;
};

}  // namespace ferrum::grammar
