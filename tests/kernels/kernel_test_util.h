// Helpers shared by the kernels tests: fixture blobs, random rows, quantized test matrices.
#pragma once

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/quant.h"
#include "core/tensor.h"
#include "test_util.h"

namespace ferrum::test {

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

inline std::vector<float> gaussian(size_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Types ferrum reads but does not write (the grid i-quants need an importance matrix).
inline bool read_only_type(DType t) {
  for (DType r : {DType::IQ2_XXS, DType::IQ2_XS, DType::IQ2_S, DType::IQ3_XXS, DType::IQ3_S, DType::IQ1_S,
                  DType::IQ1_M})
    if (t == r) return true;
  return false;
}

// A rows x cols weight matrix of type t quantized from random values, with its TensorView. Types
// ferrum does not write take their blocks from the llama-quantize rows of tests/data/kernels
// (<TYPE>.bin), picked in a seeded order.
struct TestMatrix {
  std::vector<uint8_t> bytes;
  TensorView view;
  TestMatrix(DType t, int64_t rows, int64_t cols, uint32_t seed) {
    const size_t rb = row_size(t, cols);
    bytes.resize(rb * rows);
    if (read_only_type(t)) {
      const auto fixture = read_bytes(data_path(std::string("kernels/") + dtype_name(t) + ".bin"));
      const size_t bs = dtype_info(t).type_size, n_fix = fixture.size() / bs;
      for (size_t k = 0; k < bytes.size() / bs; ++k) {
        const size_t src = (k * 7919 + seed) % n_fix;
        std::copy_n(fixture.begin() + static_cast<std::ptrdiff_t>(src * bs), bs,
                    bytes.begin() + static_cast<std::ptrdiff_t>(k * bs));
      }
    } else {
      const auto src = gaussian(static_cast<size_t>(rows * cols), seed, 0.05f);
      for (int64_t r = 0; r < rows; ++r) quantize_row(t, src.data() + r * cols, bytes.data() + r * rb, cols);
    }
    view.name = "test";
    view.type = t;
    view.n_dims = 2;
    view.ne = {cols, rows, 1, 1};
    view.data = bytes.data();
    view.nbytes = bytes.size();
  }
  std::vector<float> dequantized() const {
    std::vector<float> out(static_cast<size_t>(view.n_elements()));
    for (int64_t r = 0; r < view.rows(); ++r)
      dequantize_row(view.type, view.row(r), out.data() + r * view.cols(), view.cols());
    return out;
  }
};

}  // namespace ferrum::test
