// A generation request as the scheduler sees it, and the handle through which its caller (an
// HTTP handler thread, a test) receives the output as it is produced.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferrum/lora.h"
#include "ferrum/sampler.h"

namespace ferrum {

namespace grammar {
struct CompiledGrammar;
}

// A per-request rewrite of the output text, applied after the stop strings: push() gets each
// released piece and returns what can be sent on, finish() the rest once the output ends (a chat
// format whose markers are special tokens turned into the form the server parses: chat/harmony.h).
struct OutputFilter {
  std::function<std::string(std::string_view)> push;
  std::function<std::string()> finish;
};

struct RequestParams {
  std::vector<int32_t> prompt;
  int max_tokens = -1;  // -1: until the context is full
  SamplingParams sampling;
  std::vector<std::string> stop;  // stop strings (not emitted)
  bool ignore_eos = false;
  int logprobs = -1;          // -1: off; otherwise also this many top alternatives (0..20)
  bool at_text_start = true;  // false when the output continues the prompt's text (completions)
  bool speculative = true;    // false: no speculative decoding for this request (when the engine has it)
  // Constrained decoding: the output must match this grammar (grammar/grammar_cache.h); null: free.
  std::shared_ptr<const grammar::CompiledGrammar> grammar;
  // A thinking model's answer that begins inside its reasoning (the prompt opened it), which ends
  // with the text `reasoning_end` (e.g. "</think>"; empty: no reasoning). The grammar constrains
  // only what follows it; reasoning_budget >= 0 ends the reasoning after that many tokens by
  // writing "\n" + reasoning_end in the model's place.
  std::string reasoning_end;
  int reasoning_budget = -1;
  std::string reasoning_close;  // what the budget writes; empty: "\n" + reasoning_end
  // The output text with special tokens written out (a format whose markers are special tokens),
  // and a filter each request's text goes through (made once per request; empty: none).
  bool keep_special = false;
  std::function<OutputFilter()> output_filter;
  // A LoRA adapter loaded for the engine's model (ferrum/lora.h); null: the base model.
  std::shared_ptr<const LoraAdapter> lora;
};

struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0;
  std::vector<std::pair<int32_t, float>> top;  // most likely tokens, best first
};

// One step of output. The last event of a request has `finished` set.
struct RequestEvent {
  std::string text;                    // UTF-8-safe text delta (may be empty)
  std::vector<int32_t> tokens;         // tokens sampled in this step
  std::vector<TokenLogprob> logprobs;  // when requested, one per token
  bool finished = false;
  std::string finish_reason;  // "stop", "length", "cancelled" or "error"
  std::string error;          // message when finish_reason == "error"
  std::string stop_string;    // the stop string that ended the answer (finish_reason "stop"), if one did
  int prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
};

// A request's counts and timing so far, for logs and metrics.
struct RequestUsage {
  std::chrono::steady_clock::time_point submitted, first_token;  // first_token: set when has_first
  bool has_first = false;
  bool finished = false;
  int prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;  // those of the final event
};

// Shared between the engine thread (producer) and the caller (consumer).
class RequestHandle {
 public:
  explicit RequestHandle(uint64_t id) : id_(id) { usage_.submitted = std::chrono::steady_clock::now(); }
  uint64_t id() const { return id_; }
  RequestUsage usage() const {
    std::lock_guard lk(mu_);
    return usage_;
  }

  // Waits up to `timeout` for the next event; nullopt on timeout.
  std::optional<RequestEvent> next(std::chrono::milliseconds timeout) {
    std::unique_lock lk(mu_);
    if (!cv_.wait_for(lk, timeout, [&] { return !events_.empty(); })) return std::nullopt;
    RequestEvent e = std::move(events_.front());
    events_.pop_front();
    return e;
  }
  // Asks the engine to stop this request and free its KV cache at the next step.
  void cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }

  void push(RequestEvent e) {
    {
      std::lock_guard lk(mu_);
      if (!usage_.has_first && !e.tokens.empty()) {
        usage_.has_first = true;
        usage_.first_token = std::chrono::steady_clock::now();
      }
      if (e.finished) {
        usage_.finished = true;
        usage_.prompt_tokens = e.prompt_tokens;
        usage_.completion_tokens = e.completion_tokens;
        usage_.cached_tokens = e.cached_tokens;
      }
      events_.push_back(std::move(e));
    }
    cv_.notify_all();
  }

 private:
  uint64_t id_;
  mutable std::mutex mu_;
  RequestUsage usage_;
  std::condition_variable cv_;
  std::deque<RequestEvent> events_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace ferrum
