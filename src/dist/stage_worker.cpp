#include "dist/stage_worker.h"

#include <string>

#include "core/fail.h"
#include "dist/lora_message.h"
#include "ferrum/error.h"

namespace ferrum::dist {

StageWorker::StageWorker(Model& model, Transport& t)
    : model_(model), t_(t), last_(t.rank() == t.size() - 1), caches_(model) {}

void StageWorker::run() {
  const int prev = t_.rank() - 1, next = last_ ? 0 : t_.rank() + 1;
  StageBatch b;
  for (;;) {
    Bytes m = t_.recv(prev);
    switch (kind_of(m)) {
      case MsgKind::Stop:
        if (!last_) t_.send(next, std::move(m));
        return;
      case MsgKind::Error:  // an earlier stage failed: rank 0 reports it
        t_.send(next, std::move(m));
        continue;
      case MsgKind::Forward:
        break;
      default:
        fail("pipeline rank {}: unexpected message", t_.rank());
    }
    try {
      decode_forward(m, b);
      caches_.replay(b.ops);
      for (const Bytes& a : b.adapters) {
        std::shared_ptr<const LoraAdapter> ad = decode_adapter(a);
        adapters_[ad->id] = std::move(ad);
      }
      forward(b);
    } catch (const std::exception& e) {
      t_.send(next, encode_error(fmt::format("pipeline rank {}: {}", t_.rank(), e.what())));
      continue;
    }
    if (last_) {
      t_.send(0, encode_result(logits_, hidden_));
    } else {
      b.rows.swap(out_rows_);
      t_.send(next, encode_forward(b));
    }
  }
}

void StageWorker::forward(StageBatch& b) {
  const int64_t d = model_.config().n_embd, V = model_.config().n_vocab;
  int64_t total = 0, logit_rows = 0, hidden_rows = 0;
  for (const StageItem& it : b.items) {
    total += it.n;
    logit_rows += rows_wanted(it.logits, it.n);
    hidden_rows += rows_wanted(it.hidden, it.n);
  }
  if (static_cast<int64_t>(b.rows.size()) != total * d || static_cast<int64_t>(b.ids.size()) != total)
    fail("pipeline message: {} rows and {} ids for {} positions", b.rows.size() / d, b.ids.size(), total);
  items_.clear();
  int64_t at = 0;
  for (const StageItem& it : b.items) {
    SeqInput in;
    in.seq = it.seq;
    in.embeds = std::span<const float>(b.rows).subspan(at * d, it.n * d);
    in.cache_ids = std::span<const int32_t>(b.ids).subspan(at, it.n);
    if (it.lora) {
      auto a = adapters_.find(it.lora);
      if (a == adapters_.end()) fail("rank 0 used LoRA adapter {} before sending it", it.lora);
      in.lora = a->second.get();
    }
    if (last_) {
      in.logits = it.logits;
      in.hidden = it.hidden;
    } else {
      in.logits = Want::None;
      in.hidden = Want::All;
    }
    items_.push_back(in);
    at += it.n;
  }
  if (items_.empty()) {  // cache operations only
    logits_.clear(), hidden_.clear(), out_rows_.clear();
    return;
  }
  KvCache& kv = caches_.get(b.cache);
  if (last_) {
    logits_.resize(logit_rows * V);
    hidden_.resize(hidden_rows * d);
    model_.forward(kv, items_, ForwardOut{logits_.data(), hidden_.data()});
  } else {
    out_rows_.resize(total * d);
    model_.forward(kv, items_, ForwardOut{nullptr, out_rows_.data()});
  }
}

}  // namespace ferrum::dist
