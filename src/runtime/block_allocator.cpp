#include "runtime/block_allocator.h"

#include "core/fail.h"

namespace ferrum::runtime {

BlockAllocator::BlockAllocator(int32_t n) : refs_(n, 0) {
  free_.reserve(n);
  for (int32_t i = n - 1; i >= 0; --i) free_.push_back(i);
}

bool BlockAllocator::allocate(int32_t n, std::vector<int32_t>& out) {
  if (n > static_cast<int32_t>(free_.size())) return false;
  for (int32_t i = 0; i < n; ++i) {
    const int32_t id = free_.back();
    free_.pop_back();
    refs_[id] = 1;
    out.push_back(id);
  }
  return true;
}

void BlockAllocator::incref(int32_t id) {
  FERRUM_ASSERT(id >= 0 && id < total() && refs_[id] > 0, "incref of free block {}", id);
  ++refs_[id];
}

bool BlockAllocator::decref(int32_t id) {
  FERRUM_ASSERT(id >= 0 && id < total() && refs_[id] > 0, "decref of free block {}", id);
  if (--refs_[id] == 0) {
    free_.push_back(id);
    return true;
  }
  return false;
}

}  // namespace ferrum::runtime
