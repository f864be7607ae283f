#include "models/decoder_embed.h"

#include <algorithm>
#include <cstring>

#include "core/fail.h"
#include "ferrum/kv_cache.h"

namespace ferrum {

std::vector<std::vector<float>> decoder_embeddings(Model& model,
                                                   const std::vector<std::vector<int32_t>>& batch,
                                                   const DecoderEmbedOptions& opts) {
  return decoder_embeddings(static_cast<const Model&>(model), batch, opts,
                            [&model](const std::function<void(Model&)>& step) { step(model); });
}

std::vector<std::vector<float>> decoder_embeddings(const Model& model,
                                                   const std::vector<std::vector<int32_t>>& batch,
                                                   const DecoderEmbedOptions& o, const ModelGuard& guard) {
  const ModelConfig& cfg = model.config();
  if (model.layer_begin() != 0 || model.layer_end() != cfg.n_layer)
    fail("embeddings need the whole network (layers 0 to {}); this model is the stage [{}, {})", cfg.n_layer,
         model.layer_begin(), model.layer_end());
  if (o.pooling == Pooling::Cls) fail("a decoder has no CLS token: use last or mean pooling");
  const int64_t d = cfg.n_embd;
  int64_t max_len = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (batch[i].empty()) fail("input {} is empty", i);
    for (int32_t t : batch[i])
      if (t < 0 || t >= cfg.n_vocab)
        fail("input {}: token id {} is out of range (vocabulary has {} tokens)", i, t, cfg.n_vocab);
    max_len = std::max<int64_t>(max_len, static_cast<int64_t>(batch[i].size()));
  }
  std::vector<std::vector<float>> out(batch.size(), std::vector<float>(d));
  if (batch.empty()) return out;

  // A small paged cache for this call only: room for the longest sequence plus one batch of
  // others (can_fit below stops a batch early when the block rounding of many short ones does
  // not fit). Sequences are released as soon as they are pooled.
  const int64_t budget = std::max<int64_t>(1, model.options().max_batch);
  KvOptions ko;
  ko.layout = "paged";
  ko.type = o.kv_type;
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
      in.hidden = o.pooling == Pooling::Mean ? Want::All : last ? Want::Last : Want::None;
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
      if (o.pooling == Pooling::Mean) {
        pool_rows(rows[s].data(), n, d, Pooling::Mean, out[s].data());
        std::vector<float>().swap(rows[s]);
      }
      if (o.normalize) l2_normalize(out[s]);
      kv->release(in.seq);
      next = s + 1;
    }
  }
  return out;
}

}  // namespace ferrum
