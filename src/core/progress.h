// Progress of a long job (quantizing, converting, writing a model file), reported by the library
// as it goes and shown by the CLI (cli/progress.h): `done` of `total` bytes and `items` of
// `n_items` tensors in the named stage.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

namespace ferrum {

struct ProgressUpdate {
  std::string_view stage;  // "quantize", "write", ...
  uint64_t done = 0, total = 0;
  int items = 0, n_items = 0;
  std::string_view unit = "tensors";  // what items counts
};
using ProgressFn = std::function<void(const ProgressUpdate&)>;

}  // namespace ferrum
