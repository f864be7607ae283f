#include "engine/engine.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "engine/draft_length.h"
#include "engine/request_output.h"
#include "runtime/kv_cache.h"

namespace ferrum {

using Clock = std::chrono::steady_clock;

struct Engine::Seq : ScheduledSeq {
  std::shared_ptr<RequestHandle> h;
  RequestParams p;
  std::unique_ptr<RequestOutput> out;
  Clock::time_point t_submit, t_last;
  DraftRequest draft;     // the proposer's answer for this step
  DraftLength draft_len;  // tokens to ask the proposer for
};

namespace {

std::vector<double> ttft_buckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
}
std::vector<double> itl_buckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1};
}

// The engine's cache: unless the pool is sized by the caller, it holds max_num_seqs full-length
// sequences (the library default of 4 would preempt a full batch of long ones), still at most a
// quarter of the free memory.
KvOptions engine_kv_options(const EngineOptions& o) {
  KvOptions kv = o.kv;
  if (kv.pool_tokens == 0 && kv.pool_sequences == 0) kv.pool_sequences = std::max(4, o.max_num_seqs);
  // A verify step rolls back at most its drafts (windowed layers keep that much behind their window).
  if (kv.rollback_tokens < 0 && o.spec.proposer) kv.rollback_tokens = std::max(64, o.spec.draft_max + 1);
  return kv;
}

}  // namespace

Engine::Engine(Model& model, const Tokenizer& tok, const EngineOptions& opt)
    : model_(model),
      tok_(tok),
      opt_(opt),
      kv_(KvCache::for_model(model, engine_kv_options(opt))),
      n_vocab_(model.config().n_vocab) {
  if (model.config().is_encoder())
    fail(
        "'{}' is an encoder (embeddings only) and cannot generate text: use `ferrum embed`, or `ferrum "
        "serve` "
        "for /v1/embeddings",
        arch_name(model.config().arch));
  if (!model.has_logits())
    fail("the engine needs a model with its LM head (not a backbone or an inner stage)");
  kv_capacity_ = kv_->capacity();
  if (opt_.max_num_seqs < 1) fail("max_num_seqs must be >= 1 (got {})", opt_.max_num_seqs);
  if (opt_.max_batched_tokens < opt_.max_num_seqs)
    fail(
        "max_batched_tokens ({}) must be >= max_num_seqs ({}): every running sequence decodes one token per "
        "step",
        opt_.max_batched_tokens, opt_.max_num_seqs);
  if (opt_.step_overhead_tokens < 0)
    fail("step_overhead_tokens must be >= 0 (got {})", opt_.step_overhead_tokens);
  if (opt_.max_waiting < 0) fail("max_waiting must be >= 0 (got {})", opt_.max_waiting);
  const KvUsage kv = kv_->usage();
  pool_tokens_ = kv.total_blocks * kv.block_tokens;
  stats_.ttft = Histogram(ttft_buckets());
  stats_.itl = Histogram(itl_buckets());
  stats_.e2e = Histogram({0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120});
  if (opt_.spec.proposer && (opt_.spec.draft_max < 1 || opt_.spec.draft_max > 64))
    fail("draft_max must be between 1 and 64 (got {})", opt_.spec.draft_max);
  std::vector<double> accepted_buckets;
  for (int i = 0; i <= opt_.spec.draft_max; ++i) accepted_buckets.push_back(i);
  stats_.spec_accepted_per_step = Histogram(accepted_buckets);
  policy_ = std::make_unique<SchedulePolicy>(*kv_, opt_.max_num_seqs, opt_.max_batched_tokens,
                                             opt_.step_overhead_tokens);
  if (opt_.spec.proposer) opt_.spec.proposer->start(kv_->options(), opt_.max_num_seqs);
  if (opt_.passes_in_flight < 0) fail("passes_in_flight must be >= 0 (got {})", opt_.passes_in_flight);
  depth_ = std::min(opt_.max_num_seqs, opt_.passes_in_flight > 0 ? opt_.passes_in_flight
                                                                 : std::max(1, model.max_passes_in_flight()));
  // One row per sequence, or with speculation one per pending and draft token.
  const int rows_per_seq = opt_.spec.proposer ? opt_.spec.draft_max + 1 : 1;
  spare_.resize(depth_);
  for (Pass& p : spare_) p.logits.resize(static_cast<size_t>(opt_.max_num_seqs) * rows_per_seq * n_vocab_);
  thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() {
  shutdown(false);
}

std::shared_ptr<RequestHandle> Engine::submit(RequestParams p) {
  if (p.prompt.empty()) fail("the prompt is empty (and the model adds no BOS token)");
  for (size_t i = 0; i < p.prompt.size(); ++i)
    if (p.prompt[i] < 0 || p.prompt[i] >= n_vocab_)
      fail("prompt token {} at index {} is outside the vocabulary [0, {})", p.prompt[i], i, n_vocab_);
  const int64_t ctx = kv_capacity_;
  if (static_cast<int64_t>(p.prompt.size()) >= ctx)
    throw ContextLengthError(fmt::format(
        "the prompt has {} tokens but the context holds {} (prompt + at least one generated token)",
        p.prompt.size(), ctx));
  if (pool_tokens_ > 0 && static_cast<int64_t>(p.prompt.size()) >= pool_tokens_)
    throw ContextLengthError(
        fmt::format("the prompt has {} tokens but the whole KV cache pool holds {} (prompt + at least one "
                    "generated token)",
                    p.prompt.size(), pool_tokens_));
  if (p.max_tokens < -1) fail("max_tokens must be >= 0 (got {})", p.max_tokens);
  if (p.max_tokens > 0 && static_cast<int64_t>(p.prompt.size()) + p.max_tokens > ctx)
    throw ContextLengthError(fmt::format(
        "this model's context holds {} tokens, but {} were requested ({} in the prompt, {} for the "
        "completion); "
        "lower max_tokens or shorten the prompt",
        ctx, static_cast<int64_t>(p.prompt.size()) + p.max_tokens, p.prompt.size(), p.max_tokens));
  if (p.logprobs > 20) fail("top_logprobs must be between 0 and 20 (got {})", p.logprobs);
  p.sampling.validate();
  auto s = std::make_unique<Seq>();
  s->tokens = p.prompt;
  s->n_prompt = p.prompt.size();
  s->t_submit = Clock::now();
  s->p = std::move(p);
  s->lora = s->p.lora.get();
  s->out = std::make_unique<RequestOutput>(tok_, s->p, n_vocab_);
  if (opt_.spec.proposer)
    s->draft_len = DraftLength(opt_.spec.draft_max, opt_.spec.adaptive, opt_.spec.proposer->costly());
  std::shared_ptr<RequestHandle> h;
  {
    std::lock_guard lk(mu_);
    if (stopping_) throw BusyError("the server is shutting down");
    if (active_ >= opt_.max_waiting + opt_.max_num_seqs) {
      std::lock_guard sl(stats_mu_);
      ++stats_.requests_rejected;
      throw BusyError(fmt::format(
          "the server is busy: {} requests running or waiting (limits: {} running, {} waiting); retry later",
          active_, opt_.max_num_seqs, opt_.max_waiting));
    }
    ++active_;
    {
      std::lock_guard sl(stats_mu_);
      ++stats_.requests_submitted;
    }
    h = std::make_shared<RequestHandle>(next_id_++);
    s->h = h;
    incoming_.push_back(std::move(s));
  }
  cv_.notify_all();
  return h;
}

void Engine::shutdown(bool drain) {
  {
    std::lock_guard lk(mu_);
    if (!stopping_)
      drain_ = drain;
    else if (!drain)
      drain_ = false;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable() && std::this_thread::get_id() != thread_.get_id()) thread_.join();
}

EngineStats Engine::stats() const {
  std::lock_guard lk(stats_mu_);
  return stats_;
}

KvUsage Engine::kv_usage() const {
  std::lock_guard lk(model_mu_);
  return kv_->usage();
}

void Engine::loop() {
  while (true) {
    {
      std::unique_lock lk(mu_);
      cv_.wait_for(lk, std::chrono::milliseconds(200),
                   [&] { return stopping_ || !incoming_.empty() || !seqs_.empty(); });
      intake();
      if (stopping_ && !drain_)
        for (auto& s : seqs_) s->h->cancel();
      if (stopping_ && seqs_.empty()) break;
    }
    if (seqs_.empty()) continue;
    std::lock_guard ml(model_mu_);
    try {
      step();
    } catch (const std::exception& e) {
      // A failure the step could not attribute to one request: fail every running one so the
      // engine stays consistent and keeps serving.
      abandon_passes();
      while (!policy_->running().empty()) {
        RequestEvent ev;
        ev.finished = true;
        ev.finish_reason = "error";
        ev.error = e.what();
        finish(*static_cast<Seq*>(policy_->running().back()), std::move(ev));
      }
    }
    std::lock_guard sl(stats_mu_);
    stats_.running = static_cast<int>(policy_->running().size());
    stats_.waiting = static_cast<int>(policy_->waiting().size());
  }
  // Anything left (not possible after the loop above, but keep KV clean). Under the model lock:
  // kv_usage() may be called (a metrics scrape) while the engine shuts down.
  std::lock_guard ml(model_mu_);
  kv_->reset();
}

// Moves submitted requests to the policy's waiting queue (under mu_).
void Engine::intake() {
  while (!incoming_.empty()) {
    std::unique_ptr<Seq> s = std::move(incoming_.front());
    incoming_.pop_front();
    policy_->enqueue(s.get());
    seqs_.push_back(std::move(s));
  }
}

// Sends the request's final event and forgets it. The counters are updated before the client
// sees the event, so metrics read after a response never still count it as running.
void Engine::finish(Seq& s, RequestEvent ev) {
  ev.finished = true;
  ev.prompt_tokens = static_cast<int>(s.n_prompt);
  ev.completion_tokens = s.out->n_generated();
  ev.cached_tokens = static_cast<int>(s.cached);
  policy_->remove(&s);
  auto it = std::find_if(seqs_.begin(), seqs_.end(), [&](const auto& p) { return p.get() == &s; });
  std::unique_ptr<Seq> owned = std::move(*it);
  seqs_.erase(it);
  {
    std::lock_guard sl(stats_mu_);
    if (ev.finish_reason == "cancelled")
      ++stats_.requests_cancelled;
    else if (ev.finish_reason == "error")
      ++stats_.requests_failed;
    else
      ++stats_.requests_finished;
    stats_.e2e.observe(std::chrono::duration<double>(Clock::now() - s.t_submit).count());
    stats_.running = static_cast<int>(policy_->running().size());
  }
  {
    std::lock_guard lk(mu_);
    --active_;
  }
  s.h->push(std::move(ev));
}

void Engine::drop_cancelled() {
  for (size_t i = seqs_.size(); i-- > 0;) {
    Seq& s = *seqs_[i];
    if (s.in_flight) continue;                                            // after its pass
    if (s.h->cancelled() || (s.p.max_tokens == 0 && !s.admitted_once)) {  // max_tokens 0: nothing to generate
      RequestEvent ev;
      ev.finish_reason = s.h->cancelled() ? "cancelled" : "length";
      finish(s, std::move(ev));
    }
  }
}

void Engine::on_first_admission(const std::vector<ScheduledSeq*>& seqs) {
  std::lock_guard sl(stats_mu_);
  for (const ScheduledSeq* s : seqs) {
    stats_.prompt_tokens += s->n_prompt;
    stats_.cached_prompt_tokens += s->cached;
  }
}

// Plans a pass over the sequences not in flight and begins it; on CapacityError lets the policy
// preempt and plans again (with passes in flight, those end first). Returns false when no pass
// began.
bool Engine::begin_pass() {
  if (spare_.empty()) return false;  // not after a step: one pass has always ended
  propose_drafts();
  Pass& p = spare_.back();
  while (true) {
    policy_->plan(decode_share());
    if (policy_->items().empty()) return false;
    try {
      p.id = model_.begin_forward(*kv_, policy_->items(), ForwardOut{p.logits.data(), nullptr});
      break;
    } catch (const CapacityError& e) {
      if (policy_->drop_drafts()) continue;  // without the draft tokens it may fit
      if (!passes_.empty()) return false;    // the passes in flight end and free room first
      Seq* alone = static_cast<Seq*>(policy_->on_capacity_error());
      if (!alone) continue;
      // Alone and still out of room: the pool cannot hold this sequence any longer.
      RequestEvent ev;
      if (alone->n_generated() == 0) {
        ev.finish_reason = "error";
        ev.error = fmt::format("the KV pool cannot hold this prompt: {}", e.what());
      } else {
        ev = alone->out->cut_short();
      }
      finish(*alone, std::move(ev));
      return false;
    }
  }
  p.items = policy_->items();
  p.owners = policy_->owners();
  for (ScheduledSeq* s : p.owners) s->in_flight = true;
  passes_.push_back(std::move(p));
  spare_.pop_back();
  return true;
}

// The decoding sequences the next pass takes: those not in flight, shared among the passes that
// can still begin before the oldest ends.
int Engine::decode_share() const {
  const auto& run = policy_->running();
  const int free = static_cast<int>(std::count_if(
      run.begin(), run.end(), [](const ScheduledSeq* s) { return s->decoding() && !s->in_flight; }));
  const int slots = std::max(1, depth_ - static_cast<int>(passes_.size()));
  return (free + slots - 1) / slots;
}

// Ends passes in flight after a failure, their outputs dropped (their sequences are then failed).
void Engine::abandon_passes() {
  while (!passes_.empty()) {
    Pass& p = passes_.front();
    try {
      model_.end_forward(p.id);
    } catch (const std::exception&) {  // the failure is reported by the caller
    }
    for (ScheduledSeq* s : p.owners) s->in_flight = false;
    spare_.push_back(std::move(p));
    passes_.pop_front();
  }
}

// Asks the proposer for draft tokens for every sequence that decodes in the next step.
void Engine::propose_drafts() {
  if (!opt_.spec.proposer) return;
  draft_requests_.clear();
  const bool off =
      opt_.spec.max_batch > 0 && static_cast<int>(policy_->running().size()) > opt_.spec.max_batch;
  for (ScheduledSeq* r : policy_->running()) {
    Seq& s = *static_cast<Seq*>(r);
    if (s.in_flight) continue;  // its drafts are in its pass
    s.verify.clear();
    s.draft.draft.clear();
    s.draft.q.clear();
    s.draft.max_draft = 0;  // not asked (yet) in this step
    const int64_t n = static_cast<int64_t>(s.tokens.size());
    if (off || !s.p.speculative) continue;
    s.draft.request = s.h->id();
    s.draft.slot = s.seq_id;
    s.draft.tokens = s.tokens;
    s.draft.sampling = &s.p.sampling;
    if (!s.decoding()) {  // in prefill: a costly proposer gets ahead
      if (opt_.spec.proposer->costly()) draft_requests_.push_back(&s.draft);
      continue;
    }
    // Room for the drafts in the cache, and no more than the request can still emit (the
    // target's own token comes on top of the accepted drafts).
    int64_t k = std::min<int64_t>(s.draft_len.next(), kv_capacity_ - n);
    if (s.p.max_tokens >= 0) k = std::min<int64_t>(k, s.p.max_tokens - s.n_generated() - 1);
    if (k < 1) continue;
    s.draft.max_draft = static_cast<int>(k);
    draft_requests_.push_back(&s.draft);
  }
  if (draft_requests_.empty()) return;
  opt_.spec.proposer->propose(draft_requests_);
  for (ScheduledSeq* r : policy_->running()) {
    Seq& s = *static_cast<Seq*>(r);
    if (s.in_flight) continue;
    if (s.draft.draft.empty()) {
      if (s.draft.max_draft > 0) s.draft_len.on_result(0, 0);  // asked, nothing proposed
      continue;
    }
    if (static_cast<int>(s.draft.draft.size()) > s.draft.max_draft)
      fail("the {} proposer proposed {} tokens, more than the {} asked for", opt_.spec.proposer->name(),
           s.draft.draft.size(), s.draft.max_draft);
    s.verify.assign(1, s.tokens.back());
    s.verify.insert(s.verify.end(), s.draft.draft.begin(), s.draft.draft.end());
  }
}

// Checks a sequence's drafts against the target's rows, keeps the accepted positions in the
// cache and adapts how many to propose next.
RequestEvent Engine::verify(Seq& s, const float* rows, size_t n_rows) {
  const int64_t before = static_cast<int64_t>(s.tokens.size());
  const std::span<const int32_t> draft(s.verify.data() + 1, n_rows - 1);
  int accepted = 0;
  RequestEvent ev = s.out->on_verify(rows, draft, s.draft.q, s.tokens, kv_capacity_, accepted);
  if (!ev.finished) policy_->rollback(&s, before + accepted);
  const int k = static_cast<int>(draft.size());
  s.draft_len.on_result(k, accepted);
  std::lock_guard sl(stats_mu_);
  ++stats_.spec_verify_steps;
  stats_.spec_proposed += k;
  stats_.spec_accepted += accepted;
  stats_.spec_accepted_per_step.observe(accepted);
  return ev;
}

void Engine::step() {
  drop_cancelled();
  on_first_admission(policy_->admit());
  const bool began = !policy_->running().empty() && begin_pass();
  // The oldest pass ends when as many are in flight as the model keeps busy, or when no other
  // can begin (its sequences' next tokens are wanted).
  if (!passes_.empty() && (!began || static_cast<int>(passes_.size()) >= depth_)) end_pass();
}

// Waits for the oldest pass's logits, then turns them into its sequences' events.
void Engine::end_pass() {
  // Out of the queue first: output processing finishes (frees) sequences, so nothing may look at
  // this pass's owners afterwards, and its buffers go back to spare_ however this ends (spare_
  // holds depth_ passes' room: the push does not allocate).
  Pass p = std::move(passes_.front());
  passes_.pop_front();
  struct GiveBack {
    std::vector<Pass>& spare;
    Pass& p;
    ~GiveBack() { spare.push_back(std::move(p)); }
  } give_back{spare_, p};
  for (ScheduledSeq* s : p.owners) s->in_flight = false;
  model_.end_forward(p.id);
  {
    std::lock_guard sl(stats_mu_);
    ++stats_.steps;
    stats_.preemptions = policy_->preemptions();
  }
  SchedulePolicy::advance(p.items, p.owners);
  // Output processing where logits were produced (rows in item order).
  size_t row = 0;
  const auto now = Clock::now();
  for (size_t i = 0; i < p.items.size(); ++i) {
    if (p.items[i].logits == Want::None) continue;
    Seq& s = *static_cast<Seq*>(p.owners[i]);
    const float* rows = p.logits.data() + row * n_vocab_;
    RequestEvent ev;
    if (p.items[i].logits == Want::All) {
      row += p.items[i].tokens.size();
      ev = verify(s, rows, p.items[i].tokens.size());
    } else {
      ++row;
      ev = s.out->on_logits(rows, s.tokens, kv_capacity_);
    }
    s.verify.clear();
    {
      const size_t n = ev.tokens.size();
      std::lock_guard sl(stats_mu_);
      stats_.generation_tokens += n;
      if (s.n_generated() == static_cast<int64_t>(n)) {  // a request's first step gives one token
        stats_.ttft.observe(std::chrono::duration<double>(now - s.t_submit).count());
      } else {  // the tokens of one (speculative) step share its latency evenly
        const double gap = std::chrono::duration<double>(now - s.t_last).count() / static_cast<double>(n);
        for (size_t t = 0; t < n; ++t) stats_.itl.observe(gap);
      }
    }
    s.t_last = now;
    if (ev.finished)
      finish(s, std::move(ev));
    else
      s.h->push(std::move(ev));
  }
}

}  // namespace ferrum
