#include "models/weights.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>

#include "core/fail.h"

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

size_t WeightSet::release_pages(const TensorView& t) const {
  if (!map_begin_ || !t.data || t.data < map_begin_ || t.data + t.nbytes > map_end_) return 0;
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  // Only whole pages inside the tensor: neighbours sharing its first or last page keep theirs.
  const uintptr_t b = (reinterpret_cast<uintptr_t>(t.data) + page - 1) / page * page;
  const uintptr_t e = (reinterpret_cast<uintptr_t>(t.data) + t.nbytes) / page * page;
  if (e <= b) return 0;
  // A read-only private file mapping has no private copies: MADV_DONTNEED only drops the page
  // cache references, and a later access maps the file page again.
  if (madvise(reinterpret_cast<void*>(b), e - b, MADV_DONTNEED) != 0) return 0;
  return e - b;
}

size_t WeightSet::release_packed(const kernels::Linear& lin) {
  size_t n = 0;
  for (size_t i = 0; i < lin.parts().size(); ++i) {
    if (!lin.part_copied(i)) continue;
    const TensorView& p = lin.parts()[i];
    n += release_pages(p);
    const TensorView* t = find(p.name);
    if (transient_.contains(p.name) && t && t->data == p.data) n += release_owned(p.name);
  }
  return n;
}

uint8_t* WeightSet::allocate(size_t n) {
  void* p = std::aligned_alloc(64, (n + 63) / 64 * 64);
  if (!p) fail("out of memory allocating {} bytes for weights", n);
  buffers_.push_back({{static_cast<uint8_t*>(p), [](uint8_t* q) { std::free(q); }}, n});
  return buffers_.back().data.get();
}

size_t WeightSet::release_owned(const std::string& name) {
  auto t = tensors_.find(name);
  if (t == tensors_.end() || !t->second.data) return 0;
  for (auto b = buffers_.begin(); b != buffers_.end(); ++b) {
    if (b->data.get() != t->second.data || b->bytes != t->second.nbytes) continue;
    const uint8_t *lo = b->data.get(), *hi = lo + b->bytes;
    for (const auto& [other, v] : tensors_)  // another view into the buffer keeps it
      if (other != name && v.data && v.data < hi && v.data + v.nbytes > lo) return 0;
    const size_t n = b->bytes;
    buffers_.erase(b);
    t->second.data = nullptr;
    return n;
  }
  return 0;
}

size_t WeightSet::owned_bytes() const {
  size_t n = 0;
  for (const Owned& b : buffers_) n += b.bytes;
  return n;
}

size_t WeightSet::total_bytes() const {
  size_t n = 0;
  for (const auto& [_, t] : tensors_) n += t.nbytes;
  return n;
}

size_t WeightSet::bytes_with_prefix(const std::string& prefix) const {
  size_t n = 0;
  for (auto it = tensors_.lower_bound(prefix); it != tensors_.end() && it->first.starts_with(prefix); ++it)
    n += it->second.nbytes;
  return n;
}

}  // namespace ferrum
