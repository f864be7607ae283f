// Matching bytes against a Grammar with a pushdown automaton: the state is a set of stacks, each
// stack the positions still to be matched (top first), as llama.cpp's grammar stacks. Stacks are
// hash-consed nodes (position, parent) in an arena, so a state is a small sorted vector of node
// ids and equal stacks are one id; the stacks reached after matching a byte at a node are computed
// once per node and cached. A reference in the last place of an alternative does not push (tail
// call), so right-recursive repetition keeps the stacks flat.
//
// One Matcher per sequence (it is not thread-safe; the Grammar it reads is shared and immutable).
// accept() records each accepted chunk (one token's bytes), so rollback(n) undoes the last n.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"

namespace ferrum::grammar {

class Matcher {
 public:
  using State = std::vector<uint32_t>;  // sorted node ids; kEnd: the grammar may end here
  static constexpr uint32_t kEnd = 0;
  // The bottom of a detached stack (detached()): reaching it means "the rest depends on the
  // stack below, which is unknown". Never in a real matcher's state.
  static constexpr uint32_t kEscape = 1;

  explicit Matcher(std::shared_ptr<const Grammar> g);

  // Matches all of `bytes` from the current state; on success records the new state (one history
  // entry) and returns true, otherwise leaves the state unchanged and returns false.
  bool accept(std::string_view bytes);
  void rollback(size_t n);  // undoes the last n accept()s (at most history_size())
  size_t history_size() const { return history_.size() - 1; }

  const State& state() const { return history_.back(); }
  bool can_end() const { return can_end(state()); }
  static bool can_end(const State& s) { return !s.empty() && s[0] == kEnd; }
  // Nothing but the end may follow.
  bool done() const { return state().size() == 1 && state()[0] == kEnd; }

  // The state after matching byte `b` from `in` (empty: rejected). Grows the node caches.
  void step(const State& in, uint8_t b, State& out);
  static bool has_escape(const State& s) {
    return (!s.empty() && s[0] == kEscape) || (s.size() > 1 && s[1] == kEscape);
  }

  // The positions of the top `k` entries of stack `node` (top first), and a stack of these
  // positions over kEscape: what the top of a stack accepts, independent of what lies below.
  void top_positions(uint32_t node, size_t k, std::vector<uint32_t>& out) const;
  uint32_t detached(const std::vector<uint32_t>& positions);
  const Grammar& grammar() const { return *g_; }

 private:
  struct Node {
    uint32_t pos;     // element index in Grammar::elems
    uint32_t parent;  // node to return to when this position's alternative ends
  };
  uint32_t intern(uint32_t pos, uint32_t parent);
  static constexpr int kMaxExpandDepth = 4096;
  void expand(uint32_t pos, uint32_t parent, State& out, int depth = 0);
  void compute_advance(uint32_t node);

  std::shared_ptr<const Grammar> g_;
  std::vector<Node> nodes_;
  std::unordered_map<uint64_t, uint32_t> ids_;
  // Per node: the stacks after matching its top byte set, as [begin, begin+len) of adv_pool_.
  std::vector<uint32_t> adv_begin_, adv_len_;
  std::vector<uint32_t> adv_pool_;
  std::vector<State> history_;
  State scratch_;
};

}  // namespace ferrum::grammar
