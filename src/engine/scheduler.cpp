#include "engine/scheduler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "engine/stop.h"
#include "runtime/kv_cache.h"

namespace ferrum {

using Clock = std::chrono::steady_clock;

struct Engine::Seq {
  std::shared_ptr<RequestHandle> h;
  RequestParams p;
  std::vector<int32_t> tokens;  // prompt + generated
  size_t n_prompt = 0;
  int64_t n_computed = 0;  // tokens in the KV cache
  int seq_id = -1;         // -1 while waiting
  int n_generated = 0;
  int cached = 0;  // prompt tokens served by the prefix cache (first admission)
  bool admitted_once = false;
  std::unique_ptr<Sampler> sampler;
  std::unique_ptr<StreamDecoder> dec;
  StopMatcher stop;
  Clock::time_point t_submit, t_last;
};

namespace {

std::vector<double> ttft_buckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
}
std::vector<double> itl_buckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1};
}

// Log-probability of the chosen token and the n best alternatives under the raw model logits.
TokenLogprob logprobs_of(const float* x, int n_vocab, int32_t chosen, int n_top) {
  float mx = x[0];
  for (int i = 1; i < n_vocab; ++i) mx = std::max(mx, x[i]);
  double s = 0;
  for (int i = 0; i < n_vocab; ++i) s += std::exp(double(x[i]) - mx);
  const float lse = mx + static_cast<float>(std::log(s));
  TokenLogprob t;
  t.id = chosen;
  t.logprob = x[chosen] - lse;
  if (n_top > 0) {
    std::vector<int32_t> idx(n_vocab);
    std::iota(idx.begin(), idx.end(), 0);
    const int k = std::min(n_top, n_vocab);
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                      [&](int32_t a, int32_t b) { return x[a] > x[b] || (x[a] == x[b] && a < b); });
    for (int i = 0; i < k; ++i) t.top.emplace_back(idx[i], x[idx[i]] - lse);
  }
  return t;
}

}  // namespace

Engine::Engine(Model& model, const Tokenizer& tok, const EngineOptions& opt)
    : model_(model),
      tok_(tok),
      opt_(opt),
      kv_(KvCache::for_model(model, opt.kv)),
      n_vocab_(model.config().n_vocab) {
  if (!model.has_logits())
    fail("the engine needs a model with its LM head (not a backbone or an inner stage)");
  kv_capacity_ = kv_->capacity();
  if (opt_.max_num_seqs < 1) fail("max_num_seqs must be >= 1 (got {})", opt_.max_num_seqs);
  if (opt_.max_batched_tokens < opt_.max_num_seqs)
    fail(
        "max_batched_tokens ({}) must be >= max_num_seqs ({}): every running sequence decodes one token per "
        "step",
        opt_.max_batched_tokens, opt_.max_num_seqs);
  if (opt_.max_waiting < 0) fail("max_waiting must be >= 0 (got {})", opt_.max_waiting);
  const KvUsage kv = kv_->usage();
  pool_tokens_ = kv.total_blocks * kv.block_tokens;
  stats_.ttft = Histogram(ttft_buckets());
  stats_.itl = Histogram(itl_buckets());
  stats_.e2e = Histogram({0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120});
  for (int i = opt_.max_num_seqs - 1; i >= 0; --i) free_seq_ids_.push_back(i);
  items_.reserve(opt_.max_num_seqs);
  item_seq_.reserve(opt_.max_num_seqs);
  logits_.resize(static_cast<size_t>(opt_.max_num_seqs) * n_vocab_);
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
  s->sampler = std::make_unique<Sampler>(p.sampling, n_vocab_);
  s->dec = std::make_unique<StreamDecoder>(tok_, /*skip_special=*/true, p.at_text_start);
  s->stop = StopMatcher(p.stop);
  s->t_submit = Clock::now();
  s->p = std::move(p);
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

nlohmann::json Engine::model_metrics() const {
  std::lock_guard lk(model_mu_);
  const ModelStats ms = model_.stats();
  return {{"kv", kv_->impl().metrics_json()},
          {"forward_calls", ms.forward_calls},
          {"forward_tokens", ms.forward_tokens}};
}

void Engine::loop() {
  while (true) {
    {
      std::unique_lock lk(mu_);
      cv_.wait_for(lk, std::chrono::milliseconds(200),
                   [&] { return stopping_ || !incoming_.empty() || !waiting_.empty() || !running_.empty(); });
      while (!incoming_.empty()) {
        waiting_.push_back(std::move(incoming_.front()));
        incoming_.pop_front();
      }
      if (stopping_ && !drain_) {
        for (auto& s : waiting_) s->h->cancel();
        for (auto& s : running_) s->h->cancel();
      }
      if (stopping_ && waiting_.empty() && running_.empty()) break;
    }
    if (waiting_.empty() && running_.empty()) continue;
    std::lock_guard ml(model_mu_);
    try {
      step();
    } catch (const std::exception& e) {
      // A failure the step could not attribute to one request: fail every running one so the
      // engine stays consistent and keeps serving.
      while (!running_.empty()) {
        RequestEvent ev;
        ev.error = e.what();
        finish(*running_.back(), std::move(ev), "error");
      }
    }
    std::lock_guard sl(stats_mu_);
    stats_.running = static_cast<int>(running_.size());
    stats_.waiting = static_cast<int>(waiting_.size());
  }
  // Anything left (not possible after the loop above, but keep KV clean). Under the model lock:
  // kv_usage() and model_metrics() may be called (a metrics scrape) while the engine shuts down.
  std::lock_guard ml(model_mu_);
  kv_->reset();
}

void Engine::finish(Seq& s, RequestEvent ev, const std::string& reason) {
  ev.finished = true;
  ev.finish_reason = reason;
  ev.prompt_tokens = static_cast<int>(s.n_prompt);
  ev.completion_tokens = s.n_generated;
  ev.cached_tokens = s.cached;
  if (s.seq_id >= 0) {
    if (kv_->seq_len(s.seq_id) > 0 || s.n_computed > 0) {
      try {
        kv_->release(s.seq_id);
      } catch (const Error&) {
        // reuse_prefix may have created nothing; an unknown sequence is fine here.
      }
    }
    free_seq_ids_.push_back(s.seq_id);
    s.seq_id = -1;
  }
  // Leave the running set and update the counters before the client sees the final event, so
  // metrics read after a response never still count it as running.
  std::unique_ptr<Seq> owned;
  auto it = std::find_if(running_.begin(), running_.end(), [&](const auto& p) { return p.get() == &s; });
  if (it != running_.end()) {
    owned = std::move(*it);
    running_.erase(it);
  }
  {
    std::lock_guard sl(stats_mu_);
    if (reason == "cancelled")
      ++stats_.requests_cancelled;
    else if (reason == "error")
      ++stats_.requests_failed;
    else
      ++stats_.requests_finished;
    stats_.e2e.observe(std::chrono::duration<double>(Clock::now() - s.t_submit).count());
    stats_.running = static_cast<int>(running_.size());
  }
  {
    std::lock_guard lk(mu_);
    --active_;
  }
  s.h->push(std::move(ev));
}

void Engine::drop_cancelled() {
  for (size_t i = running_.size(); i-- > 0;)
    if (running_[i]->h->cancelled()) finish(*running_[i], {}, "cancelled");
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if ((*it)->h->cancelled()) {
      finish(**it, {}, "cancelled");
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
}

void Engine::admit() {
  while (!waiting_.empty() && static_cast<int>(running_.size()) < opt_.max_num_seqs &&
         !free_seq_ids_.empty()) {
    Seq& s = *waiting_.front();
    if (s.p.max_tokens == 0) {  // nothing to generate
      auto owned = std::move(waiting_.front());
      waiting_.pop_front();
      finish(*owned, {}, "length");
      continue;
    }
    const int id = free_seq_ids_.back();
    int64_t reused = 0;
    if (!s.admitted_once) reused = kv_->reuse_prefix(id, s.tokens);
    // Admission control: the running sequences' next token plus this whole prompt must fit.
    // With nothing running the request is admitted anyway (it may still run out of room and
    // then ends with "length").
    std::vector<std::pair<int, int64_t>> need;
    need.reserve(running_.size() + 1);
    for (const auto& r : running_) need.emplace_back(r->seq_id, static_cast<int64_t>(r->tokens.size()) + 1);
    need.emplace_back(id, static_cast<int64_t>(s.tokens.size()) + 1);
    if (!running_.empty() && !kv_->can_fit(need)) {
      if (kv_->seq_len(id) > 0) kv_->release(id);
      break;
    }
    free_seq_ids_.pop_back();
    s.seq_id = id;
    s.n_computed = reused;
    if (!s.admitted_once) {
      s.cached = static_cast<int>(reused);
      s.admitted_once = true;
      std::lock_guard sl(stats_mu_);
      stats_.prompt_tokens += s.n_prompt;
      stats_.cached_prompt_tokens += reused;
    }
    running_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
  }
}

void Engine::preempt(size_t idx) {
  std::unique_ptr<Seq> s = std::move(running_[idx]);
  running_.erase(running_.begin() + idx);
  if (kv_->seq_len(s->seq_id) > 0) kv_->release(s->seq_id);
  free_seq_ids_.push_back(s->seq_id);
  s->seq_id = -1;
  s->n_computed = 0;  // recomputed from prompt + output when admitted again
  waiting_.push_front(std::move(s));
  std::lock_guard sl(stats_mu_);
  ++stats_.preemptions;
}

void Engine::step() {
  drop_cancelled();
  admit();
  if (running_.empty()) return;

  while (true) {
    items_.clear();
    item_seq_.clear();
    int budget = opt_.max_batched_tokens;
    // Decodes first (one pending token), then prefill chunks in admission order.
    for (int pass = 0; pass < 2; ++pass) {
      for (auto& r : running_) {
        const int64_t pending = static_cast<int64_t>(r->tokens.size()) - r->n_computed;
        const bool decoding = r->n_generated > 0 && pending == 1;
        if ((pass == 0) != decoding || pending <= 0) continue;
        if (pass == 1 && budget <= 0) continue;
        const int64_t n = pass == 0 ? 1 : std::min<int64_t>(pending, budget);
        budget -= static_cast<int>(n);
        SeqInput it;
        it.seq = r->seq_id;
        it.tokens = std::span<const int32_t>(r->tokens.data() + r->n_computed, n);
        it.logits = r->n_computed + n == static_cast<int64_t>(r->tokens.size()) ? Want::Last : Want::None;
        items_.push_back(it);
        item_seq_.push_back(r.get());
      }
    }
    if (items_.empty()) return;
    try {
      model_.forward(*kv_, items_, ForwardOut{logits_.data(), nullptr});
      break;
    } catch (const CapacityError& e) {
      // Defer the newest prefill chunk; with decodes only, preempt the newest sequence.
      size_t last_prefill = items_.size();
      for (size_t i = items_.size(); i-- > 0;)
        if (item_seq_[i]->n_generated == 0 ||
            item_seq_[i]->n_computed + 1 < static_cast<int64_t>(item_seq_[i]->tokens.size())) {
          last_prefill = i;
          break;
        }
      if (running_.size() == 1) {
        // Alone and still out of room: the pool cannot hold this sequence any longer.
        RequestEvent ev;
        if (running_[0]->n_generated == 0) {
          ev.error = fmt::format("the KV pool cannot hold this prompt: {}", e.what());
          finish(*running_[0], std::move(ev), "error");
        } else {
          ev.text = running_[0]->dec->flush();
          ev.text = running_[0]->stop.push(ev.text) + running_[0]->stop.flush();
          finish(*running_[0], std::move(ev), "length");
        }
        return;
      }
      if (last_prefill < items_.size()) {
        Seq* victim = item_seq_[last_prefill];
        auto it =
            std::find_if(running_.begin(), running_.end(), [&](const auto& p) { return p.get() == victim; });
        preempt(static_cast<size_t>(it - running_.begin()));
      } else {
        preempt(running_.size() - 1);
      }
    }
  }
  {
    std::lock_guard sl(stats_mu_);
    ++stats_.steps;
  }
  // Advance every item, then sample where logits were produced (in item order).
  size_t row = 0;
  for (size_t i = 0; i < items_.size(); ++i) {
    Seq* s = item_seq_[i];
    s->n_computed += static_cast<int64_t>(items_[i].tokens.size());
    if (items_[i].logits != Want::None) {
      on_logits(*s, logits_.data() + row * n_vocab_);
      ++row;
    }
  }
}

void Engine::on_logits(Seq& s, const float* logits) {
  TokenLogprob lp;
  const int32_t id = s.sampler->sample(logits, s.tokens);
  if (s.p.logprobs >= 0) lp = logprobs_of(logits, n_vocab_, id, s.p.logprobs);
  s.tokens.push_back(id);
  ++s.n_generated;
  const auto now = Clock::now();
  {
    std::lock_guard sl(stats_mu_);
    ++stats_.generation_tokens;
    if (s.n_generated == 1)
      stats_.ttft.observe(std::chrono::duration<double>(now - s.t_submit).count());
    else
      stats_.itl.observe(std::chrono::duration<double>(now - s.t_last).count());
  }
  s.t_last = now;

  RequestEvent ev;
  ev.tokens.push_back(id);
  if (s.p.logprobs >= 0) ev.logprobs.push_back(std::move(lp));
  const bool eog = !s.p.ignore_eos && tok_.is_eog(id);
  if (!eog) ev.text = s.stop.push(s.dec->push(id));
  std::string reason;
  if (s.stop.stopped() || eog) {
    reason = "stop";
  } else if ((s.p.max_tokens >= 0 && s.n_generated >= s.p.max_tokens) ||
             static_cast<int64_t>(s.tokens.size()) >= kv_capacity_) {
    reason = "length";
  }
  if (reason.empty()) {
    s.h->push(std::move(ev));
    return;
  }
  if (!s.stop.stopped()) {
    ev.text += s.stop.push(s.dec->flush());
    if (!s.stop.stopped())
      ev.text += s.stop.flush();
    else
      reason = "stop";
  }
  finish(s, std::move(ev), reason);
}

}  // namespace ferrum
