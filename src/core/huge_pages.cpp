#include "core/huge_pages.h"

#include <sys/mman.h>

#include <cstdlib>

namespace ferrum {

void* alloc_huge(size_t n) {
  if (n < kHugePage) return std::aligned_alloc(64, (n + 63) / 64 * 64 + 64);
  const size_t rounded = (n + kHugePage - 1) / kHugePage * kHugePage;
  void* p = std::aligned_alloc(kHugePage, rounded);
  if (p) madvise(p, rounded, MADV_HUGEPAGE);
  return p;
}

void free_huge(void* p) {
  std::free(p);
}

}  // namespace ferrum
