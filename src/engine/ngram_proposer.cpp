#include "engine/ngram_proposer.h"

#include <algorithm>

#include "core/fail.h"

namespace ferrum {

NgramProposer::NgramProposer(NgramOptions o) : o_(o) {
  if (o_.min_n < 1 || o_.max_n < o_.min_n)
    fail("n-gram proposer: need 1 <= min_n <= max_n (got min_n {}, max_n {})", o_.min_n, o_.max_n);
}

void NgramProposer::propose(std::span<DraftRequest* const> requests) {
  for (DraftRequest* r : requests) {
    r->q.clear();
    ngram_lookup(r->tokens, o_.min_n, o_.max_n, r->max_draft, r->draft);
  }
}

void ngram_lookup(std::span<const int32_t> tokens, int min_n, int max_n, int max_draft,
                  std::vector<int32_t>& out) {
  out.clear();
  const int64_t t = static_cast<int64_t>(tokens.size());
  for (int n = std::min<int64_t>(max_n, t - 1); n >= min_n; --n) {
    const int32_t* suffix = tokens.data() + t - n;
    // Most recent earlier occurrence first: start positions j < t - n, with j + n < t so at least
    // one token follows the match.
    for (int64_t j = t - n - 1; j >= 0; --j) {
      if (!std::equal(suffix, suffix + n, tokens.data() + j)) continue;
      // What followed the match, continued through the proposal itself where it runs into the
      // end of the context (a repeating pattern keeps repeating).
      const int64_t from = j + n;
      for (int64_t i = 0; i < max_draft; ++i)
        out.push_back(from + i < t ? tokens[from + i] : out[from + i - t]);
      return;
    }
  }
}

}  // namespace ferrum
