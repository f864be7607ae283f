// Sentence embeddings (ferrum/embeddings.h) for encoders and decoders: the sequences are checked
// once here, then an encoder runs them as whole sentences, a decoder through a KV cache of its own.
#include "ferrum/embeddings.h"

#include <algorithm>
#include <cstring>

#include "core/fail.h"
#include "ferrum/kv_cache.h"
#include "models/pooling.h"

namespace ferrum {

EmbedSettings embed_settings(const Model& model, const EmbedOptions& o) {
  const ModelConfig& cfg = model.config();
  EmbedSettings s;
  if (cfg.is_encoder()) {
    s.pooling = o.pooling.value_or(cfg.pooling.value_or(Pooling::Mean));
    s.normalize = o.normalize.value_or(cfg.normalize);
  } else {
    s.pooling = o.pooling.value_or(Pooling::Last);
    s.normalize = o.normalize.value_or(true);
    if (s.pooling == Pooling::Cls) fail("a decoder has no CLS token: use last or mean pooling");
  }
  return s;
}

namespace {

// Longest sequence; throws naming the first bad one.
int64_t check_inputs(const Model& model, const std::vector<std::vector<int32_t>>& batch) {
  const ModelConfig& cfg = model.config();
  if (model.layer_begin() != 0 || model.layer_end() != cfg.n_layer)
    fail("embeddings need the whole network (layers 0 to {}); this model is the stage [{}, {})", cfg.n_layer,
         model.layer_begin(), model.layer_end());
  int64_t max_len = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (batch[i].empty()) fail("input {} is empty", i);
    for (int32_t t : batch[i])
      if (t < 0 || t >= cfg.n_vocab)
        fail("input {}: token id {} is out of range (vocabulary has {} tokens)", i, t, cfg.n_vocab);
    const int64_t n = static_cast<int64_t>(batch[i].size());
    if (cfg.is_encoder() && n > cfg.n_ctx_train)
      fail("input {} has {} tokens, longer than the model's position table ({} positions)", i, n,
           cfg.n_ctx_train);
    max_len = std::max(max_len, n);
  }
  return max_len;
}

// An encoder: whole sentences, as many per forward as fit in max(max_batch, 512) tokens (at
// least one); the model reads no cache, so a cache with no layers stands in for one.
std::vector<std::vector<float>> encoder_embeddings(const Model& model,
                                                   const std::vector<std::vector<int32_t>>& batch,
                                                   const EmbedSettings& es, const ModelGuard& guard) {
  const int64_t d = model.config().n_embd, cap = std::max<int64_t>(512, model.options().max_batch);
  std::vector<std::vector<float>> out(batch.size(), std::vector<float>(d));
  std::unique_ptr<KvCache> kv = KvCache::for_model(model, KvOptions{});
  const Want want = es.pooling == Pooling::Last ? Want::Last : Want::All;
  auto rows_of = [&](size_t s) { return want == Want::All ? static_cast<int64_t>(batch[s].size()) : 1; };
  std::vector<SeqInput> items;
  std::vector<float> hidden;
  for (size_t first = 0; first < batch.size();) {
    items.clear();
    int64_t tokens = 0, rows = 0;
    size_t last = first;
    for (; last < batch.size(); ++last) {
      const int64_t n = static_cast<int64_t>(batch[last].size());
      if (last > first && tokens + n > cap) break;
      SeqInput in;
      in.seq = static_cast<int>(last - first);
      in.tokens = batch[last];
      in.logits = Want::None;
      in.hidden = want;
      items.push_back(in);
      tokens += n;
      rows += rows_of(last);
    }
    hidden.resize(rows * d);
    guard([&](Model& m) { m.forward(*kv, items, ForwardOut{nullptr, hidden.data()}); });
    const float* h = hidden.data();
    for (size_t s = first; s < last; ++s) {
      pool_rows(h, rows_of(s), d, es.pooling, out[s].data());
      if (es.normalize) l2_normalize(out[s]);
      h += rows_of(s) * d;
    }
    first = last;
  }
  return out;
}

// A decoder: each sequence through a paged cache made for this call, released once pooled.
std::vector<std::vector<float>> decoder_embeddings(const Model& model,
                                                   const std::vector<std::vector<int32_t>>& batch,
                                                   const EmbedSettings& es, std::optional<KvType> kv_type,
                                                   int64_t max_len, const ModelGuard& guard) {
  const int64_t d = model.config().n_embd;
  std::vector<std::vector<float>> out(batch.size(), std::vector<float>(d));

  // A small paged cache for this call only: room for the longest sequence plus one batch of
  // others (can_fit below stops a batch early when the block rounding of many short ones does
  // not fit). Sequences are released as soon as they are pooled.
  const int64_t budget = std::max<int64_t>(1, model.options().max_batch);
  KvOptions ko;
  ko.layout = KvLayout::Paged;
  ko.type = kv_type;
  ko.capacity = max_len;
  ko.pool_tokens = max_len + budget + 16 * 16;
  std::unique_ptr<KvCache> kv = KvCache::for_model(model, ko);

  std::vector<int64_t> done(batch.size(), 0);          // tokens already in the cache
  std::vector<std::vector<float>> rows(batch.size());  // mean pooling: the rows so far
  std::vector<SeqInput> items;
  std::vector<std::pair<int, int64_t>> lens;
  std::vector<float> hidden;
  size_t next = 0;  // the first sequence not yet pooled; at most it is part-way through
  while (next < batch.size()) {
    items.clear();
    lens.clear();
    int64_t left = budget, n_rows = 0;
    for (size_t s = next; s < batch.size() && left > 0; ++s) {
      const int64_t n = static_cast<int64_t>(batch[s].size()), m = std::min(n - done[s], left);
      lens.emplace_back(static_cast<int>(s), done[s] + m);
      if (!items.empty() && !kv->can_fit(lens)) break;
      SeqInput in;
      in.seq = static_cast<int>(s);
      in.tokens = std::span(batch[s]).subspan(done[s], m);
      in.logits = Want::None;
      const bool last = done[s] + m == n;
      in.hidden = es.pooling == Pooling::Mean ? Want::All : last ? Want::Last : Want::None;
      n_rows += in.hidden == Want::All ? m : in.hidden == Want::Last ? 1 : 0;
      items.push_back(in);
      left -= m;
    }
    hidden.resize(std::max<int64_t>(1, n_rows) * d);
    guard([&](Model& m) { m.forward(*kv, items, ForwardOut{nullptr, hidden.data()}); });
    const float* h = hidden.data();
    for (const SeqInput& in : items) {
      const size_t s = static_cast<size_t>(in.seq);
      const int64_t m = static_cast<int64_t>(in.tokens.size()), n = static_cast<int64_t>(batch[s].size());
      if (in.hidden == Want::All) {
        rows[s].insert(rows[s].end(), h, h + m * d);
        h += m * d;
      } else if (in.hidden == Want::Last) {
        std::memcpy(out[s].data(), h, d * sizeof(float));
        h += d;
      }
      done[s] += m;
      if (done[s] < n) continue;
      if (es.pooling == Pooling::Mean) {
        pool_rows(rows[s].data(), n, d, Pooling::Mean, out[s].data());
        std::vector<float>().swap(rows[s]);
      }
      if (es.normalize) l2_normalize(out[s]);
      kv->release(in.seq);
      next = s + 1;
    }
  }
  return out;
}

}  // namespace

std::vector<std::vector<float>> embeddings(Model& model, const std::vector<std::vector<int32_t>>& batch,
                                           const EmbedOptions& opts) {
  return embeddings(static_cast<const Model&>(model), batch, opts,
                    [&model](const std::function<void(Model&)>& step) { step(model); });
}

std::vector<std::vector<float>> embeddings(const Model& model, const std::vector<std::vector<int32_t>>& batch,
                                           const EmbedOptions& opts, const ModelGuard& guard) {
  const EmbedSettings es = embed_settings(model, opts);
  const int64_t max_len = check_inputs(model, batch);
  if (batch.empty()) return {};
  if (model.config().is_encoder()) return encoder_embeddings(model, batch, es, guard);
  return decoder_embeddings(model, batch, es, opts.kv_type, max_len, guard);
}

}  // namespace ferrum
