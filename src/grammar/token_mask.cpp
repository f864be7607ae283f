#include "grammar/token_mask.h"

#include <algorithm>

namespace ferrum::grammar {

namespace {
constexpr size_t kMemoEntries = 32;
inline void set_bit(std::vector<uint64_t>& bits, int32_t id) {
  bits[id >> 6] |= uint64_t{1} << (id & 63);
}
}  // namespace

TokenMask::TokenMask(std::shared_ptr<const CompiledGrammar> g, bool at_text_start)
    : g_(std::move(g)), m_(g_->grammar), strip_first_(at_text_start && g_->vocab->strip_first_space) {
  depth_states_.resize(g_->vocab->max_depth + 1);
}

void TokenMask::fill(std::vector<uint64_t>& bits, int n_bits) {
  std::string key(reinterpret_cast<const char*>(m_.state().data()), m_.state().size() * sizeof(uint32_t));
  key.push_back(strip_now() ? 1 : 0);
  key.append(reinterpret_cast<const char*>(&n_bits), sizeof n_bits);
  if (auto it = memo_.find(key); it != memo_.end()) {
    bits = it->second;
    return;
  }
  compute(bits, n_bits);
  if (memo_.size() >= kMemoEntries) {
    memo_.erase(memo_order_.front());
    memo_order_.pop_front();
  }
  memo_.emplace(key, bits);
  memo_order_.push_back(std::move(key));
}

void TokenMask::compute(std::vector<uint64_t>& bits, int n_bits) {
  bits.assign((static_cast<size_t>(n_bits) + 63) / 64, 0);
  const TokenVocab& v = *g_->vocab;
  const int32_t n_ids = std::min(n_bits, v.size());
  if (m_.can_end())
    for (int32_t id : v.eog)
      if (id >= 0 && id < n_ids) set_bit(bits, id);
  const bool strip = strip_now();
  depth_states_[0] = m_.state();
  const auto n = static_cast<uint32_t>(v.byte.size());
  for (uint32_t i = 1; i < n;) {
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
    for (uint32_t k = v.tok_begin[i]; k < v.tok_begin[i + 1]; ++k)
      if (v.sorted_ids[k] < n_ids) set_bit(bits, v.sorted_ids[k]);
    ++i;
  }
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
