#include "kernels/cpu/linear.h"

#include <cstdlib>
#include <cstring>

#include "ferrum/error.h"

namespace ferrum::kernels {
namespace {

bool packing_enabled() {
  const char* env = std::getenv("FERRUM_PACK");
  return !(env && std::strcmp(env, "0") == 0);
}

}  // namespace

Linear::Linear(std::vector<TensorView> parts, Precision prec, ThreadPool& pool) : parts_(std::move(parts)) {
  if (parts_.empty()) fail("Linear: no weight tensors");
  bool pack = prec == Precision::Fast && packed_kernels_active() && packing_enabled();
  for (const TensorView& p : parts_) {
    if (p.cols() != parts_[0].cols())
      fail("tensor '{}' has {} inputs per row, but '{}' (fused with it) has {}", p.name, p.cols(), parts_[0].name,
           parts_[0].cols());
    offsets_.push_back(rows_);
    rows_ += p.rows();
    pack = pack && p.type == parts_[0].type && packable(p.type) && p.rows() % kPackRows == 0 &&
           p.cols() % dtype_info(p.type).block_size == 0;
  }
  if (pack) packed_ = pack_matrix(parts_, pool);
}

size_t Linear::weight_bytes() const {
  if (packed_) return packed_->bytes();
  size_t n = 0;
  for (const TensorView& p : parts_) n += p.row_bytes() * static_cast<size_t>(p.rows());
  return n;
}

void Linear::forward(const float* x, int64_t ldx, int64_t n_tok, float* y, int64_t ldy, ThreadPool& pool,
                     Precision prec, MatmulScratch& scratch) const {
  if (packed_ && prec == Precision::Fast && packed_kernels_active()) {
    matmul_packed(*packed_, x, ldx, n_tok, y, ldy, pool, scratch);
    return;
  }
  for (size_t i = 0; i < parts_.size(); ++i)
    matmul(parts_[i], x, ldx, n_tok, y + offsets_[i], ldy, pool, prec, scratch);
}

}  // namespace ferrum::kernels
