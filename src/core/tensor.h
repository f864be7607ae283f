// A read-only view of a weight tensor somewhere in memory (usually a memory-mapped file).
// Dimension order follows GGUF/ggml: ne[0] is the contiguous (row) dimension, so a matrix
// with `rows` outputs of `cols` inputs has ne = {cols, rows}.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "ferrum/dtype.h"

namespace ferrum {

struct TensorView {
  std::string name;
  DType type = DType::F32;
  int n_dims = 0;
  std::array<int64_t, 4> ne{1, 1, 1, 1};
  const uint8_t* data = nullptr;
  size_t nbytes = 0;
  // Act-order GPTQ matrices (formats/hf_quant.h): stored column j multiplies input input_order[j].
  // Null: column j multiplies input j. Only kernels::Linear honours it.
  const int32_t* input_order = nullptr;

  int64_t cols() const { return ne[0]; }
  int64_t rows() const { return ne[1] * ne[2] * ne[3]; }
  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  size_t row_bytes() const { return row_size(type, ne[0]); }
  const uint8_t* row(int64_t r) const { return data + static_cast<size_t>(r) * row_bytes(); }
  std::string shape_string() const;
};

}  // namespace ferrum
