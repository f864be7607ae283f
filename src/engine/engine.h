// The engine: a request queue and one engine thread that owns the KV cache and runs the loop
// of continuous batching. Every step runs ONE forward pass over what the scheduling policy
// (engine/schedule_policy.h) planned: the decode tokens of the running sequences plus prefill
// chunks of newer ones; output processing (engine/request_output.h) turns each sequence's
// logits into its events. Over pipeline stages several passes are in flight, each over other
// sequences: a step begins one and ends the oldest. Cancelled requests free their KV at the next
// step after their pass.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/fail.h"
#include "engine/histogram.h"
#include "engine/proposer.h"
#include "engine/request.h"
#include "engine/schedule_policy.h"
#include "ferrum/kv_cache.h"
#include "ferrum/model.h"
#include "ferrum/tokenizer.h"

namespace ferrum {

// Thrown by submit() when the waiting queue is full (HTTP 503).
class BusyError : public Error {
 public:
  using Error::Error;
};
// Thrown by submit() when the prompt (or prompt + max_tokens) cannot fit in a sequence's context
// or in the whole KV pool (HTTP 400).
class ContextLengthError : public Error {
 public:
  using Error::Error;
};

// Speculative decoding (engine/proposer.h): off without a proposer.
struct SpecOptions {
  std::shared_ptr<Proposer> proposer;
  int draft_max = 5;     // tokens proposed per sequence and step at most
  bool adaptive = true;  // per sequence: one fewer after a step that accepted none, one more after all
  // No drafts in a step where more sequences than this are running (0: no limit): a large batch
  // is no longer bound by memory, and verifying drafts would cost more than it saves.
  int max_batch = 0;
};

struct EngineOptions {
  KvOptions kv;  // the engine's KV cache (it owns it)
  SpecOptions spec;
  int max_num_seqs = 16;         // sequences decoding at once
  int max_batched_tokens = 512;  // tokens per step (decodes + prefill chunks)
  // A step's fixed cost in tokens' worth of compute: with several prompts pending, steps end at
  // prompt ends chosen to minimise their summed time to first token (schedule_policy.h); 0 fills
  // the budget.
  int step_overhead_tokens = 32;
  int max_waiting = 256;  // queued requests beyond which submit() throws BusyError
  // Forward passes in flight (0: as many as the model keeps busy, Model::max_passes_in_flight: one
  // per pipeline stage). Each pass takes its share of the decoding sequences, and a sequence is in
  // one pass at a time, so while the last stage runs one pass the first runs the next.
  int passes_in_flight = 0;
};

struct EngineStats {
  uint64_t requests_submitted = 0, requests_finished = 0, requests_cancelled = 0, requests_failed = 0;
  uint64_t requests_rejected = 0;  // busy
  uint64_t prompt_tokens = 0, generation_tokens = 0, cached_prompt_tokens = 0;
  uint64_t preemptions = 0, steps = 0;
  // Speculative decoding: verify steps (a sequence's drafts checked), draft tokens proposed and
  // accepted, and how many were accepted per verify step.
  uint64_t spec_verify_steps = 0, spec_proposed = 0, spec_accepted = 0;
  Histogram spec_accepted_per_step;
  int running = 0, waiting = 0;
  Histogram ttft, itl, e2e;
};

class Engine {
 public:
  Engine(Model& model, const Tokenizer& tok, const EngineOptions& opt);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a request; the returned handle delivers its output. Throws ferrum::Error for an
  // invalid request, ContextLengthError, or BusyError when the queue is full / shutting down.
  std::shared_ptr<RequestHandle> submit(RequestParams p);

  // Stops accepting requests; drain=true lets queued and running requests finish first,
  // otherwise they are cancelled. Returns when the engine thread has exited.
  void shutdown(bool drain);

  EngineStats stats() const;
  // KV usage (prefix cache included), read under the lock the engine thread holds while it steps.
  KvUsage kv_usage() const;
  int64_t kv_capacity() const { return kv_capacity_; }  // tokens per sequence

  // Runs fn(model) under the lock the engine thread holds while it steps (a Model runs one
  // forward at a time): work outside generation, with a KV cache of its own, between two steps.
  template <typename F>
  decltype(auto) with_model(F&& fn) {
    std::lock_guard lk(model_mu_);
    return fn(model_);
  }
  const Model& model() const { return model_; }
  const Tokenizer& tokenizer() const { return tok_; }
  const EngineOptions& options() const { return opt_; }

 private:
  struct Seq;
  // A forward pass begun and not yet ended: what it runs, and where its logits go.
  struct Pass {
    uint64_t id = 0;
    std::vector<SeqInput> items;
    std::vector<ScheduledSeq*> owners;
    std::vector<float> logits;
  };
  void loop();
  void intake();
  void step();
  bool begin_pass();
  void end_pass();
  void abandon_passes();
  int decode_share() const;
  void drop_cancelled();
  void finish(Seq& s, RequestEvent ev);
  void on_first_admission(const std::vector<ScheduledSeq*>& seqs);
  void propose_drafts();
  RequestEvent verify(Seq& s, const float* rows, size_t n_rows);

  Model& model_;
  const Tokenizer& tok_;
  EngineOptions opt_;
  std::unique_ptr<KvCache> kv_;
  int n_vocab_;
  int64_t kv_capacity_ = 0;
  int64_t pool_tokens_ = 0;  // KV tokens over all sequences (fixed at construction)

  mutable std::mutex mu_;  // incoming_, stop flags
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Seq>> incoming_;
  bool stopping_ = false, drain_ = true;
  uint64_t next_id_ = 1;
  int active_ = 0;  // submitted and not finished (running + waiting), under mu_

  mutable std::mutex model_mu_;  // held by the engine thread while it touches the model
  mutable std::mutex stats_mu_;
  EngineStats stats_;

  // Engine-thread state.
  std::vector<std::unique_ptr<Seq>> seqs_;  // every admitted or waiting request
  std::unique_ptr<SchedulePolicy> policy_;
  int depth_ = 1;            // passes in flight at most
  std::deque<Pass> passes_;  // in flight, oldest first
  std::vector<Pass> spare_;  // ended: their buffers kept for the next ones
  std::vector<DraftRequest*> draft_requests_;
  std::thread thread_;
};

}  // namespace ferrum
