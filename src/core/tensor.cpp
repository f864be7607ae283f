#include "core/tensor.h"

#include <fmt/format.h>

namespace ferrum {

std::string TensorView::shape_string() const {
  std::string s = "[";
  for (int i = 0; i < n_dims; ++i) s += fmt::format("{}{}", i ? ", " : "", ne[i]);
  return s + "]";
}

}  // namespace ferrum
