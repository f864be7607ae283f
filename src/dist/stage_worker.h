// A pipeline stage after the first (ranks 1..N-1): receives each forward pass from the rank
// before it, replays rank 0's cache operations on caches of its own, runs its layers over the
// rows it got and sends its hidden rows on (or, on the last rank, the logits and hidden rows the
// batch asked for back to rank 0), until rank 0 says stop. An error is passed down the pipeline to
// rank 0, which reports it.
#pragma once

#include <map>
#include <memory>

#include "dist/cache_sync.h"
#include "dist/stage_message.h"
#include "dist/transport.h"
#include "ferrum/model.h"

namespace ferrum::dist {

class StageWorker {
 public:
  // `model`: this rank's stage (layers of its range; the LM head on the last rank).
  StageWorker(Model& model, Transport& t);
  // Serves forward passes until rank 0 sends Stop.
  void run();

 private:
  void forward(StageBatch& b);  // runs the stage; b.rows become its output rows

  Model& model_;
  Transport& t_;
  bool last_;
  CacheReplicas caches_;
  std::map<uint64_t, std::shared_ptr<const LoraAdapter>> adapters_;  // by rank 0's adapter id
  std::vector<SeqInput> items_;
  std::vector<float> out_rows_, logits_, hidden_;
};

}  // namespace ferrum::dist
