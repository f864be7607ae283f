// Speculative decoding's proposers: something cheap guesses the next few tokens of a sequence,
// and the target model checks them all in one forward pass (engine/engine.cpp, Sampler::verify),
// so several tokens come out of one read of the target's weights. The output does not depend on
// the proposer: a wrong guess costs time, never text (greedy output is token for token the
// same, sampled output has the same distribution).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ferrum/kv_cache.h"
#include "ferrum/sampler.h"

namespace ferrum {

// What a proposer is asked for one sequence in one engine step, and its answer.
struct DraftRequest {
  uint64_t request = 0;             // the request (a slot is reused by later requests)
  int slot = 0;                     // the sequence's slot in the engine, 0 <= slot < max_num_seqs
  std::span<const int32_t> tokens;  // prompt + output so far
  // Propose at most this many tokens. 0 asks a proposer with state (a draft model) to get ahead
  // on a sequence still in prefill: to put a chunk of its prompt into its cache now, alongside
  // the model's own prefill, rather than all of it before the first draft.
  int max_draft = 0;
  const SamplingParams* sampling = nullptr;  // the request's sampling settings

  // The answer: up to max_draft tokens that would follow `tokens`, and for each the distribution
  // it was drawn from (Sampler::verify's q), or no distributions at all for a deterministic
  // proposal (a lookup, a greedy draft).
  std::vector<int32_t> draft;
  std::vector<std::vector<TokenProb>> q;
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  // Called once by the engine before the first propose(): the engine's sequences use slots
  // [0, n_slots), each up to kv.capacity tokens (kv: the engine's resolved cache options).
  virtual void start(const KvOptions& kv, int n_slots) {
    (void)kv;
    (void)n_slots;
  }
  // Fills each request's draft (possibly empty: nothing to propose). Called once per engine
  // step with every sequence that decodes in it, so a draft model runs them as one batch.
  virtual void propose(std::span<DraftRequest* const> requests) = 0;
  virtual std::string name() const = 0;  // for logs and bench output
  // Whether a proposal costs a forward pass (a draft model) rather than a lookup: a costly
  // proposer that keeps failing is paused for a while (engine/draft_length.h).
  virtual bool costly() const { return false; }
};

}  // namespace ferrum
