// The simple path the engine is pinned to: one sequence, the whole prompt as one prefill, then
// one argmax token per decode (lowest id on ties), until an end-of-generation token, max_tokens
// or a full context (prompt + output <= the cache's capacity, the engine's rule).
#pragma once

#include <string>
#include <vector>

#include "ferrum/sampler.h"
#include "ferrum/kv_cache.h"
#include "ferrum/model.h"
#include "ferrum/tokenizer.h"

namespace ferrum::test {

struct GreedyRun {
  std::vector<int32_t> tokens;  // generated, including the end-of-generation token if hit
  std::string text;             // generated text, without the end-of-generation token
  std::string finish_reason;    // "stop" or "length"
};

inline GreedyRun greedy_reference(Model& model, const KvOptions& kvo, const Tokenizer& tok,
                                  const std::vector<int32_t>& prompt, int max_tokens) {
  auto kv = KvCache::for_model(model, kvo);
  const int V = model.config().n_vocab;
  std::vector<float> logits(V);
  model.prefill(*kv, 0, prompt, logits.data());
  GreedyRun r;
  r.finish_reason = "length";
  StreamDecoder dec(tok, /*skip_special=*/true, /*at_text_start=*/false);
  for (int i = 0; i < max_tokens; ++i) {
    const int32_t next = argmax(logits.data(), V);
    r.tokens.push_back(next);
    if (tok.is_eog(next)) {
      r.finish_reason = "stop";
      break;
    }
    r.text += dec.push(next);
    if (i + 1 == max_tokens || static_cast<int64_t>(prompt.size() + r.tokens.size()) >= kv->capacity()) break;
    model.decode(*kv, 0, next, kv->seq_len(0), logits.data());
  }
  r.text += dec.flush();
  return r;
}

}  // namespace ferrum::test
