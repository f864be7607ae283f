// Windowed layers (runtime/kv_cache.h, groups): a layer with a sliding window holds only its window
// (and the rollback) of a sequence however long it grows, reads back what was written inside the
// window, refuses a rollback past it, and the prefix cache keeps the window blocks a reuse needs.
#include <gtest/gtest.h>

#include <numeric>

#include "ferrum/error.h"
#include "runtime/kv_cache.h"

namespace ferrum::runtime::kv_window_test {
namespace {

constexpr int kBlock = kernels::kKvGroup;
constexpr int kWindow = 16;

// Two layers of one head of 2 floats: layer 0 sees every position, layer 1 a 16-token window.
KvCacheOptions windowed(bool prefix, int64_t rollback = 0) {
  KvCacheOptions o;
  o.layout = KvLayout::Paged;
  o.seq_capacity = 12 * kBlock;
  o.pool_tokens = 24 * kBlock;
  o.block_tokens = kBlock;
  o.prefix_cache = prefix;
  o.layer_windows = {0, kWindow};
  o.rollback_tokens = rollback;
  return o;
}

// Appends tokens, each stored in both layers as the key (id, layer) and the value (-id, layer).
void fill(KvCache& kv, int seq, const std::vector<int32_t>& toks) {
  const int64_t start = kv.len(seq);
  kv.reserve(seq, start + toks.size());
  for (int layer = 0; layer < 2; ++layer)
    for (size_t i = 0; i < toks.size(); ++i) {
      const float k[2] = {static_cast<float>(toks[i]), static_cast<float>(layer)},
                  v[2] = {-static_cast<float>(toks[i]), static_cast<float>(layer)};
      kv.write(layer, seq, start + static_cast<int64_t>(i), k, v);
    }
  kv.append(seq, toks);
}

float key_at(const KvCache& kv, int layer, int seq, int64_t pos) {
  const kernels::KvSeqView v = kv.view(layer, seq);
  float k[2];
  kernels::kv_load_key(v.type, v.k_group(pos), static_cast<int>(pos % kernels::kKvGroup), 0, 1, 2, k);
  return k[0];
}

std::vector<int32_t> ids(int first, int n) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

// Rows a windowed layer holds now (all sequences and cached blocks).
int64_t window_rows_held(const KvCache& kv) {
  const KvUsage u = kv.stats();
  return static_cast<int64_t>(u.window_held_bytes / (u.bytes_per_token / kv.n_layer()));
}

TEST(KvWindow, LongSequenceHoldsOnlyItsWindow) {
  KvCache kv(2, 1, 2, windowed(false));
  fill(kv, 0, ids(1, 40));
  for (int i = 0; i < 60; ++i) fill(kv, 0, {41 + i});  // 100 tokens, one at a time (decode)
  ASSERT_EQ(kv.len(0), 100);
  const KvUsage u = kv.stats();
  EXPECT_EQ(u.window_layers, 1);
  EXPECT_EQ(u.window_rows, 2 * kBlock);  // the window from anywhere in a block, and that block
  EXPECT_LE(window_rows_held(kv), 2 * kBlock);
  EXPECT_EQ(u.held_bytes - u.window_held_bytes, 7 * kBlock * u.bytes_per_token / 2);  // layer 0: all 100
  // What the window sees reads back; layer 0 keeps everything.
  for (int64_t p = 100 - kWindow; p < 100; ++p) EXPECT_EQ(key_at(kv, 1, 0, p), p + 1);
  for (int64_t p = 0; p < 100; ++p) EXPECT_EQ(key_at(kv, 0, 0, p), p + 1);
  EXPECT_EQ(kv.view(1, 0).table[0], -1);  // given up
  kv.release(0);
  EXPECT_EQ(kv.stats().held_bytes, 0u);
}

TEST(KvWindow, ContiguousLayoutKeepsTheWindowPaged) {
  KvCacheOptions o = windowed(false);
  o.layout = KvLayout::Contiguous;
  KvCache kv(2, 1, 2, o);
  fill(kv, 0, ids(1, 100));  // one prefill: the window is trimmed after it
  EXPECT_LE(window_rows_held(kv), 2 * kBlock);
  for (int64_t p = 100 - kWindow; p < 100; ++p) EXPECT_EQ(key_at(kv, 1, 0, p), p + 1);
  for (int64_t p = 0; p < 100; ++p) EXPECT_EQ(key_at(kv, 0, 0, p), p + 1);
}

TEST(KvWindow, RollbackWithinTheKeptRowsOnly) {
  KvCache kv(2, 1, 2, windowed(false, /*rollback=*/8));
  fill(kv, 0, ids(1, 100));
  kv.truncate(0, 92);  // 8 back: its window (77..91) is still there
  for (int64_t p = 92 - kWindow; p < 92; ++p) EXPECT_EQ(key_at(kv, 1, 0, p), p + 1);
  fill(kv, 0, ids(500, 8));
  EXPECT_EQ(key_at(kv, 1, 0, 99), 507);
  try {
    kv.truncate(0, 60);
    FAIL() << "rolled back past the window";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("16-token window"), std::string::npos) << e.what();
  }
  EXPECT_EQ(kv.len(0), 100);  // unchanged
  kv.truncate(0, 0);          // starting over needs nothing
  fill(kv, 0, ids(1, 20));
  EXPECT_EQ(key_at(kv, 1, 0, 19), 20);
}

// A reuse attaches the cached blocks of layer 0 and only the window blocks its first computed
// query needs; when those were given up (the windowed pool's share of the prefix cache is full),
// the reuse stops where they are still cached.
TEST(KvWindow, PrefixReuseAcrossTheWindowEdge) {
  KvCache kv(2, 1, 2, windowed(true));
  fill(kv, 0, ids(1, 100));
  kv.release(0);
  // Blocks 0..5 are cached; the windowed copy of block 5 (positions 80..95) was in the window.
  std::vector<int32_t> prompt = ids(1, 96);
  prompt.push_back(1000);
  EXPECT_EQ(kv.reuse_prefix(1, prompt), 96);
  EXPECT_EQ(kv.view(1, 1).table[0], -1);  // behind the first query's window: not attached
  for (int64_t p = 96 - kWindow + 1; p < 96; ++p) EXPECT_EQ(key_at(kv, 1, 1, p), p + 1);
  for (int64_t p = 0; p < 96; ++p) EXPECT_EQ(key_at(kv, 0, 1, p), p + 1);
  fill(kv, 1, {1000});
  EXPECT_EQ(key_at(kv, 1, 1, 96), 1000);
  kv.release(1);
  // The windowed pool's share of cached blocks is 2 full sequences x 2 blocks: the oldest windowed
  // copies were given up, so a prompt that needs block 0's window reuses nothing ...
  EXPECT_EQ(kv.reuse_prefix(2, ids(1, 18)), 0);
  // ... while one whose window lies in still-cached blocks does.
  EXPECT_EQ(kv.reuse_prefix(3, ids(1, 97)), 96);
}

TEST(KvWindow, AdmissionCountsEachGroup) {
  KvCache kv(2, 1, 2, windowed(false));
  // 24 blocks in each group: two sequences of 12 blocks fit, a third token does not.
  const std::vector<std::pair<int, int64_t>> two = {{0, 12 * kBlock}, {1, 12 * kBlock}};
  EXPECT_TRUE(kv.can_reserve(two));
  kv.reserve(two);
  EXPECT_FALSE(kv.can_reserve(std::vector<std::pair<int, int64_t>>{{2, 1}}));
  EXPECT_THROW(kv.reserve(2, 1), CapacityError);
}

TEST(KvWindow, WindowsCoveringTheCapacityKeepEverything) {
  KvCacheOptions o = windowed(false);
  o.layer_windows = {0, 12 * kBlock};
  KvCache kv(2, 1, 2, o);
  fill(kv, 0, ids(1, 100));
  EXPECT_EQ(kv.stats().window_layers, 0);
  EXPECT_EQ(key_at(kv, 1, 0, 0), 1);
  o.layer_windows = {0};
  EXPECT_THROW(KvCache(2, 1, 2, o), Error);
}

}  // namespace
}  // namespace ferrum::runtime::kv_window_test
