#include "dist/cache_sync.h"

#include <algorithm>

#include "core/fail.h"

namespace ferrum::dist {

void CacheJournalBook::track(KvCache& kv) {
  std::lock_guard lk(mu_);
  const int id = next_id_++;
  auto it = std::find_if(ids_.begin(), ids_.end(), [&](const auto& p) { return p.first == &kv; });
  if (it != ids_.end())
    it->second = id;  // a new cache where a dropped one was
  else
    ids_.push_back({&kv, id});
  kv.set_journal(&journal_, id);
}

int CacheJournalBook::id(const KvCache& kv) const {
  std::lock_guard lk(mu_);
  for (const auto& [p, id] : ids_)
    if (p == &kv) return id;
  fail("this cache was not made by KvCache::for_model for this model (a pipeline's or --tp's)");
}

KvCache& CacheReplicas::get(int id) {
  auto it = caches_.find(id);
  if (it == caches_.end()) fail("rank 0 used cache {} before creating it", id);
  return *it->second;
}

void CacheReplicas::replay(const std::vector<KvOp>& ops) {
  for (const KvOp& op : ops) {
    switch (op.kind) {
      case KvOp::Kind::Create:
        caches_[op.cache] = KvCache::for_model(model_, op.options);
        break;
      case KvOp::Kind::Drop:
        caches_.erase(op.cache);
        break;
      case KvOp::Kind::Truncate:
        get(op.cache).truncate(op.seq, op.n);
        break;
      case KvOp::Kind::Release:
        get(op.cache).release(op.seq);
        break;
      case KvOp::Kind::Reset:
        get(op.cache).reset();
        break;
      case KvOp::Kind::Reserve:
        get(op.cache).reserve(op.seq, op.n);
        break;
      case KvOp::Kind::Reuse: {
        const int64_t n = get(op.cache).reuse_prefix(op.seq, op.prompt, op.lora_id);
        if (n != op.n)
          fail("rank 0 reused {} cached tokens of sequence {}, this rank {}: the caches went apart", op.n,
               op.seq, n);
        break;
      }
    }
  }
}

}  // namespace ferrum::dist
