// NumPy .npy files of float32 (the one dtype ferrum reads and writes: logits, hidden states,
// input rows, test references). Reading is checked: a bad magic, version, header, dtype, memory
// order or size throws ferrum::Error naming the file and the problem.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ferrum::npy {

struct Array {
  std::vector<int64_t> shape;  // empty for a 0-d array
  std::vector<float> data;     // C order
};

// Writes a little-endian float32 C-order array (format 1.0); throws naming the file when it
// cannot be written.
void write_f32(const std::string& path, const float* data, std::span<const int64_t> shape);
void write_f32(const std::string& path, const std::vector<float>& data, int64_t rows, int64_t cols);

// Reads a '<f4' C-order array (format 1.0, 2.0 or 3.0).
Array read_f32(const std::string& path);
// The same from bytes already in memory; `name` is what error messages call them.
Array parse_f32(std::string_view bytes, const std::string& name);

// "(3, 64)" as NumPy prints a shape.
std::string shape_string(std::span<const int64_t> shape);

}  // namespace ferrum::npy
