// Rank 0 of a tensor-parallel job: the model the engine, the CLI and the library see. Each pass
// goes to every other rank first (the batch, its token ids or input rows, and the cache
// operations made since the last pass); then every rank runs its share of every layer at once,
// adding the partial block outputs through the group, and rank 0 receives the logits.
#pragma once

#include <map>
#include <memory>
#include <set>

#include "dist/cache_sync.h"
#include "dist/stage_message.h"
#include "dist/transport.h"
#include "ferrum/model.h"
#include "models/tensor_parallel.h"

namespace ferrum::dist {

class TensorParallelModel : public Model {
 public:
  // `local`: rank 0's share (its options carry the group); full: the whole model's config; shares:
  // what rank 0 holds of it; t: rank 0's transport.
  TensorParallelModel(std::unique_ptr<Model> local, const ModelConfig& full, const TensorShares& shares,
                      Transport& t);
  // The same over a transport it keeps (a group split from the MPI world).
  TensorParallelModel(std::unique_ptr<Model> local, const ModelConfig& full, const TensorShares& shares,
                      std::unique_ptr<Transport> t)
      : TensorParallelModel(std::move(local), full, shares, *t) {
    owned_ = std::move(t);
  }
  ~TensorParallelModel() override;  // tells the other ranks to stop
  void stop();                      // once; the destructor does it too

  // The whole model's shape (what adapters and callers see); caches hold this rank's heads.
  const ModelConfig& config() const override { return full_; }
  int cache_heads() const override { return local_->config().n_head_kv; }
  const ModelOptions& options() const override { return local_->options(); }
  void forward(KvCache& kv, std::span<const SeqInput> batch, ForwardOut out) override;
  void embed_tokens(std::span<const int32_t> ids, float* rows) const override {
    local_->embed_tokens(ids, rows);
  }
  size_t weight_bytes() const override { return local_->weight_bytes(); }
  ModelStats stats() const override { return local_->stats(); }
  void track_cache(KvCache& kv) const override { book_.track(kv); }

 private:
  void send_batch(KvCache& kv, std::span<const SeqInput> batch);
  const LoraAdapter* share_of(const LoraAdapter& a);

  std::unique_ptr<Transport> owned_;  // destroyed last (after stop() used it)
  std::unique_ptr<Model> local_;
  ModelConfig full_;
  TensorShares shares_;
  std::map<uint64_t, std::shared_ptr<const LoraAdapter>> adapter_shares_;  // by adapter id
  std::set<uint64_t> adapters_sent_;
  std::vector<SeqInput> local_batch_;
  Transport& t_;
  bool broken_ = false, stopped_ = false;
  mutable CacheJournalBook book_;
  StageBatch batch_;
};

// Ranks 1..N-1: run each pass rank 0 sends with their share of the model, answering rank 0 with
// an empty result or their error, until rank 0 says stop.
class TensorParallelWorker {
 public:
  // model: this rank's share (of a model of config `full`, holding `shares` of it).
  TensorParallelWorker(Model& model, const ModelConfig& full, const TensorShares& shares, Transport& t)
      : model_(model), full_(full), shares_(shares), t_(t), caches_(model) {}
  void run();

 private:
  void forward(const StageBatch& b);

  Model& model_;
  ModelConfig full_;
  TensorShares shares_;
  std::map<uint64_t, std::shared_ptr<const LoraAdapter>> adapters_;  // this rank's shares, by rank 0's id
  Transport& t_;
  CacheReplicas caches_;
  std::vector<SeqInput> items_;
};

}  // namespace ferrum::dist
