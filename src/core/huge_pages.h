// Memory for large buffers that are streamed (packed weights, KV caches): 2 MiB pages where the
// kernel allows them (transparent huge pages in "madvise" mode). With 4 KiB pages the hardware
// prefetcher stops at every page boundary and a stream misses the TLB once per page.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

namespace ferrum {

constexpr size_t kHugePage = size_t{2} << 20;

// n bytes aligned to 64 (2 MiB and advised as huge pages from kHugePage bytes on); nullptr when
// out of memory. Pages are committed on first touch, as with malloc. Free with free_huge.
void* alloc_huge(size_t n);
void free_huge(void* p);

struct HugeFree {
  void operator()(uint8_t* p) const { free_huge(p); }
};
using HugeBytes = std::unique_ptr<uint8_t, HugeFree>;

// alloc_huge as a standard allocator (zero-initialised by the containers that use it, as usual).
template <typename T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}
  T* allocate(size_t n) {
    void* p = alloc_huge(n * sizeof(T));
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { free_huge(p); }
  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }
};

}  // namespace ferrum
