#include "kernels/cpu/bf16_round.h"

#include <cstdlib>
#include <vector>

#include "core/fail.h"
#include "core/quant.h"
#include "kernels/cpu/kernels.h"

namespace ferrum::kernels {

bool rounds_to_bf16(WeightRounding r, DType t) {
  return r == WeightRounding::Bf16 && (t == DType::F16 || t == DType::F32);
}

DType rounded_type(WeightRounding r, DType t) {
  return rounds_to_bf16(r, t) ? DType::BF16 : t;
}

void round_row_to_bf16(DType t, const uint8_t* row, int64_t n, uint16_t* out, float* tmp) {
  if (t != DType::F16 && t != DType::F32 && t != DType::BF16)
    fail("round_row_to_bf16: type {} is not a float type", dtype_name(t));
  // F16 -> F32 is exact either way; the vector conversion keeps the load time near plain packing's.
  if (t == DType::F16)
    active_kernels().f16_to_f32(reinterpret_cast<const uint16_t*>(row), tmp, n);
  else
    dequantize_row(t, row, tmp, n);
  quantize_row(DType::BF16, tmp, out, n);
}

Bf16Copy copy_as_bf16(const TensorView& t, ThreadPool& pool) {
  const int64_t rows = t.rows(), cols = t.cols();
  if (t.nbytes < t.row_bytes() * static_cast<size_t>(rows))
    fail("tensor '{}' has {} bytes, needs {}", t.name, t.nbytes, t.row_bytes() * static_cast<size_t>(rows));
  const size_t bytes = static_cast<size_t>(rows * cols) * 2;
  auto* mem = static_cast<uint8_t*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64));
  if (!mem) fail("out of memory for a BF16 copy of '{}' ({} bytes)", t.name, bytes);
  Bf16Copy c;
  c.data = std::shared_ptr<const uint8_t>(mem, [](const uint8_t* p) { std::free(const_cast<uint8_t*>(p)); });
  pool.parallel_for(rows, [&](int64_t r0, int64_t r1, int) {
    std::vector<float> tmp(static_cast<size_t>(cols));
    for (int64_t r = r0; r < r1; ++r)
      round_row_to_bf16(t.type, t.row(r), cols, reinterpret_cast<uint16_t*>(mem) + r * cols, tmp.data());
  });
  c.view = t;
  c.view.type = DType::BF16;
  c.view.data = mem;
  c.view.nbytes = bytes;
  return c;
}

}  // namespace ferrum::kernels
