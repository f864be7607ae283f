#include "dist/pipeline_model.h"

#include <algorithm>
#include <cstring>

#include "core/fail.h"
#include "dist/lora_message.h"
#include "ferrum/error.h"

namespace ferrum::dist {

PipelineModel::PipelineModel(std::unique_ptr<Model> first, Transport& t, bool bf16_rows, int micro_batches)
    : first_(std::move(first)),
      t_(t),
      opts_(first_->options()),
      bf16_rows_(bf16_rows),
      micro_batches_(std::max(1, micro_batches)) {
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
    while (!passes_.empty()) receive();  // the last stage's answers are taken before it stops
    t_.send(1, encode_stop());
  } catch (...) {  // nothing to tell anyone at exit
  }
}

// The batch in micro-batches of about equal token counts, items cut at token boundaries (a
// sequence's chunks go in consecutive micro-batches, in order). Rows come out in the batch's order.
void PipelineModel::split(std::span<const SeqInput> batch, int64_t total, int parts) {
  const int64_t d = config().n_embd;
  const int64_t m = std::max<int64_t>(1, std::min<int64_t>(parts, total));
  const int64_t per = (total + m - 1) / m;
  micro_.assign(1, {});
  int64_t room = per;
  for (const SeqInput& it : batch) {
    const int64_t n = it.size(d);
    for (int64_t at = 0; at < n;) {
      if (room == 0) micro_.emplace_back(), room = per;
      const int64_t k = std::min(room, n - at);
      const bool end = at + k == n;
      SeqInput sub = it;
      if (!it.tokens.empty()) sub.tokens = it.tokens.subspan(at, k);
      if (!it.embeds.empty()) sub.embeds = it.embeds.subspan(at * d, k * d);
      if (!it.cache_ids.empty()) sub.cache_ids = it.cache_ids.subspan(at, k);
      sub.logits = it.logits == Want::Last && !end ? Want::None : it.logits;
      sub.hidden = it.hidden == Want::Last && !end ? Want::None : it.hidden;
      micro_.back().push_back(sub);
      at += k;
      room -= k;
    }
  }
}

// Rank 0's layers over one micro-batch, then its rows to rank 1 (not waiting for an answer).
void PipelineModel::send_micro(KvCache& kv, std::span<const SeqInput> items, bool with_ops) {
  const int64_t d = config().n_embd;
  int64_t total = 0;
  local_.assign(items.begin(), items.end());
  for (SeqInput& it : local_) {  // every position's residual row goes on
    total += it.size(d);
    it.logits = Want::None;
    it.hidden = Want::All;
  }
  batch_.rows.resize(total * d);
  first_->forward(kv, local_, ForwardOut{nullptr, batch_.rows.data()});
  // Until the pass is sent whole: cut short, it would leave the later stages' caches behind rank
  // 0's (a first micro-batch that fails changes nothing: its forward is all or nothing).
  broken_ = true;
  batch_.cache = book_.id(kv);
  batch_.bf16_rows = bf16_rows_;
  batch_.ops = with_ops ? book_.take() : std::vector<KvOp>{};
  batch_.adapters.clear();
  batch_.items.clear();
  batch_.ids.clear();
  for (const SeqInput& it : items) {
    const int64_t n = it.size(d);
    batch_.items.push_back({it.seq, n, it.logits, it.hidden, false, it.lora ? it.lora->id : 0});
    // An adapter goes down the pipeline with the first micro-batch that uses it (micro-batches
    // reach every rank in order).
    if (it.lora && adapters_sent_.insert(it.lora->id).second)
      batch_.adapters.push_back(encode_adapter(*it.lora));
    if (!it.tokens.empty())
      batch_.ids.insert(batch_.ids.end(), it.tokens.begin(), it.tokens.end());
    else if (!it.cache_ids.empty())
      batch_.ids.insert(batch_.ids.end(), it.cache_ids.begin(), it.cache_ids.end());
    else
      batch_.ids.insert(batch_.ids.end(), n, -1);
  }
  t_.send(1, encode_forward(batch_));
}

uint64_t PipelineModel::begin_forward(KvCache& kv, std::span<const SeqInput> batch, ForwardOut out) {
  if (broken_) fail("pipeline: an earlier pass failed, so the stages no longer hold the same caches");
  if (batch.empty()) return 0;
  const int64_t d = config().n_embd;
  int64_t total = 0;
  bool prompt = false;
  fit_.clear();
  for (const SeqInput& it : batch) {
    total += it.size(d);
    prompt = prompt || it.size(d) > 1;
    fit_.push_back({it.seq, kv.seq_len(it.seq) + it.size(d)});
  }
  // All or nothing: the whole batch fits (every rank's cache holds the same) before a micro-batch runs.
  if (!kv.can_fit(fit_))
    throw CapacityError(fmt::format("KV cache: the {} new positions of this batch do not fit", total));
  // A pass of one position per sequence (a decode step) goes whole: cut up, each part would run at
  // a smaller batch, whose per-token cost is higher; passes in flight keep the stages busy instead.
  split(batch, total, prompt ? micro_batches_ : 1);
  Pass p;
  p.id = next_pass_++;
  p.out = out;
  for (const auto& micro : micro_) {
    int64_t lr = 0, hr = 0;
    for (const SeqInput& it : micro) {
      lr += rows_wanted(it.logits, it.size(d));
      hr += rows_wanted(it.hidden, it.size(d));
    }
    p.rows.push_back({lr, hr});
  }
  // While rank 1 runs micro-batch k, this rank runs k + 1: the stages work at once.
  for (size_t m = 0; m < micro_.size(); ++m) send_micro(kv, micro_[m], m == 0);
  broken_ = false;
  passes_.push_back(std::move(p));
  return passes_.back().id;
}

void PipelineModel::receive() {
  const int64_t d = config().n_embd, V = config().n_vocab;
  Pass& p = passes_.front();
  const Bytes reply = t_.recv(t_.size() - 1);
  const auto [lr, hr] = p.rows[p.answered++];
  if (kind_of(reply) == MsgKind::Error) {
    if (p.error.empty()) p.error = decode_error(reply);
  } else if (kind_of(reply) != MsgKind::Result) {
    p.error = fmt::format("pipeline: unexpected answer from rank {}", t_.size() - 1);
  } else {
    const ResultView v = view_result(reply);  // copied from the message straight to the caller's rows
    if (static_cast<int64_t>(v.n_logits) != lr * V || static_cast<int64_t>(v.n_hidden) != hr * d) {
      p.error =
          fmt::format("pipeline: the last stage answered {} logit and {} hidden floats for {} and {} rows",
                      v.n_logits, v.n_hidden, lr, hr);
    } else {
      if (p.out.logits && lr)
        std::memcpy(p.out.logits + p.logit_at * V, v.logits, v.n_logits * sizeof(float));
      if (p.out.hidden && hr)
        std::memcpy(p.out.hidden + p.hidden_at * d, v.hidden, v.n_hidden * sizeof(float));
    }
    p.logit_at += lr;
    p.hidden_at += hr;
  }
  if (p.answered < p.rows.size()) return;
  // A stage failed: the stages' caches may no longer agree, so every later pass fails too.
  if (!p.error.empty()) broken_ = true;
  answered_[p.id] = std::move(p.error);
  passes_.pop_front();
}

void PipelineModel::end_forward(uint64_t pass) {
  if (pass == 0) return;
  while (!answered_.contains(pass)) {
    if (passes_.empty() || passes_.front().id > pass) fail("pipeline: pass {} is not in flight", pass);
    receive();
  }
  const std::string error = std::move(answered_[pass]);
  answered_.erase(pass);
  if (!error.empty()) fail("{}", error);
}

}  // namespace ferrum::dist
