#include "engine/generate.h"

#include <chrono>

#include "core/fail.h"

namespace ferrum {

GenerateResult generate(Model& model, KvCache& kv, const Tokenizer& tok, int seq,
                        std::span<const int32_t> prompt, const GenerateOptions& opt,
                        const std::function<bool(int32_t)>& on_token) {
  if (prompt.empty()) fail("the prompt is empty: nothing to condition on (the model adds no BOS token)");
  using clock = std::chrono::steady_clock;
  const int n_vocab = model.config().n_vocab;
  std::vector<float> logits(n_vocab);
  std::vector<int32_t> history(prompt.begin(), prompt.end());
  history.reserve(prompt.size() + opt.max_tokens);
  Sampler sampler(opt.sampling, n_vocab);
  GenerateResult res;
  res.finish_reason = "length";

  auto t0 = clock::now();
  model.prefill(kv, seq, prompt, logits.data());
  auto t1 = clock::now();
  res.prefill_seconds = std::chrono::duration<double>(t1 - t0).count();

  for (int i = 0; i < opt.max_tokens; ++i) {
    const int32_t next = sampler.sample(logits.data(), history);
    res.tokens.push_back(next);
    history.push_back(next);
    if (opt.stop_at_eog && tok.is_eog(next)) {
      res.finish_reason = "stop";
      break;
    }
    if (on_token && !on_token(next)) {
      res.finish_reason = "stop";
      break;
    }
    if (i + 1 == opt.max_tokens) break;
    if (kv.seq_len(seq) >= kv.capacity()) break;  // context full
    model.decode(kv, seq, next, kv.seq_len(seq), logits.data());
  }
  res.decode_seconds = std::chrono::duration<double>(clock::now() - t1).count();
  return res;
}

}  // namespace ferrum
