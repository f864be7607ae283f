// alloc_huge and its allocator: alignment (64 bytes; 2 MiB from kHugePage bytes on, so the kernel
// can back the buffer with huge pages), usable memory, and containers that grow on it.
#include "core/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace ferrum {
namespace {

TEST(HugePages, SmallBuffersAreCacheLineAligned) {
  HugeBytes p(static_cast<uint8_t*>(alloc_huge(100)));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p.get()) % 64, 0u);
  std::memset(p.get(), 1, 100);
}

TEST(HugePages, LargeBuffersStartOnAHugePage) {
  const size_t n = kHugePage + 12345;
  HugeBytes p(static_cast<uint8_t*>(alloc_huge(n)));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p.get()) % kHugePage, 0u);
  p.get()[0] = 1;
  p.get()[n - 1] = 2;
  EXPECT_EQ(p.get()[n - 1], 2);
}

TEST(HugePages, VectorsGrowAndKeepTheirContents) {
  std::vector<uint8_t, HugePageAllocator<uint8_t>> v(1000, 7);
  v.resize(3 * kHugePage);  // moves to a huge-page buffer
  EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data()) % kHugePage, 0u);
  EXPECT_EQ(v[999], 7);
  EXPECT_EQ(v[1000], 0);  // new elements are value-initialised
  EXPECT_EQ(v.back(), 0);
}

}  // namespace
}  // namespace ferrum
