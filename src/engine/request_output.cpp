#include "engine/request_output.h"

#include <algorithm>
#include <cmath>
#include <numeric>

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
      stop_(p.stop) {}

RequestEvent RequestOutput::on_logits(const float* logits, std::vector<int32_t>& tokens, int64_t context) {
  RequestEvent ev;
  emit(sampler_.sample(logits, tokens), logits, tokens, context, ev);
  return ev;
}

RequestEvent RequestOutput::on_verify(const float* rows, std::span<const int32_t> draft,
                                      std::span<const std::vector<TokenProb>> q, std::vector<int32_t>& tokens,
                                      int64_t context, int& accepted) {
  RequestEvent ev;
  accepted = 0;
  for (size_t i = 0; i <= draft.size(); ++i) {
    const float* row = rows + i * static_cast<size_t>(n_vocab_);
    const std::span<const TokenProb> p = sampler_.distribution(row, tokens);
    if (i == draft.size()) {  // every draft accepted: the target's own next token
      emit(sampler_.draw(p), row, tokens, context, ev);
      break;
    }
    const int32_t id = sampler_.verify(
        p, draft[i], i < q.size() ? std::span<const TokenProb>(q[i]) : std::span<const TokenProb>());
    const bool ok = id == draft[i];
    accepted += ok;
    if (emit(id, row, tokens, context, ev) || !ok) break;
  }
  return ev;
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
  if (!eog) ev.text += stop_.push(dec_.push(id));
  std::string reason;
  if (stop_.stopped() || eog)
    reason = "stop";
  else if ((p_.max_tokens >= 0 && n_generated_ >= p_.max_tokens) ||
           static_cast<int64_t>(tokens.size()) >= context)
    reason = "length";
  if (reason.empty()) return false;
  ev.text += finish_text(reason);
  ev.finished = true;
  ev.finish_reason = reason;
  return true;
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
