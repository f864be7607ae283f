// A model split across ranks by tensor parallelism: `mpirun -np N ferrum run MODEL --tp N`. Each
// rank reads only its slice of every weight matrix (its attention heads, its share of the FFN
// width and of the vocabulary) and holds only its heads' KV cache, so N hosts add their memory
// bandwidth to one decode. Or the ranks as threads of this process (in_process: the same code over
// an in-process transport, for tests).
#pragma once

#include <memory>
#include <string>

#include "dist/transport.h"
#include "ferrum/model.h"
#include "loading/loader.h"

namespace ferrum::dist {

struct TensorParallelOptions {
  int ranks = 1;
  bool in_process = false;
};

// Rank 0: the model (its share here, the others on the other ranks), which stops the other ranks
// when destroyed. Ranks > 0: serve their share until rank 0 stops, then return null. Prints the
// split to stderr (rank 0).
std::unique_ptr<Model> load_tensor_parallel(const std::string& path, const ModelOptions& opts,
                                            const TensorParallelOptions& p);

// One group of tensor-parallel ranks running the part of the model `opts` names (the whole network,
// or a pipeline stage: its layer range, with or without the head).
// In process: ranks 1..n-1 as threads; returns rank 0's model, which ends them when destroyed.
std::unique_ptr<Model> tensor_parallel_group_in_process(const std::string& path, const ModelOptions& opts,
                                                        int n);
// Over `group` (owned: kept by rank 0's model): the group's rank 0 gets its model; the others serve
// their share until rank 0 stops, then get null.
std::unique_ptr<Model> tensor_parallel_group(ModelFiles files, const ModelOptions& opts, Transport& group,
                                             std::unique_ptr<Transport> owned);

}  // namespace ferrum::dist
