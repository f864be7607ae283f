#include "grammar/token_mask.h"

#include <algorithm>

namespace ferrum::grammar {

namespace {
inline void set_bit(std::vector<uint64_t>& bits, int32_t id) {
  bits[id >> 6] |= uint64_t{1} << (id & 63);
}
}  // namespace

TokenMask::TokenMask(std::shared_ptr<const CompiledGrammar> g, bool at_text_start)
    : g_(std::move(g)), m_(g_->grammar), strip_first_(at_text_start && g_->vocab->strip_first_space) {
  depth_states_.resize(g_->vocab->max_depth + 1);
}

std::shared_ptr<const CompiledGrammar> bind(std::shared_ptr<const Grammar> g,
                                            std::shared_ptr<const TokenVocab> v) {
  auto c = std::make_shared<CompiledGrammar>();
  c->grammar = std::move(g);
  c->vocab = std::move(v);
  c->masks = std::make_shared<MaskCache>(c->grammar, c->vocab);
  return c;
}

void TokenMask::start(std::vector<uint64_t>& bits, int n_bits) const {
  bits.assign((static_cast<size_t>(n_bits) + 63) / 64, 0);
  if (m_.can_end())
    for (int32_t id : g_->vocab->eog)
      if (id >= 0 && id < n_bits) set_bit(bits, id);
}

// Ids at or beyond n_bits or the vocabulary are never allowed.
void TokenMask::clear_beyond(std::vector<uint64_t>& bits, int n_bits) const {
  const int32_t n_ids = std::min(n_bits, g_->vocab->size());
  for (int32_t id = n_ids; id < n_bits && id % 64 != 0; ++id) bits[id >> 6] &= ~(uint64_t{1} << (id & 63));
  for (size_t w = (static_cast<size_t>(n_ids) + 63) / 64; w < bits.size(); ++w) bits[w] = 0;
}

void TokenMask::walk(uint32_t begin, uint32_t end, std::vector<uint64_t>& bits, bool strip) {
  const TokenVocab& v = *g_->vocab;
  for (uint32_t i = begin; i < end;) {
    const uint32_t d = v.depth[i];
    Matcher::State& st = depth_states_[d];
    if (strip && d == 1 && v.byte[i] == ' ')
      st = depth_states_[0];  // the dropped leading space matches nothing
    else
      m_.step(depth_states_[d - 1], v.byte[i], st);
    if (st.empty()) {
      i = v.subtree_end[i];
      continue;
    }
    for (uint32_t k = v.tok_begin[i]; k < v.tok_begin[i + 1]; ++k) {
      const int32_t id = v.sorted_ids[k];
      bits[id >> 6] |= uint64_t{1} << (id & 63);
    }
    ++i;
  }
}

void TokenMask::compute_walk(std::vector<uint64_t>& bits, int n_bits) {
  const TokenVocab& v = *g_->vocab;
  start(bits, n_bits);
  bits.resize(std::max(bits.size(), (static_cast<size_t>(v.size()) + 63) / 64));
  depth_states_[0] = m_.state();
  walk(1, static_cast<uint32_t>(v.byte.size()), bits, strip_now());
  clear_beyond(bits, n_bits);
  bits.resize((static_cast<size_t>(n_bits) + 63) / 64);
}

// The tokens of trie subtree `root` that the current state accepts (its prefix matched first).
void TokenMask::walk_uncertain(uint32_t root, uint32_t& last_parent, std::vector<uint64_t>& bits) {
  const TokenVocab& v = *g_->vocab;
  const uint32_t p = v.parent[root];
  if (p != last_parent) {
    path_.clear();
    for (uint32_t n = p; n != 0; n = v.parent[n]) path_.push_back(v.byte[n]);
    depth_states_[0] = m_.state();
    for (size_t k = path_.size(); k-- > 0;) {
      const size_t d = path_.size() - k;
      m_.step(depth_states_[d - 1], path_[k], depth_states_[d]);
    }
    last_parent = p;
  }
  if (!depth_states_[v.depth[p]].empty()) walk(root, v.subtree_end[root], bits, false);
}

void TokenMask::fill(std::vector<uint64_t>& bits, int n_bits) {
  if (!g_->masks || strip_now()) return compute_walk(bits, n_bits);
  key_.clear();
  for (uint32_t s : m_.state()) {
    if (s == Matcher::kEnd) continue;
    m_.top_positions(s, MaskCache::kDepth, top_);
    key_.push_back(top_);
  }
  std::sort(key_.begin(), key_.end());
  key_.erase(std::unique(key_.begin(), key_.end()), key_.end());
  const auto sm = g_->masks->get(key_);
  if (!sm) return compute_walk(bits, n_bits);  // the cache is full
  start(bits, n_bits);
  bits.resize(std::max(bits.size(), sm->accepted.size()));
  for (size_t w = 0; w < sm->accepted.size(); ++w) bits[w] |= sm->accepted[w];
  uint32_t last_parent = UINT32_MAX;
  for (uint32_t root : sm->uncertain) walk_uncertain(root, last_parent, bits);
  clear_beyond(bits, n_bits);
  bits.resize((static_cast<size_t>(n_bits) + 63) / 64);
}

bool TokenMask::accept_token(int32_t id) {
  const TokenVocab& v = *g_->vocab;
  if (id < 0 || id >= v.size()) return false;
  if (v.is_eog(id)) return m_.can_end();
  std::string_view b = v.bytes[id];
  if (b.empty()) return false;
  if (strip_now() && b[0] == ' ') b.remove_prefix(1);
  return m_.accept(b);
}

void TokenMask::rollback(size_t n_tokens) {
  m_.rollback(n_tokens);
}

}  // namespace ferrum::grammar
