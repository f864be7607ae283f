// A weight matrix of a linear layer as the forward pass uses it: one or more row blocks of the file
// stacked in order (q, k, v -> one matrix), multiplied in one call. When the kernels allow it (Fast
// precision, a tier with packed kernels: every SIMD tier; a packable type, rows in
// multiples of 16) consecutive blocks of one type are also repacked into one PackedMatrix at load
// (q and k of Q4_K together when v is Q6_K). Every packed tier reads the same layout, and the
// file's rows stay as they are (the embedding lookup and the scalar kernels read them), so forcing
// another ISA later still works.
// With WeightRounding::Bf16 (--precision bf16) F16 and F32 parts are multiplied as BF16: rounded
// while they are packed, or, where a part is not packed, held as an owned BF16 copy. (A part packed
// this way falls back to the file's rows if another ISA is forced after load.)
// Act-order GPTQ parts (TensorView::input_order) multiply their input gathered in that order.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "kernels/cpu/bf16_round.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/packed.h"

namespace ferrum::kernels {

class Linear {
 public:
  Linear() = default;
  // All parts have the same number of columns. FERRUM_PACK=0 in the environment disables packing.
  Linear(std::vector<TensorView> parts, Precision prec, ThreadPool& pool,
         WeightRounding rounding = WeightRounding::None);

  int64_t rows() const { return rows_; }
  int64_t cols() const { return parts_.empty() ? 0 : parts_[0].cols(); }
  const std::vector<TensorView>& parts() const { return parts_; }
  // The packed matrix when all rows are in one (null otherwise).
  const PackedMatrix* packed() const {
    return segments_.size() == 1 && segments_[0].packed ? segments_[0].packed.get() : nullptr;
  }
  // Whether parts()[i] is held in memory of its own (a packed matrix or a BF16 copy): its file
  // rows are then only a fallback.
  bool part_copied(size_t i) const;
  // Bytes of weights one full product reads.
  size_t weight_bytes() const;

  // y[t*ldy + o] = sum_i W[o,i] x[t*ldx + i], o over all rows of all parts.
  void forward(const float* x, int64_t ldx, int64_t n_tok, float* y, int64_t ldy, ThreadPool& pool,
               Precision prec, MatmulScratch& scratch) const;

 private:
  // Rows from row0 on: one packed matrix, or the file tensor parts_[part].
  struct Segment {
    int64_t row0 = 0;
    std::shared_ptr<const PackedMatrix> packed;
    size_t part = 0;
  };
  std::vector<TensorView> parts_;   // as given (the file's tensors)
  std::vector<TensorView> rowwise_;  // what the row-major kernels multiply: parts_, or BF16 copies of them
  std::vector<std::shared_ptr<const uint8_t>> copies_;  // the BF16 copies' memory
  std::vector<int64_t> offsets_;                         // first row of each part
  std::vector<Segment> segments_;
  const int32_t* input_order_ = nullptr;  // the parts' TensorView::input_order (one for all)
  int64_t rows_ = 0;
  std::string label_;  // "Q4_K 3072x2048": the profile's name for this product
};

}  // namespace ferrum::kernels
