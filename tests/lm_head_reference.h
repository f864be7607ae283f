// A float64 reference for the LM head: rows of hidden states times every row of a model file's
// output matrix (token_embd when the embeddings are tied), dequantized from the file.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "core/quant.h"
#include "loading/loader.h"

namespace ferrum::test {

// n rows of `width` floats (which must be the model's n_embd) -> n x n_vocab products (row-major).
inline std::vector<double> times_lm_head(const std::string& path, const float* rows, int64_t n,
                                         int64_t width) {
  ModelFiles files = open_model_files(path);
  if (width != files.config.n_embd)
    throw std::runtime_error(path + ": rows of " + std::to_string(width) + " floats, the model's n_embd is " +
                             std::to_string(files.config.n_embd));
  const TensorView* head = files.weights.find("output.weight");
  if (!head) head = &files.weights.get("token_embd.weight");
  const int64_t d = files.config.n_embd, V = files.config.n_vocab;
  std::vector<float> w(d);
  std::vector<double> out(n * V);
  for (int64_t v = 0; v < V; ++v) {
    dequantize_row(head->type, head->row(v), w.data(), d);
    for (int64_t t = 0; t < n; ++t) {
      double s = 0;
      for (int64_t k = 0; k < d; ++k) s += double(rows[t * d + k]) * w[k];
      out[t * V + v] = s;
    }
  }
  return out;
}

}  // namespace ferrum::test
