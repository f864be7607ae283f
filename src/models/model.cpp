// The non-virtual conveniences of the Model interface, all expressed through unified_forward.
#include <algorithm>
#include <cstdlib>

#include "ferrum/error.h"
#include "ferrum/model.h"

namespace ferrum {

void KvOptions::apply_env() {
  auto env = [](const char* k) -> const char* { return std::getenv(k); };
  if (const char* v = env("FERRUM_KV_LAYOUT"); v && layout == "contiguous") layout = v;
  if (const char* v = env("FERRUM_KV_TYPE"); v && type == "f32") type = v;
  if (const char* v = env("FERRUM_KV_CAPACITY"); v && capacity == 0) capacity = std::atoll(v);
  if (const char* v = env("FERRUM_KV_POOL"); v && pool_tokens == 0) pool_tokens = std::atoll(v);
  if (const char* v = env("FERRUM_PREFIX_CACHE"); v && !prefix_cache) prefix_cache = std::string(v) == "1";
}

void Model::prefill(int seq, std::span<const int32_t> tokens, float* logits, bool all_logits) {
  if (tokens.empty()) fail("prefill: no tokens for sequence {}", seq);
  const int64_t n = tokens.size(), chunk = std::max<int64_t>(1, options().max_batch);
  const int64_t V = config().n_vocab;
  for (int64_t b = 0; b < n; b += chunk) {
    const int64_t m = std::min(chunk, n - b);
    const bool last = b + m == n;
    SeqTokens item{seq, tokens.subspan(b, m), logits != nullptr && (last || all_logits), logits != nullptr && all_logits};
    unified_forward(std::span(&item, 1), all_logits ? logits + b * V : logits);
  }
}

void Model::decode(int seq, int32_t token, int64_t pos, float* logits) {
  DecodeItem item{seq, token, pos};
  decode_batch(std::span(&item, 1), logits);
}

void Model::decode_batch(std::span<const DecodeItem> items, float* logits) {
  thread_local std::vector<SeqTokens> batch;  // reused: no allocation per decode step
  batch.clear();
  for (const DecodeItem& it : items) {
    const int64_t have = seq_len(it.seq);
    if (it.pos != have) fail("decode: position {} does not match sequence {} length {}", it.pos, it.seq, have);
    batch.push_back(SeqTokens{it.seq, std::span(&it.token, 1), true, false});
  }
  unified_forward(batch, logits);
}

void Model::forward_verify(int seq, std::span<const int32_t> tokens, float* logits) {
  if (tokens.empty()) fail("forward_verify: no tokens for sequence {}", seq);
  SeqTokens item{seq, tokens, true, true};
  unified_forward(std::span(&item, 1), logits);
}

}  // namespace ferrum
