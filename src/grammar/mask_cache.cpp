#include "grammar/mask_cache.h"

#include <algorithm>

#include "grammar/matcher.h"

namespace ferrum::grammar {

std::shared_ptr<const StackMask> MaskCache::get(const Key& key) {
  {
    std::lock_guard lk(mu_);
    if (auto it = entries_.find(key); it != entries_.end()) return it->second;
    if (entries_.size() >= kMaxEntries) return nullptr;
  }
  auto m = compute(key);  // outside the lock: other sequences keep going (a race computes twice)
  std::lock_guard lk(mu_);
  return entries_.emplace(key, std::move(m)).first->second;
}

size_t MaskCache::size() const {
  std::lock_guard lk(mu_);
  return entries_.size();
}

std::shared_ptr<const StackMask> MaskCache::compute(const Key& key) const {
  auto out = std::make_shared<StackMask>();
  const TokenVocab& v = *v_;
  out->accepted.assign((static_cast<size_t>(v.size()) + 63) / 64, 0);
  Matcher m(g_);
  std::vector<Matcher::State> states(v.max_depth + 1);
  // escaped[d]: the detached stack was exhausted somewhere along the first d bytes.
  std::vector<char> escaped(v.max_depth + 1, 0);
  for (const auto& top : key) states[0].push_back(m.detached(top));
  std::sort(states[0].begin(), states[0].end());
  states[0].erase(std::unique(states[0].begin(), states[0].end()), states[0].end());
  const auto n = static_cast<uint32_t>(v.byte.size());
  for (uint32_t i = 1; i < n;) {
    const uint32_t d = v.depth[i];
    Matcher::State& st = states[d];
    m.step(states[d - 1], v.byte[i], st);
    const bool escaped_before = escaped[d - 1] || Matcher::has_escape(states[d - 1]);
    if (st.empty()) {
      if (escaped_before) out->uncertain.push_back(i);
      i = v.subtree_end[i];
      continue;
    }
    escaped[d] = escaped_before;
    for (uint32_t k = v.tok_begin[i]; k < v.tok_begin[i + 1]; ++k) {
      const int32_t id = v.sorted_ids[k];
      out->accepted[id >> 6] |= uint64_t{1} << (id & 63);
    }
    ++i;
  }
  return out;
}

}  // namespace ferrum::grammar
