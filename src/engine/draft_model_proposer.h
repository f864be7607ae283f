// A draft model proposes: a smaller (or more quantized) model with the target's vocabulary runs
// a few decode steps ahead of the target. It keeps a KV cache of its own with one sequence per
// engine slot, brought up to date with each sequence's tokens before drafting (only what changed
// since the last step is recomputed: the tokens the target accepted or corrected), and drafts
// all sequences of a step together, one batched forward per drafted position.
#pragma once

#include <memory>

#include "engine/proposer.h"
#include "ferrum/kv_cache.h"
#include "ferrum/model.h"
#include "ferrum/tokenizer.h"

namespace ferrum {

struct DraftModelOptions {
  // Stop drafting a sequence when the draft's own probability (softmax at temperature 1) of its
  // next token falls below this: a guess the draft itself doubts is likely rejected.
  float p_min = 0.0f;
  // Tokens of one sequence per draft forward while catching up, and prompt tokens of sequences
  // still in prefill per engine step.
  int64_t catch_up_chunk = 512;
};

class DraftModelProposer : public Proposer {
 public:
  // `draft` must outlive the proposer. Drafts only tokens below `n_vocab` (the target's
  // vocabulary). Throws for a draft without its LM head.
  DraftModelProposer(Model& draft, int n_vocab, DraftModelOptions o = {});
  ~DraftModelProposer() override;
  // Creates the draft's cache like the engine's (same layout, type, capacity and pool; no
  // prefix cache), one sequence per slot.
  void start(const KvOptions& kv, int n_slots) override;
  void propose(std::span<DraftRequest* const> requests) override;
  std::string name() const override { return "draft-model"; }
  bool costly() const override { return true; }

 private:
  struct Slot;
  void sync(DraftRequest& r, Slot& s);
  bool run(std::span<DraftRequest* const> requests);
  void free_unused(std::span<DraftRequest* const> requests);

  Model& model_;
  DraftModelOptions o_;
  int n_vocab_;
  std::unique_ptr<KvCache> kv_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<SeqInput> items_;
  std::vector<size_t> owners_;  // items_[i] drafts for requests[owners_[i]]
  std::vector<char> done_;
  std::vector<float> logits_;
};

// Throws a ferrum::Error naming the difference when a draft model's tokenizer is not the
// target's: another kind, BOS/EOS, size (beyond a padding of 128 entries) or any token's text.
void check_draft_vocab(const Tokenizer& target, const Tokenizer& draft);

}  // namespace ferrum
