#include "dist/tensor_parallel_model.h"

#include <exception>

#include "core/fail.h"
#include "dist/lora_message.h"

namespace ferrum::dist {

TensorParallelModel::TensorParallelModel(std::unique_ptr<Model> local, const ModelConfig& full,
                                         const TensorShares& shares, Transport& t)
    : local_(std::move(local)), full_(full), shares_(shares), t_(t) {  // owned_ set by the other constructor
  if (t_.rank() != 0 || t_.size() < 2) fail("a tensor-parallel model runs on rank 0 of at least 2");
}

TensorParallelModel::~TensorParallelModel() {
  stop();
}

void TensorParallelModel::stop() {
  if (stopped_) return;
  stopped_ = true;
  try {
    for (int r = 1; r < t_.size(); ++r) t_.send(r, encode_stop());
  } catch (...) {  // nothing to tell anyone at exit
  }
}

void TensorParallelModel::send_batch(KvCache& kv, std::span<const SeqInput> batch) {
  const int64_t d = config().n_embd;
  batch_.cache = book_.id(kv);
  batch_.ops = book_.take();
  batch_.adapters.clear();
  batch_.items.clear();
  batch_.ids.clear();
  batch_.rows.clear();
  for (const SeqInput& it : batch) {
    const int64_t n = it.size(d);
    StageItem s{it.seq, n, it.logits, Want::None, it.tokens.empty(), it.lora ? it.lora->id : 0};
    batch_.items.push_back(s);
    if (it.lora && adapters_sent_.insert(it.lora->id).second)
      batch_.adapters.push_back(encode_adapter(*it.lora));
    if (!it.tokens.empty()) {
      batch_.ids.insert(batch_.ids.end(), it.tokens.begin(), it.tokens.end());
      continue;
    }
    batch_.rows.insert(batch_.rows.end(), it.embeds.begin(), it.embeds.end());
    if (!it.cache_ids.empty())
      batch_.ids.insert(batch_.ids.end(), it.cache_ids.begin(), it.cache_ids.end());
    else
      batch_.ids.insert(batch_.ids.end(), n, -1);
  }
  const Bytes m = encode_forward(batch_);
  for (int r = 1; r < t_.size(); ++r) t_.send(r, m);
}

void TensorParallelModel::forward(KvCache& kv, std::span<const SeqInput> batch, ForwardOut out) {
  if (broken_)
    fail("--tp: an earlier pass failed on another rank, so the ranks no longer hold the same caches");
  if (batch.empty()) return;
  local_batch_.assign(batch.begin(), batch.end());
  for (SeqInput& it : local_batch_)
    if (it.lora) it.lora = share_of(*it.lora);
  send_batch(kv, batch);
  // Every rank checks the batch as this one does, so a bad batch fails on all of them before any
  // exchange, and their caches stay alike.
  std::exception_ptr local;
  try {
    local_->forward(kv, local_batch_, out);
  } catch (...) {
    local = std::current_exception();
  }
  std::string error;
  for (int r = 1; r < t_.size(); ++r) {
    const Bytes reply = t_.recv(r);
    if (kind_of(reply) == MsgKind::Error && error.empty()) error = decode_error(reply);
  }
  if (local) std::rethrow_exception(local);
  if (!error.empty()) {
    broken_ = true;
    fail("{}", error);
  }
}

// Rank 0's share of an adapter loaded for the whole model (made once per adapter).
const LoraAdapter* TensorParallelModel::share_of(const LoraAdapter& a) {
  auto& s = adapter_shares_[a.id];
  if (!s) s = shard_lora(a, full_, shares_);
  return s.get();
}

void TensorParallelWorker::run() {
  StageBatch b;
  for (;;) {
    const Bytes m = t_.recv(0);
    if (kind_of(m) == MsgKind::Stop) return;
    try {
      if (kind_of(m) != MsgKind::Forward) fail("unexpected message");
      decode_forward(m, b);
      caches_.replay(b.ops);
      for (const Bytes& a : b.adapters) {
        const std::shared_ptr<const LoraAdapter> full = decode_adapter(a);
        adapters_[full->id] = shard_lora(*full, full_, shares_);
      }
      forward(b);
    } catch (const std::exception& e) {
      t_.send(0, encode_error(fmt::format("--tp rank {}: {}", t_.rank(), e.what())));
      continue;
    }
    t_.send(0, encode_result({}, {}));
  }
}

void TensorParallelWorker::forward(const StageBatch& b) {
  const int64_t d = model_.config().n_embd;
  items_.clear();
  int64_t at = 0, row = 0;
  for (const StageItem& it : b.items) {
    if (at + it.n > static_cast<int64_t>(b.ids.size()) ||
        (it.rows_in && (row + it.n) * d > static_cast<int64_t>(b.rows.size())))
      fail("tensor-parallel message: items past the ids or rows it holds");
    SeqInput in;
    in.seq = it.seq;
    const std::span<const int32_t> ids = std::span(b.ids).subspan(at, it.n);
    if (it.rows_in) {
      in.embeds = std::span(b.rows).subspan(row * d, it.n * d);
      if (it.n > 0 && ids[0] >= 0) in.cache_ids = ids;
      row += it.n;
    } else {
      in.tokens = ids;
    }
    if (it.lora) {
      auto a = adapters_.find(it.lora);
      if (a == adapters_.end()) fail("rank 0 used LoRA adapter {} before sending it", it.lora);
      in.lora = a->second.get();
    }
    in.logits = it.logits;   // rank 0 gathers them
    in.hidden = Want::None;  // rank 0 holds the same rows
    items_.push_back(in);
    at += it.n;
  }
  if (items_.empty()) return;  // cache operations only
  model_.forward(caches_.get(b.cache), items_, ForwardOut{});
}

}  // namespace ferrum::dist
