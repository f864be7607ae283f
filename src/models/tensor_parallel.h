// Tensor parallelism: a decoder's every layer split across ranks (Megatron-style). Rank r of N holds
// its share of the attention heads (q, k and v rows; the columns of the output projection that
// read them), of the FFN width (gate and up rows; down's columns) and of the LM head's vocabulary
// rows; norms and embeddings are whole on every rank. A block's output is then a partial sum on
// each rank: the group adds them (one exchange after attention, one after the FFN), and the
// ranks' logit columns are gathered on rank 0. The model code sees only this interface; src/dist
// implements it over MPI or over threads of one process.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "ferrum/model_config.h"
#include "models/lora_adapter.h"
#include "models/weights.h"

namespace ferrum {

class TensorParallelGroup {
 public:
  virtual ~TensorParallelGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // x: this rank's n partial sums; on return the sum over the ranks, the same bits on every rank
  // (added in rank order).
  virtual void sum(float* x, int64_t n) = 0;
  // Each rank's `rows` x cols[rank] block (row-major); rank 0 receives them side by side in `out`
  // (row stride ld, rank r's block after the columns of the ranks before it); other ranks' `out` is
  // not touched.
  virtual void gather_columns(const float* part, int64_t rows, std::span<const int64_t> cols, float* out,
                              int64_t ld) = 0;
};

// [begin, end) of rank r's share when n items are split over `parts` ranks in whole granules of
// `granule` items (n a multiple of it): as even as the granules allow.
struct ShareRange {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};
ShareRange share_of(int64_t n, int parts, int r, int64_t granule = 1);

// What rank r of `size` holds of a model: its query and key/value heads, its share of the FFN
// width (or of every expert's), its LM head rows.
struct TensorShares {
  ShareRange q, kv;  // heads
  ShareRange ff;     // FFN width (dense layers)
  ShareRange ff_expert;
  ShareRange vocab;
};

// Rank r's share of the model: replaces the split tensors of `w` by r's slices (row slices as views
// into the file, column slices copied on block boundaries) and makes `cfg` the share's shape
// (heads, FFN width). Throws naming what cannot be split that way (head counts, a tensor whose
// blocks straddle the cut, a model kind not split yet).
// The part of the network a share is cut from: a layer range (a pipeline stage), with the LM head or not.
struct ShardPart {
  int layer_begin = 0, layer_end = -1;  // -1: the last layer
  bool head = true;
};
// Returns what the rank holds (in the whole model's terms: shard_lora cuts adapters by it).
TensorShares shard_weights(ModelConfig& cfg, WeightSet& w, int rank, int size, const ShardPart& part = {});

// Rank r's share of a LoRA adapter loaded for the whole model of config `full`: the B columns of
// its q/k/v and gate/up outputs, the A columns of its attention-output and FFN-down inputs (whose
// products are then partial sums, added with the base model's). Keeps the adapter's id.
std::shared_ptr<const LoraAdapter> shard_lora(const LoraAdapter& a, const ModelConfig& full,
                                              const TensorShares& s);

// The rows of the LM head rank r computes (the vocabulary split over the ranks).
ShareRange vocab_share(const ModelConfig& full, int rank, int size);

// The weight bytes rank r holds under `size`-way tensor parallelism (its slices and the whole
// tensors every rank keeps), from the tensor directory alone.
uint64_t shard_bytes(const ModelConfig& cfg, const WeightSet& w, int rank, int size,
                     const ShardPart& part = {});

}  // namespace ferrum
