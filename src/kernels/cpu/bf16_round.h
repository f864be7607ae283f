// --precision bf16: F16 and F32 weight matrices rounded to BF16 once at load, so that they are
// multiplied as a BF16 file's matrices are (vdpbf16ps on AVX-512). The rounding is the converter's
// (`ferrum quantize ... BF16`: dequantize_row, then quantize_row to BF16, round to nearest even),
// so a model run this way gives the logits of its BF16 conversion.
#pragma once

#include <cstdint>
#include <memory>

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace ferrum::kernels {

// What a weight matrix's values are multiplied as: the file's type, or BF16 for F16/F32 matrices.
enum class WeightRounding { None, Bf16 };

// Whether a matrix of type t is rounded to BF16 under `r` (F16 and F32 are; BF16 and the
// quantized types stay as they are).
bool rounds_to_bf16(WeightRounding r, DType t);
// The type the values of a matrix of type t are multiplied in under `r`.
DType rounded_type(WeightRounding r, DType t);

// One row of n values of type t (F16/F32/BF16) as BF16, exactly as the converter writes it;
// tmp holds n floats.
void round_row_to_bf16(DType t, const uint8_t* row, int64_t n, uint16_t* out, float* tmp);

// A BF16 copy of a whole tensor in owned memory (same name and shape).
struct Bf16Copy {
  TensorView view;
  std::shared_ptr<const uint8_t> data;
};
Bf16Copy copy_as_bf16(const TensorView& t, ThreadPool& pool);

}  // namespace ferrum::kernels
