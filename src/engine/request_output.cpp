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
      dec_(tok, /*skip_special=*/true, p.at_text_start),
      stop_(p.stop) {
  if (p.grammar) mask_ = std::make_unique<grammar::TokenMask>(p.grammar, p.at_text_start);
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

RequestEvent RequestOutput::failed(const std::string& message) {
  RequestEvent ev;
  ev.error = message;
  return finish_now(std::move(ev), "error");
}

RequestEvent RequestOutput::finish_now(RequestEvent ev, std::string reason) {
  ev.text += finish_text(reason);
  ev.finished = true;
  ev.finish_reason = reason;
  return ev;
}

RequestEvent RequestOutput::on_logits(const float* logits, std::vector<int32_t>& tokens, int64_t context) {
  const float* sample_from = logits;
  int32_t id = -1;
  // A grammar error (its output nesting past the matcher's bound) ends this request alone.
  try {
    if (mask_) {
      sample_from = constrained(logits);
      if (!sample_from) {  // only where the vocabulary cannot spell what the grammar needs next
        if (mask_->can_end()) return finish_now({}, "stop");
        return failed("grammar: no token of the vocabulary can continue the output");
      }
    }
    id = sampler_.sample(sample_from, tokens);
    if (mask_ && !mask_->accept_token(id))
      return failed(fmt::format("grammar: the sampler chose token {}, which the mask excludes", id));
  } catch (const Error& e) {
    return failed(e.what());
  }
  RequestEvent ev;
  if (p_.logprobs >= 0) ev.logprobs.push_back(logprobs_of(logits, n_vocab_, id, p_.logprobs));
  tokens.push_back(id);
  ++n_generated_;
  ev.tokens.push_back(id);
  const bool eog = !p_.ignore_eos && tok_.is_eog(id);
  if (!eog) ev.text = stop_.push(dec_.push(id));
  std::string reason;
  if (stop_.stopped() || eog || (mask_ && mask_->done()))
    reason = "stop";
  else if ((p_.max_tokens >= 0 && n_generated_ >= p_.max_tokens) ||
           static_cast<int64_t>(tokens.size()) >= context)
    reason = "length";
  if (reason.empty()) return ev;
  return finish_now(std::move(ev), std::move(reason));
}

RequestEvent RequestOutput::cut_short() {
  RequestEvent ev;
  std::string reason = "length";
  ev.text = finish_text(reason);
  ev.finished = true;
  ev.finish_reason = reason;
  return ev;
}

// The text still held back by the decoder and the stop matcher; a stop string completed by it
// turns the finish reason into "stop".
std::string RequestOutput::finish_text(std::string& reason) {
  if (stop_.stopped()) return "";
  std::string text = stop_.push(dec_.flush());
  if (stop_.stopped())
    reason = "stop";
  else
    text += stop_.flush();
  return text;
}

}  // namespace ferrum
