// One forward step's LoRA work: the batch's rows grouped by adapter, and the low-rank products
// y[rows] += scale * (x[rows] A^T) B^T added next to each base product. Every row's result is
// computed the same way whatever else is in the batch (the matmul kernels give a row the same
// sums in any tile), so a sequence's output does not depend on its neighbours; rows without an
// adapter are never touched.
#pragma once

#include <span>
#include <vector>

#include "core/thread_pool.h"
#include "ferrum/model.h"
#include "kernels/cpu/lowrank.h"
#include "kernels/cpu/matmul.h"
#include "models/lora_adapter.h"

namespace ferrum {

class LoraBatch {
 public:
  // Groups the rows of `batch` (in batch order, each item's rows consecutive) by adapter; checks
  // that every adapter was loaded for a model of `shape`.
  void plan(std::span<const SeqInput> batch, int64_t n_embd, const LoraAdapter::Shape& shape);
  bool active() const { return !groups_.empty(); }

  // Adds the products of layer `layer`'s matrices at `site` to the rows of y (n rows of stride ldy)
  // of the sequences that use an adapter; x: the base product's input rows (stride ldx).
  void apply(int layer, LoraSite site, const float* x, int64_t ldx, float* y, int64_t ldy, ThreadPool& pool,
             kernels::Precision prec, kernels::MatmulScratch& scratch);

 private:
  struct Group {
    const LoraAdapter* adapter = nullptr;
    std::vector<int64_t> rows;
  };
  std::vector<Group> groups_;
  std::vector<float> xg_, u_;  // grow-only: gathered inputs, x A^T (then scaled)
};

}  // namespace ferrum
