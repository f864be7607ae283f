// Importance matrices as llama.cpp's llama-imatrix writes them, for `ferrum quantize --imatrix`:
// per weight matrix, the mean squared activation each of its input columns met on a calibration
// text (the weights of a column's quantization error). Two file formats: GGUF (tensors
// "<name>.in_sum2", F32 [cols, n_mat], and "<name>.counts", F32 [1, n_mat]; metadata
// imatrix.datasets / chunk_count / chunk_size) and the older binary .dat (entries of name, call
// count and sums already divided per call).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ferrum {

struct ImportanceMatrix {
  std::string path;
  std::vector<std::string> datasets;  // the calibration texts' names, as recorded
  int64_t chunk_count = 0;
  // Per weight matrix: n_mat (experts; 1 for a dense matrix) rows of importance, one per column.
  std::map<std::string, std::vector<float>> entries;

  // The importance of `tensor`'s columns: n_mat * cols values (matrix e's at e * cols), or nullptr
  // when the file has none for it. Throws, naming the tensor, when the entry has another size.
  const float* find(const std::string& tensor, int64_t cols, int64_t n_mat = 1) const;
};

// Reads either format (GGUF when the file starts with "GGUF"); throws naming the file and what is
// wrong (truncated, bad counts, non-finite or negative values, a sum without its counts).
ImportanceMatrix read_imatrix(const std::string& path);

}  // namespace ferrum
