// The non-virtual conveniences of the Model interface, all expressed through forward(), and the
// cache shaped for a model.
#include "ferrum/model.h"

#include <algorithm>

#include "core/fail.h"
#include "kernels/cpu/kv_format.h"
#include "runtime/kv_cache.h"

namespace ferrum {

std::unique_ptr<KvCache> KvCache::for_model(const Model& model, const KvOptions& opts) {
  const ModelConfig& c = model.config();
  const int64_t ctx = c.n_ctx_train > 0 ? std::min<int64_t>(c.n_ctx_train, 4096) : 4096;
  // An encoder keeps nothing between calls: its cache has no layers (it only names sequences).
  const auto [first, end] = model.cache_layers();
  const int layers = c.is_encoder() ? 0 : end - first;
  std::vector<int32_t> windows(layers, 0);  // the stage's layers
  for (int l = 0; l < layers; ++l)
    if (c.layer_uses_window(first + l)) windows[l] = c.sliding_window;
  auto cache =
      std::make_unique<KvCache>(layers, model.cache_heads(), c.head_dim, opts, ctx, std::move(windows));
  model.track_cache(*cache);
  return cache;
}

size_t kv_sequence_bytes(const ModelConfig& c, KvType type, int64_t tokens) {
  if (c.is_encoder()) return 0;
  const runtime::KvCacheOptions d;  // the default block size and rollback
  const size_t row = 2 * kernels::kv_row_bytes(type, c.n_head_kv, c.head_dim);
  size_t bytes = 0;
  for (int l = 0; l < c.n_layer; ++l) {
    const int32_t w = c.layer_uses_window(l) ? c.sliding_window : 0;
    bytes += row *
             static_cast<size_t>(runtime::KvCache::window_rows(w, d.rollback_tokens, d.block_tokens, tokens));
  }
  return bytes;
}

void Model::prefill(KvCache& kv, int seq, std::span<const int32_t> tokens, float* logits, bool all_logits,
                    const LoraAdapter* lora) {
  if (tokens.empty()) fail("prefill: no tokens for sequence {}", seq);
  const int64_t n = tokens.size(), chunk = std::max<int64_t>(1, options().max_batch);
  const int64_t V = config().n_vocab;
  for (int64_t b = 0; b < n; b += chunk) {
    const int64_t m = std::min(chunk, n - b);
    const bool last = b + m == n;
    SeqInput item;
    item.seq = seq;
    item.tokens = tokens.subspan(b, m);
    item.lora = lora;
    item.logits = logits == nullptr ? Want::None : all_logits ? Want::All : last ? Want::Last : Want::None;
    forward(kv, std::span(&item, 1), ForwardOut{all_logits ? logits + b * V : logits, nullptr});
  }
}

void Model::decode(KvCache& kv, int seq, int32_t token, int64_t pos, float* logits) {
  DecodeItem item{seq, token, pos};
  decode_batch(kv, std::span(&item, 1), logits);
}

void Model::decode_batch(KvCache& kv, std::span<const DecodeItem> items, float* logits) {
  thread_local std::vector<SeqInput> batch;  // reused: no allocation per decode step
  batch.clear();
  for (const DecodeItem& it : items) {
    const int64_t have = kv.seq_len(it.seq);
    if (it.pos != have)
      fail("decode: position {} does not match sequence {} length {}", it.pos, it.seq, have);
    SeqInput in;
    in.seq = it.seq;
    in.tokens = std::span(&it.token, 1);
    in.lora = it.lora;
    batch.push_back(in);
  }
  forward(kv, batch, ForwardOut{logits, nullptr});
}

void Model::forward_verify(KvCache& kv, int seq, std::span<const int32_t> tokens, float* logits) {
  if (tokens.empty()) fail("forward_verify: no tokens for sequence {}", seq);
  SeqInput item;
  item.seq = seq;
  item.tokens = tokens;
  item.logits = Want::All;
  forward(kv, std::span(&item, 1), ForwardOut{logits, nullptr});
}

}  // namespace ferrum
