#include "dist/pipeline_model.h"

#include <algorithm>
#include <cstring>

#include "core/fail.h"

namespace ferrum::dist {

PipelineModel::PipelineModel(std::unique_ptr<Model> first, Transport& t, bool bf16_rows)
    : first_(std::move(first)), t_(t), opts_(first_->options()), bf16_rows_(bf16_rows) {
  if (t_.rank() != 0 || t_.size() < 2) fail("a pipeline's model runs on rank 0 of at least 2");
  if (first_->layer_begin() != 0 || first_->options().lm_head)
    fail("a pipeline's first stage starts at layer 0 and ends before the LM head");
  opts_.layer_end = first_->config().n_layer;
  opts_.lm_head = true;
}

PipelineModel::~PipelineModel() {
  stop();
}

void PipelineModel::stop() {
  if (stopped_) return;
  stopped_ = true;
  try {
    t_.send(1, encode_stop());
  } catch (...) {  // nothing to tell anyone at exit
  }
}

void PipelineModel::track_cache(KvCache& kv) const {
  std::lock_guard lk(mu_);
  const int id = next_id_++;
  auto it = std::find_if(ids_.begin(), ids_.end(), [&](const auto& p) { return p.first == &kv; });
  if (it != ids_.end())
    it->second = id;  // a new cache where a dropped one was
  else
    ids_.push_back({&kv, id});
  kv.set_journal(&journal_, id);
}

int PipelineModel::cache_id(const KvCache& kv) const {
  std::lock_guard lk(mu_);
  for (const auto& [p, id] : ids_)
    if (p == &kv) return id;
  fail("pipeline: this cache was not made by KvCache::for_model for this model");
}

void PipelineModel::forward(KvCache& kv, std::span<const SeqInput> batch, ForwardOut out) {
  if (broken_) fail("pipeline: an earlier pass failed, so the stages no longer hold the same caches");
  if (batch.empty()) return;
  const int64_t d = config().n_embd, V = config().n_vocab;
  // Rank 0's layers: every position's residual row goes on. Its own cache is written here, so a
  // batch that does not fit fails before anything is sent.
  int64_t total = 0;
  for (const SeqInput& it : batch) total += it.size(d);
  local_.assign(batch.begin(), batch.end());
  for (SeqInput& it : local_) {
    if (it.lora) fail("pipeline: LoRA adapters do not run over a pipeline yet");
    it.logits = Want::None;
    it.hidden = Want::All;
  }
  rows_.resize(total * d);
  first_->forward(kv, local_, ForwardOut{nullptr, rows_.data()});

  batch_.cache = cache_id(kv);
  batch_.bf16_rows = bf16_rows_;
  batch_.ops = journal_.take();
  batch_.items.clear();
  batch_.ids.clear();
  int64_t logit_rows = 0, hidden_rows = 0;
  for (const SeqInput& it : batch) {
    const int64_t n = it.size(d);
    batch_.items.push_back({it.seq, n, it.logits, it.hidden});
    if (!it.tokens.empty())
      batch_.ids.insert(batch_.ids.end(), it.tokens.begin(), it.tokens.end());
    else if (!it.cache_ids.empty())
      batch_.ids.insert(batch_.ids.end(), it.cache_ids.begin(), it.cache_ids.end());
    else
      batch_.ids.insert(batch_.ids.end(), n, -1);
    logit_rows += it.logits == Want::All ? n : it.logits == Want::Last;
    hidden_rows += it.hidden == Want::All ? n : it.hidden == Want::Last;
  }
  batch_.rows.swap(rows_);
  broken_ = true;  // until the last stage answers
  t_.send(1, encode_forward(batch_));
  batch_.rows.swap(rows_);
  const Bytes reply = t_.recv(t_.size() - 1);
  if (kind_of(reply) == MsgKind::Error) fail("{}", decode_error(reply));
  if (kind_of(reply) != MsgKind::Result) fail("pipeline: unexpected answer from rank {}", t_.size() - 1);
  decode_result(reply, logits_, hidden_);
  if (static_cast<int64_t>(logits_.size()) != logit_rows * V ||
      static_cast<int64_t>(hidden_.size()) != hidden_rows * d)
    fail("pipeline: the last stage answered {} logit and {} hidden floats for {} and {} rows", logits_.size(),
         hidden_.size(), logit_rows, hidden_rows);
  broken_ = false;
  if (out.logits && !logits_.empty()) std::memcpy(out.logits, logits_.data(), logits_.size() * sizeof(float));
  if (out.hidden && !hidden_.empty()) std::memcpy(out.hidden, hidden_.data(), hidden_.size() * sizeof(float));
}

}  // namespace ferrum::dist
