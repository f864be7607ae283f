// The scheduling policy of continuous batching, with no threads and no output handling: which
// waiting requests to admit, what goes into the next forward step, and whom to preempt when the
// KV cache runs out. The Engine drives it from its loop; tests drive it directly.
//
// Admission is FIFO while a sequence slot is free and the cache can hold every running
// sequence's next token plus the whole new prompt (with nothing running a request is admitted
// anyway). A step holds one decode token per decoding sequence (decodes are never starved: the
// budget is at least one token per sequence), then prefill in admission order within the token
// budget. With several prompts pending, the step ends at the prompt end that minimises the sum
// of their times to first token, a step costing `step_overhead_tokens` + its tokens
// (prefill_plan.h); a prompt longer than the budget left is chunked. A decoding sequence with
// draft tokens (its `verify` list) runs them all when the budget leaves room for every other
// decode, else decodes one token as usual. When a step does not fit, the newest prefill (or,
// with decodes only, the newest sequence) is preempted: its cache is released and it is
// recomputed from prompt + output when admitted again.
#pragma once

#include <climits>
#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "engine/prefill_plan.h"
#include "ferrum/kv_cache.h"
#include "ferrum/model.h"

namespace ferrum {

// One request as the policy sees it.
struct ScheduledSeq {
  std::vector<int32_t> tokens;  // prompt + generated
  size_t n_prompt = 0;
  int64_t n_computed = 0;  // positions in the KV cache
  int seq_id = -1;         // the cache sequence while running; -1 while waiting
  int64_t cached = 0;      // prompt tokens the prefix cache served at first admission
  bool admitted_once = false;
  // Speculative decoding: the pending token followed by draft tokens, set before plan() for a
  // decoding sequence; such a sequence's step runs all of them and wants every position's logits.
  std::vector<int32_t> verify;
  const LoraAdapter* lora = nullptr;  // the adapter of its forward items (owned by the request)
  // In a pass still in flight (a model split over pipeline stages): not planned again until the
  // engine has its output.
  bool in_flight = false;

  int64_t n_generated() const { return static_cast<int64_t>(tokens.size() - n_prompt); }
  // Past its prompt with one token to compute: the next step is a decode (or a verify).
  bool decoding() const { return n_generated() > 0 && static_cast<int64_t>(tokens.size()) - n_computed == 1; }
};

class SchedulePolicy {
 public:
  // step_overhead_tokens: a step's fixed cost in tokens' worth of compute (0: fill the budget).
  SchedulePolicy(KvCache& kv, int max_num_seqs, int max_batched_tokens, int step_overhead_tokens = 0);

  void enqueue(ScheduledSeq* s);  // at the back of the waiting queue
  // Admits what fits now; returns the sequences admitted for the first time (their prompt and
  // prefix-cache hit are then final).
  std::vector<ScheduledSeq*> admit();
  // The next step's batch (empty when nothing is pending); owners()[i] is items()[i]'s sequence.
  // Sequences in flight are left out; at most max_decodes decoding sequences go in (with passes
  // in flight, the decodes are shared among them).
  void plan(int max_decodes = INT_MAX);
  const std::vector<SeqInput>& items() const { return items_; }
  const std::vector<ScheduledSeq*>& owners() const { return owners_; }
  // After the step ran: every planned item's positions are now in the cache.
  void advance() { advance(items_, owners_); }
  // The same for a pass planned earlier (its items and owners kept while it was in flight).
  static void advance(std::span<const SeqInput> items, std::span<ScheduledSeq* const> owners);
  // After a speculative step: keeps only the first n_computed positions of `s` in the cache (the
  // rejected draft tokens' are dropped).
  void rollback(ScheduledSeq* s, int64_t n_computed);
  // Clears the draft tokens of every running sequence not in flight; false when there were none.
  bool drop_drafts();
  // After the step failed with CapacityError: preempts one sequence and returns nullptr (plan
  // again), or, when a sequence running alone cannot fit, returns it (the caller ends it).
  ScheduledSeq* on_capacity_error();
  // Takes a sequence out (finished or cancelled), wherever it is, freeing its cache.
  void remove(ScheduledSeq* s);

  const std::vector<ScheduledSeq*>& running() const { return running_; }
  const std::deque<ScheduledSeq*>& waiting() const { return waiting_; }
  uint64_t preemptions() const { return preemptions_; }

 private:
  bool fits_with_running(int id, const ScheduledSeq& s) const;
  void plan_decodes(int& budget, int max_decodes);
  void plan_prefills(int budget, int n_decodes);
  void preempt(ScheduledSeq* s);
  void release(ScheduledSeq& s);

  KvCache& kv_;
  int max_num_seqs_, max_batched_tokens_, step_overhead_tokens_;
  std::deque<ScheduledSeq*> waiting_;
  std::vector<ScheduledSeq*> running_;  // admission order
  std::vector<int> free_ids_;
  std::vector<SeqInput> items_;
  std::vector<ScheduledSeq*> owners_;
  mutable std::vector<std::pair<int, int64_t>> need_;
  std::vector<int64_t> pending_;  // prefill tokens left per prefilling sequence (plan's scratch)
  PrefillPlanner planner_;
  uint64_t preemptions_ = 0;
};

}  // namespace ferrum
