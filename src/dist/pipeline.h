// A model split into pipeline stages over ranks: `mpirun -np N ferrum run MODEL --pipeline N` (each
// rank loads only its layers: a model larger than one host's memory runs across hosts), or the
// stages as threads of this process (in_process: the same code over an in-process transport, for
// tests and for checking a split without mpirun).
#pragma once

#include <memory>
#include <string>

#include "ferrum/model.h"

namespace ferrum::dist {

struct PipelineOptions {
  int stages = 1;
  std::string split;       // "10,14": layers per stage; empty: balanced by weight bytes
  bool bf16_rows = false;  // hidden rows travel as BF16 (half the bytes, rounded)
  int micro_batches = 0;   // the most a pass is cut into; 0: one per stage
  int tensor_parallel = 1;  // each stage over this many tensor-parallel ranks (mpirun -np stages * tp)
  bool in_process = false;
};

// Rank 0: the model (its first stage here, the others on the other ranks), which stops the other
// ranks when destroyed. Ranks > 0: serve their stage until rank 0 stops, then return null.
// Prints the split to stderr (rank 0).
std::unique_ptr<Model> load_pipeline(const std::string& path, const ModelOptions& opts,
                                     const PipelineOptions& p);

}  // namespace ferrum::dist
