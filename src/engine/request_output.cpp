#include "engine/request_output.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/fail.h"

namespace ferrum {

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

RequestOutput::RequestOutput(const Tokenizer& tok, const RequestParams& p, int n_vocab)
    : tok_(tok),
      p_(p),
      n_vocab_(n_vocab),
      sampler_(p.sampling, n_vocab),
      dec_(tok, /*skip_special=*/!p.keep_special, p.at_text_start),
      stop_(p.stop) {
  if (p.output_filter) filter_ = p.output_filter();
  reasoning_ = !p.reasoning_end.empty();
  if (p.grammar && !reasoning_) mask_ = std::make_unique<grammar::TokenMask>(p.grammar, p.at_text_start);
  if (reasoning_ && p.reasoning_budget == 0) track_reasoning(-1);
}

bool RequestOutput::next_forced(int32_t& id) {
  if (forced_.empty()) return false;
  id = forced_.front();
  forced_.pop_front();
  return true;
}

// Follows the reasoning (token `id` just emitted; -1: none yet): its end starts the grammar, and
// the budget spent queues the end marker's tokens.
void RequestOutput::track_reasoning(int32_t id) {
  if (!reasoning_) return;
  const std::string& end = p_.reasoning_end;
  if (id >= 0) {
    // The vocabulary's own piece: the decoder leaves out control tokens, which a marker may be.
    reasoning_tail_ += tok_.token_to_piece(id);
    if (reasoning_tail_.find(end) != std::string::npos) {
      reasoning_ = false;
      if (p_.grammar) mask_ = std::make_unique<grammar::TokenMask>(p_.grammar, /*at_text_start=*/true);
      return;
    }
    if (reasoning_tail_.size() > end.size()) reasoning_tail_.erase(0, reasoning_tail_.size() - end.size());
    ++n_reasoning_;
  }
  if (p_.reasoning_budget >= 0 && n_reasoning_ == p_.reasoning_budget && forced_.empty()) {
    const std::string close = p_.reasoning_close.empty() ? "\n" + end : p_.reasoning_close;
    const auto ids = tok_.encode(close, /*add_special=*/false, /*parse_special=*/true);
    forced_.assign(ids.begin(), ids.end());
  }
}

const float* RequestOutput::constrained(const float* logits) {
  mask_->fill(allowed_, n_vocab_);
  masked_.assign(logits, logits + n_vocab_);
  constexpr float kNone = -std::numeric_limits<float>::infinity();
  bool any = false;
  // A word at a time: all-allowed words (free text) and all-masked words (a schema) are the rule.
  for (int w = 0; w * 64 < n_vocab_; ++w) {
    const uint64_t bits = allowed_[w];
    const int begin = w * 64, end = std::min(n_vocab_, begin + 64);
    if (bits == ~uint64_t{0} && end - begin == 64) {
      any = true;
    } else if (bits == 0) {
      std::fill(masked_.begin() + begin, masked_.begin() + end, kNone);
    } else {
      any = true;
      for (int i = begin; i < end; ++i)
        if (!((bits >> (i - begin)) & 1)) masked_[i] = kNone;
    }
  }
  return any ? masked_.data() : nullptr;
}

RequestEvent RequestOutput::failed(RequestEvent ev, const std::string& message) {
  ev.error = message;
  return finish_now(std::move(ev), "error");
}

RequestEvent RequestOutput::finish_now(RequestEvent ev, std::string reason) {
  ev.text += finish_text(reason);
  ev.finished = true;
  ev.finish_reason = reason;
  if (stop_.stopped()) ev.stop_string = stop_.matched();
  return ev;
}

RequestEvent RequestOutput::on_logits(const float* logits, std::vector<int32_t>& tokens, int64_t context) {
  RequestEvent ev;
  // A grammar error (its output nesting past the matcher's bound) ends this request alone.
  try {
    int32_t id;
    if (!next_forced(id)) {
      const float* from = allowed(logits);
      if (!from) return grammar_end(std::move(ev));
      id = sampler_.sample(from, tokens);
    }
    if (!grammar_accepts(id)) return excluded(std::move(ev), id);
    emit(id, logits, tokens, context, ev);
  } catch (const Error& e) {
    return failed(std::move(ev), e.what());
  }
  return ev;
}

RequestEvent RequestOutput::on_verify(const float* rows, std::span<const int32_t> draft,
                                      std::span<const std::vector<TokenProb>> q, std::vector<int32_t>& tokens,
                                      int64_t context, int& accepted) {
  RequestEvent ev;
  accepted = 0;
  try {
    for (size_t i = 0; i <= draft.size(); ++i) {
      const float* row = rows + i * static_cast<size_t>(n_vocab_);
      const bool last = i == draft.size();  // every draft accepted: the model's own next token
      int32_t id;
      if (!next_forced(id)) {
        // The grammar has seen the tokens emitted so far (never a rejected draft): no rollback.
        const float* from = allowed(row);
        if (!from) return grammar_end(std::move(ev));
        const std::span<const TokenProb> p = sampler_.distribution(from, tokens);
        id = last ? sampler_.draw(p)
                  : sampler_.verify(
                        p, draft[i],
                        i < q.size() ? std::span<const TokenProb>(q[i]) : std::span<const TokenProb>());
      }
      if (!grammar_accepts(id)) return excluded(std::move(ev), id);
      const bool ok = !last && id == draft[i];
      accepted += ok;
      if (emit(id, row, tokens, context, ev) || !ok) break;
    }
  } catch (const Error& e) {
    return failed(std::move(ev), e.what());
  }
  return ev;
}

// The logits to sample from: with a grammar, its disallowed tokens at -inf (null when it allows
// none); otherwise `logits` itself.
const float* RequestOutput::allowed(const float* logits) {
  return mask_ ? constrained(logits) : logits;
}

// No token of the vocabulary can continue the grammar: done if it may end here, else an error.
RequestEvent RequestOutput::grammar_end(RequestEvent ev) {
  if (mask_->can_end()) return finish_now(std::move(ev), "stop");
  return failed(std::move(ev), "grammar: no token of the vocabulary can continue the output");
}

bool RequestOutput::grammar_accepts(int32_t id) {
  return !mask_ || mask_->accept_token(id);
}

RequestEvent RequestOutput::excluded(RequestEvent ev, int32_t id) {
  return failed(std::move(ev),
                fmt::format("grammar: the sampler chose token {}, which the mask excludes", id));
}

// Appends one chosen token and runs it through logprobs, detokenizer, stop strings and the
// finish rules; true when the request ends with it (the event is then final).
bool RequestOutput::emit(int32_t id, const float* logits, std::vector<int32_t>& tokens, int64_t context,
                         RequestEvent& ev) {
  if (p_.logprobs >= 0) ev.logprobs.push_back(logprobs_of(logits, n_vocab_, id, p_.logprobs));
  tokens.push_back(id);
  ++n_generated_;
  ev.tokens.push_back(id);
  const bool eog = !p_.ignore_eos && tok_.is_eog(id);
  if (!eog) {
    std::string piece = stop_.push(dec_.push(id));
    ev.text += filter_ ? filter_->push(piece) : piece;
  }
  track_reasoning(id);
  std::string reason;
  if (stop_.stopped() || eog || (mask_ && mask_->done()))
    reason = "stop";
  else if ((p_.max_tokens >= 0 && n_generated_ >= p_.max_tokens) ||
           static_cast<int64_t>(tokens.size()) >= context)
    reason = "length";
  if (reason.empty()) return false;
  ev = finish_now(std::move(ev), std::move(reason));
  return true;
}

RequestEvent RequestOutput::cut_short() {
  RequestEvent ev;
  std::string reason = "length";
  ev.text = finish_text(reason);
  ev.finished = true;
  ev.finish_reason = reason;
  if (stop_.stopped()) ev.stop_string = stop_.matched();
  return ev;
}

// The text still held back by the decoder and the stop matcher; a stop string completed by it
// turns the finish reason into "stop".
std::string RequestOutput::finish_text(std::string& reason) {
  std::string text;
  if (!stop_.stopped()) {
    text = stop_.push(dec_.flush());
    if (stop_.stopped())
      reason = "stop";
    else
      text += stop_.flush();
  }
  if (!filter_) return text;
  text = filter_->push(text) + filter_->finish();
  filter_.reset();  // finished once
  return text;
}

}  // namespace ferrum
