// Fixed-size KV blocks handed out by id with reference counts. Allocation is all-or-nothing:
// a request that cannot be met changes nothing.
#pragma once

#include <cstdint>
#include <vector>

namespace ferrum::runtime {

class BlockAllocator {
 public:
  explicit BlockAllocator(int32_t n_blocks = 0);

  int32_t total() const { return static_cast<int32_t>(refs_.size()); }
  int32_t free_count() const { return static_cast<int32_t>(free_.size()); }

  // n fresh blocks with refcount 1 appended to `out`, or false (and nothing taken).
  bool allocate(int32_t n, std::vector<int32_t>& out);
  void incref(int32_t id);
  // Returns true when the block became free.
  bool decref(int32_t id);
  int32_t refcount(int32_t id) const { return refs_[id]; }

 private:
  std::vector<int32_t> refs_;
  std::vector<int32_t> free_;  // stack of free ids
};

}  // namespace ferrum::runtime
