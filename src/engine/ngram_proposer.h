// Prompt lookup (n-gram) proposals: no second model. The last n tokens of a sequence are looked
// up earlier in its own context (prompt and output); where they occurred before, the tokens that
// followed them then are proposed. It pays off when the output quotes or repeats its input
// (code edits, summaries, extraction), as vLLM's `ngram` and llama.cpp's lookup decoding do.
#pragma once

#include "engine/proposer.h"

namespace ferrum {

struct NgramOptions {
  int min_n = 2;  // shortest suffix that may match
  int max_n = 4;  // longest suffix tried first
};

class NgramProposer : public Proposer {
 public:
  explicit NgramProposer(NgramOptions o = {});
  void propose(std::span<DraftRequest* const> requests) override;
  std::string name() const override { return "ngram"; }

 private:
  NgramOptions o_;
};

// The continuation of the longest suffix of `tokens` (max_n down to min_n tokens) that occurred
// earlier in `tokens`, its most recent occurrence: `max_draft` tokens into `out` (empty when
// nothing matches). Where the continuation reaches the end of `tokens` it goes on with the
// proposed tokens themselves, as the repetition would.
void ngram_lookup(std::span<const int32_t> tokens, int min_n, int max_n, int max_draft,
                  std::vector<int32_t>& out);

}  // namespace ferrum
