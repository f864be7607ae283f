#include "runtime/kv_cache.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>

#include "ferrum/error.h"

namespace ferrum::runtime::kv_cache_test {
namespace {

TEST(BlockAllocator, AllOrNothingAndRefcounts) {
  BlockAllocator a(4);
  std::vector<int32_t> got;
  EXPECT_FALSE(a.allocate(5, got));
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(a.free_count(), 4);
  EXPECT_TRUE(a.allocate(3, got));
  EXPECT_EQ(a.free_count(), 1);
  a.incref(got[0]);
  EXPECT_FALSE(a.decref(got[0]));
  EXPECT_TRUE(a.decref(got[0]));
  EXPECT_EQ(a.free_count(), 2);
  EXPECT_THROW(a.decref(got[0]), Error);  // already free
}

constexpr int kBlock = kernels::kKvGroup;  // the smallest paged block

KvCacheOptions paged(int64_t pool, bool prefix) {
  KvCacheOptions o;
  o.layout = KvLayout::Paged;
  o.seq_capacity = 6 * kBlock;
  o.pool_tokens = pool;
  o.block_tokens = kBlock;
  o.prefix_cache = prefix;
  return o;
}

// Writes a recognisable K row for every position of seq (value = token id + layer).
void fill(KvCache& kv, int seq, const std::vector<int32_t>& toks) {
  const int64_t start = kv.len(seq);
  kv.reserve(seq, start + toks.size());
  for (size_t i = 0; i < toks.size(); ++i) {
    float k[2] = {static_cast<float>(toks[i]), 0.5f}, v[2] = {-static_cast<float>(toks[i]), 1.0f};
    kv.write(0, seq, start + i, k, v);
  }
  kv.append(seq, toks);
}

float k_at(const KvCache& kv, int seq, int64_t pos) {
  auto v = kv.view(0, seq);
  float k[2];
  kernels::kv_load_key(v.type, v.k_group(pos), static_cast<int>(pos % kernels::kKvGroup), 0, 1, 2, k);
  return k[0];
}

// write_rows (a batch at once, tokens over threads) stores what write() stores token by token,
// bit for bit, for every element type and layout, with sequences that start mid-group.
TEST(KvCache, WriteRowsEqualsTokenByTokenWrites) {
  using kernels::KvType;
  constexpr int kHeads = 2, kDim = 64, kW = kHeads * kDim;
  ThreadPool pool(3);
  for (KvType type : {KvType::F32, KvType::F16, KvType::BF16, KvType::INT8})
    for (KvLayout layout : {KvLayout::Contiguous, KvLayout::Paged}) {
      KvCacheOptions o = layout == KvLayout::Paged ? paged(16 * kBlock, false) : KvCacheOptions{};
      o.type = type;
      o.seq_capacity = 6 * kBlock;
      KvCache one(2, kHeads, kDim, o), rows(2, kHeads, kDim, o);
      const std::vector<int64_t> start = {0, 3, 20}, count = {5, 37, 1};
      std::vector<std::vector<float>> k(3), v(3);
      std::vector<std::vector<int64_t>> pos(3);
      for (int s = 0; s < 3; ++s) {
        for (KvCache* kv : {&one, &rows}) kv->reserve(s, start[s] + count[s]);
        for (int64_t t = 0; t < count[s]; ++t) {
          pos[s].push_back(start[s] + t);
          for (int j = 0; j < 2 * kW; ++j) {  // a key row then a value row per token
            const float x = std::sin(0.37f * (s * 1000 + t * 50 + j)) * (1 + j % 7);
            (j < kW ? k : v)[s].push_back(x);
          }
        }
      }
      for (int layer = 0; layer < 2; ++layer) {
        std::vector<KvCache::Rows> batch;
        for (int s = 0; s < 3; ++s) {
          for (int64_t t = 0; t < count[s]; ++t) one.write(layer, s, pos[s][t], &k[s][t * kW], &v[s][t * kW]);
          batch.push_back({s, count[s], pos[s].data(), k[s].data(), v[s].data(), kW});
        }
        rows.write_rows(layer, batch, pool);
      }
      for (int layer = 0; layer < 2; ++layer)
        for (int s = 0; s < 3; ++s)
          for (int64_t p : pos[s])
            for (int h = 0; h < kHeads; ++h) {
              float a[kDim], b[kDim];
              const auto va = one.view(layer, s), vb = rows.view(layer, s);
              const int i = static_cast<int>(p % kernels::kKvGroup);
              kernels::kv_load_key(type, va.k_group(p), i, h, kHeads, kDim, a);
              kernels::kv_load_key(type, vb.k_group(p), i, h, kHeads, kDim, b);
              ASSERT_EQ(std::memcmp(a, b, sizeof a), 0)
                  << kernels::kv_type_name(type) << " key " << s << ":" << p;
              kernels::kv_load_value(type, va.v_group(p), i, h, kHeads, kDim, a);
              kernels::kv_load_value(type, vb.v_group(p), i, h, kHeads, kDim, b);
              ASSERT_EQ(std::memcmp(a, b, sizeof a), 0)
                  << kernels::kv_type_name(type) << " value " << s << ":" << p;
            }
    }
}

TEST(KvCache, PrefixBlocksAreSharedEvictedLruAndNeverOverwritten) {
  constexpr int B = kBlock;
  KvCache kv(1, 1, 2, paged(/*pool=*/6 * B, true));  // 6 blocks
  std::vector<int32_t> a(2 * B + 1);
  std::iota(a.begin(), a.end(), 100);
  fill(kv, 0, a);  // 3 blocks, 2 full ones registered
  EXPECT_EQ(kv.stats().prefix_entries, 2);
  kv.release(0);
  EXPECT_EQ(kv.stats().free_blocks, 6);  // cached blocks count as free (evictable)
  // Same first 2 blocks of tokens: both cached blocks are reused.
  EXPECT_EQ(kv.reuse_prefix(1, a), 2 * B);
  EXPECT_EQ(k_at(kv, 1, 5), 105.0f);
  // Roll back into a shared block and write different tokens: copy on write keeps the cache intact.
  const int64_t mid = B + B / 2;
  kv.truncate(1, mid);
  fill(kv, 1, {7, 7});
  EXPECT_EQ(k_at(kv, 1, mid), 7.0f);
  EXPECT_EQ(k_at(kv, 1, mid - 1), 100.0f + mid - 1);
  EXPECT_EQ(kv.reuse_prefix(2, a), 2 * B);
  EXPECT_EQ(k_at(kv, 2, mid), 100.0f + mid);
  kv.release(1);
  kv.release(2);
  // Memory pressure: a long sequence needs every block, so the cached ones are evicted.
  std::vector<int32_t> b(6 * B, 3);
  fill(kv, 3, b);
  EXPECT_EQ(kv.len(3), 6 * B);
  EXPECT_EQ(kv.stats().free_blocks, 0);
  EXPECT_THROW(fill(kv, 4, {1}), CapacityError);
  EXPECT_EQ(kv.len(4), 0);
}

TEST(KvCache, PagedBlocksAreWholeStorageGroups) {
  KvCacheOptions o = paged(64, false);
  o.block_tokens = kBlock / 2;
  EXPECT_THROW(KvCache(1, 1, 2, o), Error);
}

TEST(KvCache, ContiguousLimitsSequencesAndCapacity) {
  KvCacheOptions o;
  o.seq_capacity = 8;
  o.pool_tokens = 16;  // two sequences
  KvCache kv(2, 1, 2, o);
  fill(kv, 0, {1, 2, 3});
  fill(kv, 1, {4});
  EXPECT_THROW(fill(kv, 2, {5}), CapacityError);
  EXPECT_THROW(kv.reserve(0, 9), CapacityError);
  EXPECT_EQ(k_at(kv, 0, 2), 3.0f);
  kv.release(1);
  fill(kv, 2, {5});
  EXPECT_EQ(k_at(kv, 2, 0), 5.0f);
}

TEST(KvCache, ElementTypesRoundTrip) {
  // 2 heads x 4 dims, stored as keys (transposed) and as values at every index of a group.
  const std::vector<float> row = {0.1f, -2.5f, 3.0f, 0.0f, 1e-3f, 7.25f, -7.0f, 2.0f};
  for (auto t : {kernels::KvType::F32, kernels::KvType::F16, kernels::KvType::BF16, kernels::KvType::INT8}) {
    std::vector<uint8_t> k(kernels::kKvGroup * kernels::kv_row_bytes(t, 2, 4)), v(k.size());
    for (int i = 0; i < kernels::kKvGroup; ++i) {
      std::vector<float> r = row;
      for (float& x : r) x *= 1.0f + i;  // each token its own values and INT8 scales
      kernels::kv_store_key(t, r.data(), k.data(), i, 2, 4);
      kernels::kv_store_value(t, r.data(), v.data(), i, 2, 4);
    }
    for (int i = 0; i < kernels::kKvGroup; ++i)
      for (int h = 0; h < 2; ++h) {
        float ko[4], vo[4];
        kernels::kv_load_key(t, k.data(), i, h, 2, 4, ko);
        kernels::kv_load_value(t, v.data(), i, h, 2, 4, vo);
        const float tol = (t == kernels::KvType::F32   ? 0
                           : t == kernels::KvType::F16 ? 0.01f
                                                       : 0.035f) *
                          (1 + i);
        for (int d = 0; d < 4; ++d) {
          EXPECT_NEAR(ko[d], row[h * 4 + d] * (1 + i), tol) << kernels::kv_type_name(t);
          EXPECT_NEAR(vo[d], row[h * 4 + d] * (1 + i), tol) << kernels::kv_type_name(t);
        }
      }
  }
}

}  // namespace
}  // namespace ferrum::runtime::kv_cache_test
