// Rank 0 of a pipeline: the model the engine, the CLI and the library see. It runs the first
// stage (the embedding and the first layers) itself, sends each pass's hidden rows on to rank 1
// with the batch and the cache operations made since the last pass, and collects the last rank's
// logits. Several passes may be in flight (each stage working on another), and a pass with prompt
// chunks goes in micro-batches (sequences, or chunks of one prompt, in order), so that while one
// stage runs micro-batch k the stage before it runs k + 1.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "dist/cache_sync.h"
#include "dist/stage_message.h"
#include "dist/transport.h"
#include "ferrum/model.h"

namespace ferrum::dist {

class PipelineModel : public Model {
 public:
  // `first`: the stage of layers [0, b) without the LM head; t: rank 0's transport.
  // micro_batches: the most a pass is cut into (1: the stages take turns).
  PipelineModel(std::unique_ptr<Model> first, Transport& t, bool bf16_rows, int micro_batches);
  // The same over a transport it keeps (the stages' leaders, split from the MPI world).
  PipelineModel(std::unique_ptr<Model> first, std::unique_ptr<Transport> t, bool bf16_rows, int micro_batches)
      : PipelineModel(std::move(first), *t, bf16_rows, micro_batches) {
    owned_ = std::move(t);
  }
  ~PipelineModel() override;  // tells the other ranks to stop
  // Tells the other ranks to stop (once; the destructor does it too).
  void stop();

  const ModelConfig& config() const override { return first_->config(); }
  const ModelOptions& options() const override { return opts_; }
  void forward(KvCache& kv, std::span<const SeqInput> batch, ForwardOut out) override {
    end_forward(begin_forward(kv, batch, out));
  }
  // One pass per stage keeps every stage busy.
  int max_passes_in_flight() const override { return t_.size(); }
  uint64_t begin_forward(KvCache& kv, std::span<const SeqInput> batch, ForwardOut out) override;
  void end_forward(uint64_t pass) override;
  void embed_tokens(std::span<const int32_t> ids, float* rows) const override {
    first_->embed_tokens(ids, rows);
  }
  size_t weight_bytes() const override { return first_->weight_bytes(); }
  ModelStats stats() const override { return first_->stats(); }
  std::pair<int, int> cache_layers() const override { return first_->cache_layers(); }
  int cache_heads() const override { return first_->cache_heads(); }
  // Journals for the later stages, and for the first stage's own ranks when it is split over them.
  void track_cache(KvCache& kv) const override {
    first_->track_cache(kv);
    book_.track(kv);
  }

 private:
  // A pass begun and not yet ended: where its outputs go, and the rows each of its micro-batches
  // brings back (in order: the last stage answers micro-batches as they were sent).
  struct Pass {
    uint64_t id = 0;
    ForwardOut out;
    std::vector<std::pair<int64_t, int64_t>> rows;  // logit and hidden rows per micro-batch
    size_t answered = 0;
    int64_t logit_at = 0, hidden_at = 0;
    std::string error;
  };
  void split(std::span<const SeqInput> batch, int64_t total, int parts);
  void send_micro(KvCache& kv, std::span<const SeqInput> items, bool with_ops);
  void receive();  // the last stage's next answer, into the oldest pass

  std::unique_ptr<Transport> owned_;  // destroyed last (after stop() used it)
  std::unique_ptr<Model> first_;
  Transport& t_;
  ModelOptions opts_;  // the whole network: layers [0, n_layer) and the LM head
  bool bf16_rows_;
  int micro_batches_;
  bool broken_ = false, stopped_ = false;
  mutable CacheJournalBook book_;     // what callers did to this model's caches
  std::set<uint64_t> adapters_sent_;  // LoRA adapters the other ranks hold
  std::deque<Pass> passes_;           // in flight, oldest first
  std::map<uint64_t, std::string> answered_;  // passes answered before end_forward asked: their error
  uint64_t next_pass_ = 1;
  StageBatch batch_;
  std::vector<std::vector<SeqInput>> micro_;
  std::vector<std::pair<int, int64_t>> fit_;
  std::vector<SeqInput> local_;
};

}  // namespace ferrum::dist
