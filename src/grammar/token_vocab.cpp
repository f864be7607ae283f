#include "grammar/token_vocab.h"

#include <algorithm>
#include <numeric>

#include "ferrum/tokenizer.h"
#include "tokenizer/tokenizer_impl.h"

namespace ferrum::grammar {

TokenVocab::TokenVocab(std::vector<std::string> b, std::vector<int32_t> e, bool strip)
    : bytes(std::move(b)), eog(std::move(e)), strip_first_space(strip), eog_flag_(bytes.size(), 0) {
  for (int32_t id : eog)
    if (id >= 0 && id < size()) eog_flag_[id] = 1;
  std::vector<int32_t> ids;
  for (int32_t id = 0; id < size(); ++id)
    if (!bytes[id].empty() && !eog_flag_[id]) ids.push_back(id);
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t c) { return bytes[a] < bytes[c]; });

  // Preorder nodes: a token shares its first lcp bytes' nodes with the token before it.
  byte.push_back(0);
  depth.push_back(0);
  parent.push_back(0);
  tok_begin.push_back(0);
  std::vector<uint32_t> path{0};  // node at each depth along the current token
  const std::string* prev = nullptr;
  for (int32_t id : ids) {
    const std::string& s = bytes[id];
    size_t lcp = 0;
    if (prev)
      while (lcp < s.size() && lcp < prev->size() && s[lcp] == (*prev)[lcp]) ++lcp;
    path.resize(lcp + 1);
    for (size_t d = lcp; d < s.size(); ++d) {
      parent.push_back(path.back());
      path.push_back(static_cast<uint32_t>(byte.size()));
      byte.push_back(static_cast<uint8_t>(s[d]));
      depth.push_back(static_cast<uint32_t>(d + 1));
      tok_begin.push_back(static_cast<uint32_t>(sorted_ids.size()));
    }
    sorted_ids.push_back(id);  // ends at the last node (tokens of equal bytes share it)
    max_depth = std::max(max_depth, static_cast<uint32_t>(s.size()));
    prev = &s;
  }
  tok_begin.push_back(static_cast<uint32_t>(sorted_ids.size()));
  // subtree_end: the next node at the same or a lower depth.
  const auto n = static_cast<uint32_t>(byte.size());
  subtree_end.assign(n, n);
  std::vector<uint32_t> open;
  for (uint32_t i = 0; i < n; ++i) {
    while (!open.empty() && depth[open.back()] >= depth[i]) {
      subtree_end[open.back()] = i;
      open.pop_back();
    }
    open.push_back(i);
  }
}

bool TokenVocab::is_eog(int32_t id) const {
  return id >= 0 && id < size() && eog_flag_[id];
}

std::shared_ptr<const TokenVocab> TokenVocab::from_tokenizer(const Tokenizer& tok) {
  std::vector<std::string> bytes(tok.n_vocab());
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    const TokenType t = tok.token_type(id);
    if (t == TokenType::Control || t == TokenType::Unused || t == TokenType::Unknown) continue;
    bytes[id] = tok.token_to_piece(id, /*render_special=*/false);
  }
  return std::make_shared<TokenVocab>(std::move(bytes), tok.eog_ids(), tok.impl().strip_first_space);
}

}  // namespace ferrum::grammar
