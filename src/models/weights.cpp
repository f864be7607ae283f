#include "models/weights.h"

#include <cstdlib>

#include "ferrum/error.h"

namespace ferrum {

const TensorView* WeightSet::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

const TensorView& WeightSet::get(const std::string& name) const {
  const TensorView* t = find(name);
  if (!t) fail("{}: tensor '{}' is missing", source_, name);
  return *t;
}

const TensorView& WeightSet::get(const std::string& name, std::vector<int64_t> ne) const {
  const TensorView& t = get(name);
  bool ok = true;
  for (size_t i = 0; i < 4; ++i) {
    int64_t want = i < ne.size() ? ne[i] : 1;
    if (t.ne[i] != want) ok = false;
  }
  if (!ok) {
    std::string want = "[";
    for (size_t i = 0; i < ne.size(); ++i) want += fmt::format("{}{}", i ? ", " : "", ne[i]);
    fail("{}: tensor '{}' has shape {}, expected {}", source_, name, t.shape_string(), want + "]");
  }
  return t;
}

uint8_t* WeightSet::allocate(size_t n) {
  void* p = std::aligned_alloc(64, (n + 63) / 64 * 64);
  if (!p) fail("out of memory allocating {} bytes for weights", n);
  buffers_.emplace_back(static_cast<uint8_t*>(p), [](uint8_t* q) { std::free(q); });
  return buffers_.back().get();
}

size_t WeightSet::total_bytes() const {
  size_t n = 0;
  for (const auto& [_, t] : tensors_) n += t.nbytes;
  return n;
}

}  // namespace ferrum
