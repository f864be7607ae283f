// Output processing of one request: logits -> sampler -> logprobs -> detokenizer -> stop strings
// -> finish rules (end-of-generation token, max_tokens, context full). The one path every
// generated token takes, in `ferrum serve` and `ferrum run` alike (both go through the Engine).
// With a grammar, the tokens it does not allow get -inf logits before the sampler's chain (so
// every sampling setting applies to the allowed ones), end-of-generation is allowed only where
// the grammar may end, and a completed grammar finishes the request ("stop"). Log-probabilities
// stay those of the raw logits. A request whose answer begins with reasoning
// (RequestParams::reasoning_end) gets its grammar only once the reasoning has ended, and its
// reasoning budget enforced by writing the end marker's tokens.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/request.h"
#include "engine/stop.h"
#include "ferrum/sampler.h"
#include "ferrum/tokenizer.h"
#include "grammar/token_mask.h"

namespace ferrum {

class RequestOutput {
 public:
  // `p` must outlive this object (the engine keeps both in one sequence record).
  RequestOutput(const Tokenizer& tok, const RequestParams& p, int n_vocab);

  // Samples the next token from `logits`, appends it to `tokens` (prompt + output so far) and
  // returns the step's event; the event is final (finished, finish_reason set) when the request
  // ends with this token. `context` is the most tokens the sequence may hold.
  RequestEvent on_logits(const float* logits, std::vector<int32_t>& tokens, int64_t context);
  // Speculative step: `rows` holds draft.size() + 1 logit rows, the target's after the pending
  // token and after each draft token. The drafts are verified in order (Sampler::verify with the
  // proposer's distributions `q`, empty for a deterministic proposal); each accepted one is
  // emitted, then the correction at the first rejection, or after all were accepted the token
  // drawn from the last row. Stops early when the request finishes. `accepted` is set to the
  // number of draft tokens accepted.
  RequestEvent on_verify(const float* rows, std::span<const int32_t> draft,
                         std::span<const std::vector<TokenProb>> q, std::vector<int32_t>& tokens,
                         int64_t context, int& accepted);
  // The final event of a request cut short because the cache ran out: the text still held
  // back, finish_reason "length".
  RequestEvent cut_short();
  int n_generated() const { return n_generated_; }

 private:
  bool emit(int32_t id, const float* logits, std::vector<int32_t>& tokens, int64_t context, RequestEvent& ev);
  std::string finish_text(std::string& reason);
  // The logits with the grammar's disallowed tokens at -inf; null when no token is allowed.
  const float* constrained(const float* logits);
  RequestEvent finish_now(RequestEvent ev, std::string reason);
  const float* allowed(const float* logits);
  RequestEvent grammar_end(RequestEvent ev);
  bool grammar_accepts(int32_t id);
  RequestEvent failed(RequestEvent ev, const std::string& message);  // finish_reason "error"
  RequestEvent excluded(RequestEvent ev, int32_t id);                // the mask excluded the choice
  bool next_forced(int32_t& id);  // a token written in the model's place (the reasoning's end)
  void track_reasoning(int32_t id);

  const Tokenizer& tok_;
  const RequestParams& p_;
  int n_vocab_;
  Sampler sampler_;
  StreamDecoder dec_;
  StopMatcher stop_;
  int n_generated_ = 0;
  std::unique_ptr<grammar::TokenMask> mask_;
  std::vector<uint64_t> allowed_;
  std::vector<float> masked_;
  bool reasoning_ = false;      // the answer is still inside its reasoning
  std::string reasoning_tail_;  // its last characters, where the end marker is looked for
  int n_reasoning_ = 0;
  std::deque<int32_t> forced_;
  std::optional<OutputFilter> filter_;  // RequestParams::output_filter's instance
};

// Log-probability of the chosen token and the n best alternatives under the raw logits.
TokenLogprob logprobs_of(const float* logits, int n_vocab, int32_t chosen, int n_top);

}  // namespace ferrum
