#include "kernels/cpu/linear.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/fail.h"
#include "core/profile.h"

namespace ferrum::kernels {
namespace {

bool same_input_order(const TensorView& a, const TensorView& b) {
  if (a.input_order == b.input_order) return true;
  return a.input_order && b.input_order && std::equal(a.input_order, a.input_order + a.cols(), b.input_order);
}

}  // namespace

Linear::Linear(std::vector<TensorView> parts, Precision prec, ThreadPool& pool, WeightRounding rounding)
    : parts_(std::move(parts)) {
  if (parts_.empty()) fail("Linear: no weight tensors");
  for (const TensorView& p : parts_) {
    if (p.cols() != parts_[0].cols())
      fail("tensor '{}' has {} inputs per row, but '{}' (fused with it) has {}", p.name, p.cols(),
           parts_[0].name, parts_[0].cols());
    if (!same_input_order(p, parts_[0]))
      fail("tensor '{}' reads its inputs in another order (act-order) than '{}', fused with it", p.name,
           parts_[0].name);
    offsets_.push_back(rows_);
    rows_ += p.rows();
  }
  input_order_ = parts_[0].input_order;
  rowwise_ = parts_;
  for (const TensorView& p : parts_) {
    const std::string t = dtype_name(rounded_type(rounding, p.type));
    if (label_.find(t) == std::string::npos) label_ += (label_.empty() ? "" : "+") + t;
  }
  label_ += " " + std::to_string(rows_) + "x" + std::to_string(parts_[0].cols());
  const bool pack = prec == Precision::Fast && packed_kernels_active() && packing_enabled();
  auto type = [&](const TensorView& p) { return rounded_type(rounding, p.type); };
  auto packs = [&](const TensorView& p) {
    return pack && packable(type(p), p.rows(), p.cols()) && packed_kernel_for(type(p)) && packable_values(p);
  };
  // Runs of consecutive packable parts of one type become one packed segment.
  for (size_t i = 0; i < parts_.size();) {
    size_t j = i + 1;
    if (packs(parts_[i])) {
      while (j < parts_.size() && packs(parts_[j]) && type(parts_[j]) == type(parts_[i])) ++j;
      segments_.push_back(
          {offsets_[i], pack_matrix(std::span<const TensorView>(&parts_[i], j - i), pool, rounding), 0});
    } else {
      if (rounds_to_bf16(rounding, parts_[i].type)) {
        Bf16Copy c = copy_as_bf16(parts_[i], pool);
        rowwise_[i] = c.view;
        copies_.push_back(std::move(c.data));
      }
      segments_.push_back({offsets_[i], nullptr, i});
    }
    i = j;
  }
}

bool Linear::part_copied(size_t i) const {
  if (rowwise_[i].data != parts_[i].data) return true;
  for (size_t k = 0; k < segments_.size(); ++k) {
    if (offsets_[i] < segments_[k].row0) break;
    const int64_t end = k + 1 < segments_.size() ? segments_[k + 1].row0 : rows_;
    if (offsets_[i] < end) return segments_[k].packed != nullptr;
  }
  return false;
}

size_t Linear::weight_bytes() const {
  size_t n = 0;
  for (const Segment& s : segments_)
    n += s.packed ? s.packed->bytes()
                  : rowwise_[s.part].row_bytes() * static_cast<size_t>(rowwise_[s.part].rows());
  return n;
}

void Linear::forward(const float* x, int64_t ldx, int64_t n_tok, float* y, int64_t ldy, ThreadPool& pool,
                     Precision prec, MatmulScratch& scratch) const {
  const profile::Scope scope(profile::Op::Matmul, &label_);
  if (input_order_) {
    const int64_t n = cols();
    if (scratch.gathered.size() < static_cast<size_t>(n * n_tok)) scratch.gathered.resize(n * n_tok);
    for (int64_t t = 0; t < n_tok; ++t)
      for (int64_t j = 0; j < n; ++j) scratch.gathered[t * n + j] = x[t * ldx + input_order_[j]];
    x = scratch.gathered.data();
    ldx = n;
  }
  if (prec == Precision::Fast && packed_kernels_active()) {
    for (const Segment& s : segments_) {
      if (s.packed)
        matmul_packed(*s.packed, x, ldx, n_tok, y + s.row0, ldy, pool, scratch);
      else
        matmul(rowwise_[s.part], x, ldx, n_tok, y + s.row0, ldy, pool, prec, scratch);
    }
    return;
  }
  for (size_t i = 0; i < parts_.size(); ++i)
    matmul(rowwise_[i], x, ldx, n_tok, y + offsets_[i], ldy, pool, prec, scratch);
}

}  // namespace ferrum::kernels
