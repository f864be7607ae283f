#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "core/fp16.h"
#include "ferrum/dtype.h"
#include "ferrum/error.h"

namespace ferrum {

TEST(ThreadPool, EveryThreadRunsOncePerCall) {
  ThreadPool pool(3);
  for (int rep = 0; rep < 1000; ++rep) {
    std::vector<std::atomic<int>> hits(3);
    pool.run([&](int ith, int nth) {
      ASSERT_EQ(nth, 3);
      hits[ith]++;
    });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  }
}

TEST(ThreadPool, ParallelForCoversRangeExactlyOnce) {
  ThreadPool pool(2);
  for (int64_t n : {0, 1, 2, 3, 17, 1000}) {
    std::vector<int> seen(n, 0);
    pool.parallel_for(n, [&](int64_t b, int64_t e, int) {
      for (int64_t i = b; i < e; ++i) seen[i]++;
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(seen[i], 1) << "n=" << n << " i=" << i;
  }
}

TEST(Fp16, RoundTripsEveryHalf) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = f16_to_f32(static_cast<uint16_t>(h));
    if (f != f) continue;  // NaN payloads
    ASSERT_EQ(f32_to_f16(f), h) << std::hex << h;
  }
}

TEST(Fp16, RoundsToNearestEven) {
  EXPECT_EQ(f32_to_f16(1.0f + 1.0f / 2048), 0x3c00);        // tie -> even (down)
  EXPECT_EQ(f32_to_f16(1.0f + 3.0f / 2048), 0x3c02);        // tie -> even (up)
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);                  // overflow -> inf
  EXPECT_EQ(f32_to_f16(5.9604645e-08f), 0x0001);            // smallest subnormal
  EXPECT_EQ(f32_to_f16(2.98023224e-08f), 0x0000);           // exactly half of it: tie -> 0
  EXPECT_EQ(f32_to_bf16(1.0f + 1.0f / 256), 0x3f80);        // tie -> even
  EXPECT_EQ(f32_to_bf16(1.0f + 3.0f / 256), 0x3f82);
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
}

TEST(DType, BlockSizes) {
  EXPECT_EQ(row_size(DType::Q4_K, 512), 2u * 144);
  EXPECT_EQ(row_size(DType::Q8_0, 64), 2u * 34);
  EXPECT_EQ(row_size(DType::F16, 10), 20u);
  EXPECT_EQ(dtype_from_name("q6_k"), DType::Q6_K);
  EXPECT_FALSE(dtype_info(99u).has_value());
  EXPECT_THROW(row_size(DType::Q4_0, 33), Error);
}

// Q4_Z lives in memory only: no GGUF type id reaches it, and the lists of GGUF types leave it out.
TEST(DType, InMemoryTypesAreNoGgufTypes) {
  EXPECT_EQ(row_size(DType::Q4_Z, 64), 2u * 19);
  EXPECT_FALSE(dtype_info(static_cast<uint32_t>(DType::Q4_Z)).has_value());
  EXPECT_FALSE(dtype_info(DType::Q4_Z).gguf);
  EXPECT_TRUE(dtype_info(DType::Q4_0).gguf);
  EXPECT_EQ(supported_dtype_names().find("Q4_Z"), std::string::npos);
  EXPECT_NE(supported_dtype_names().find("Q4_1"), std::string::npos);
  EXPECT_EQ(dtype_label(DType::Q4_Z), "Q4_Z (ferrum's in-memory type)");
}

}  // namespace ferrum
