// Keeping the other ranks' KV caches equal to rank 0's (pipeline stages and tensor-parallel ranks
// alike): rank 0 numbers the caches made for its model and journals what callers do to them; each
// other rank replays that journal, sent with the next forward pass, on caches of its own.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "ferrum/kv_cache.h"
#include "ferrum/model.h"

namespace ferrum::dist {

// Rank 0's side.
class CacheJournalBook {
 public:
  // Numbers a cache made for the model (Model::track_cache) and journals its operations.
  void track(KvCache& kv);
  int id(const KvCache& kv) const;  // throws for a cache not tracked
  // The operations since the last call.
  std::vector<KvOp> take() { return journal_.take(); }

 private:
  KvJournal journal_;
  mutable std::mutex mu_;  // ids_ (caches are made on any thread)
  std::vector<std::pair<const KvCache*, int>> ids_;
  int next_id_ = 0;
};

// Every other rank's side: caches of its own, made for its model.
class CacheReplicas {
 public:
  explicit CacheReplicas(const Model& model) : model_(model) {}
  void replay(const std::vector<KvOp>& ops);
  KvCache& get(int id);

 private:
  const Model& model_;
  std::map<int, std::unique_ptr<KvCache>> caches_;
};

}  // namespace ferrum::dist
