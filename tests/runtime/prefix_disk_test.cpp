// The prefix cache on disk (runtime/prefix_store.h): blocks saved when evicted and when the cache
// goes come back, bit for bit, into a new cache (a restart), for every KV type and with windowed
// layers; an adapter's blocks are not kept; a corrupted, truncated or foreign file is ignored with
// one log line and the lookup misses; the folder stays under its size limit.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <numeric>

#include "runtime/kv_cache.h"
#include "test_util.h"

namespace ferrum::runtime::prefix_disk_test {
namespace {

namespace fs = std::filesystem;
constexpr int B = kernels::kKvGroup;

struct Logged {
  std::vector<std::string> lines;
  PrefixStore::Log log() {
    return [this](const std::string& l) { lines.push_back(l); };
  }
};

KvCacheOptions options(const std::string& dir, kernels::KvType type, Logged* logged,
                       const std::string& identity = "model-a", std::vector<int32_t> windows = {}) {
  KvCacheOptions o;
  o.layout = KvLayout::Paged;
  o.type = type;
  o.seq_capacity = 8 * B;
  o.pool_tokens = 16 * B;
  o.block_tokens = B;
  o.prefix_cache = true;
  o.layer_windows = std::move(windows);
  o.rollback_tokens = 0;
  o.store = std::make_shared<PrefixStore>(dir, identity, 0, logged ? logged->log() : nullptr);
  return o;
}

// Writes rows that depend on token, position and layer, and appends the tokens.
void fill(KvCache& kv, int seq, const std::vector<int32_t>& toks, uint64_t ns = 0) {
  const int64_t start = kv.len(seq);
  kv.reserve(seq, start + static_cast<int64_t>(toks.size()));
  const int w = kv.n_head_kv() * kv.head_dim();
  std::vector<float> k(w), v(w);
  for (int layer = 0; layer < kv.n_layer(); ++layer)
    for (size_t i = 0; i < toks.size(); ++i) {
      for (int j = 0; j < w; ++j) {
        k[j] = std::sin(0.1f * toks[i] + 0.7f * j + layer) * 3;
        v[j] = std::cos(0.3f * toks[i] - 0.2f * j + static_cast<float>(start + i));
      }
      kv.write(layer, seq, start + static_cast<int64_t>(i), k.data(), v.data());
    }
  kv.append(seq, toks, ns);
}

// Every key and value of positions [from, n) of seq, as loaded (layer -1: every layer).
std::vector<float> rows(const KvCache& kv, int seq, int64_t n, int only = -1, int64_t from = 0) {
  std::vector<float> out;
  const int h = kv.n_head_kv(), d = kv.head_dim();
  std::vector<float> x(d);
  for (int layer = 0; layer < kv.n_layer(); ++layer) {
    if (only >= 0 && layer != only) continue;
    const auto view = kv.view(layer, seq);
    for (int64_t p = from; p < n; ++p)
      for (int head = 0; head < h; ++head) {
        const int i = static_cast<int>(p % kernels::kKvGroup);
        kernels::kv_load_key(view.type, view.k_group(p), i, head, h, d, x.data());
        out.insert(out.end(), x.begin(), x.end());
        kernels::kv_load_value(view.type, view.v_group(p), i, head, h, d, x.data());
        out.insert(out.end(), x.begin(), x.end());
      }
  }
  return out;
}

std::vector<int32_t> prompt(int n, int first = 5) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

TEST(PrefixDisk, BlocksComeBackBitForBitAfterARestart) {
  using kernels::KvType;
  for (KvType type : {KvType::F32, KvType::F16, KvType::BF16, KvType::INT8}) {
    const std::string dir = test::temp_dir();
    const std::vector<int32_t> p = prompt(4 * B + 3);
    std::vector<float> want;
    {
      KvCache kv(2, 2, 32, options(dir, type, nullptr));
      fill(kv, 0, p);
      want = rows(kv, 0, 4 * B);
      kv.release(0);
      EXPECT_EQ(kv.stats().prefix_disk_writes, 0);  // nothing evicted yet: saved when it goes
    }
    KvCache kv(2, 2, 32, options(dir, type, nullptr));
    EXPECT_EQ(kv.reuse_prefix(1, p), 4 * B) << kernels::kv_type_name(type);
    EXPECT_EQ(kv.stats().prefix_disk_reads, 4);
    EXPECT_EQ(rows(kv, 1, 4 * B), want) << kernels::kv_type_name(type);
    // A prompt that leaves the saved chain after two blocks reuses those two.
    std::vector<int32_t> q = p;
    q[2 * B + 1] = 999;
    EXPECT_EQ(kv.reuse_prefix(2, q), 2 * B);
  }
}

TEST(PrefixDisk, EvictedBlocksAreSavedAndAdaptersAreNot) {
  const std::string dir = test::temp_dir();
  KvCache kv(1, 1, 32, options(dir, kernels::KvType::F16, nullptr));
  fill(kv, 0, prompt(3 * B + 1));
  kv.release(0);
  fill(kv, 1, prompt(3 * B + 1, 1000), /*ns=*/7);  // an adapter's sequence: never written
  kv.release(1);
  // Two full-length sequences take every block: the cached ones are evicted, the base model's saved.
  fill(kv, 2, std::vector<int32_t>(8 * B, 3));
  fill(kv, 3, std::vector<int32_t>(8 * B, 4));
  EXPECT_EQ(kv.stats().prefix_disk_writes, 3);
  kv.release(2);
  kv.release(3);
  EXPECT_EQ(kv.reuse_prefix(4, prompt(3 * B + 1)), 3 * B);
  EXPECT_EQ(kv.stats().prefix_disk_reads, 3);
}

TEST(PrefixDisk, WindowedLayersComeBackWithTheirBlocks) {
  const std::string dir = test::temp_dir();
  const std::vector<int32_t> windows = {0, 2 * B};  // layer 1 sees its last 2 blocks
  const std::vector<int32_t> p = prompt(5 * B + 2);
  std::vector<float> want0, want1;
  {
    KvCache kv(2, 1, 32, options(dir, kernels::KvType::F16, nullptr, "model-a", windows));
    fill(kv, 0, p);
    kv.release(0);
    ASSERT_EQ(kv.reuse_prefix(1, p), 5 * B);
    want0 = rows(kv, 1, 5 * B, 0);
    want1 = rows(kv, 1, 5 * B, 1, 3 * B);
  }
  KvCache kv(2, 1, 32, options(dir, kernels::KvType::F16, nullptr, "model-a", windows));
  EXPECT_EQ(kv.reuse_prefix(1, p), 5 * B);
  // Layer 0 keeps every position; the windowed layer the blocks its window needs.
  EXPECT_EQ(rows(kv, 1, 5 * B, 0), want0);
  EXPECT_EQ(rows(kv, 1, 5 * B, 1, 3 * B), want1);
}

TEST(PrefixDisk, CorruptTruncatedAndForeignFilesAreIgnoredWithALogLine) {
  const std::string dir = test::temp_dir();
  const std::vector<int32_t> p = prompt(2 * B + 1);
  std::string folder;
  {
    KvCache kv(1, 1, 32, options(dir, kernels::KvType::F16, nullptr));
    folder = kv.options().store->folder();
    fill(kv, 0, p);
  }
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(folder)) files.push_back(e.path());
  ASSERT_EQ(files.size(), 2u);
  // Another model's cache of the same layout: its folder differs; a file copied there is refused.
  Logged foreign;
  {
    KvCache other(1, 1, 32, options(dir, kernels::KvType::F16, &foreign, "model-b"));
    const std::string theirs = other.options().store->folder();
    ASSERT_NE(theirs, folder);
    for (const fs::path& f : files) fs::copy_file(f, fs::path(theirs) / f.filename());
    EXPECT_EQ(other.reuse_prefix(0, p), 0);
    ASSERT_EQ(foreign.lines.size(), 1u);
    EXPECT_NE(foreign.lines[0].find("another model"), std::string::npos) << foreign.lines[0];
  }
  // A flipped byte in the data.
  for (const fs::path& f : files) {
    std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
    io.seekg(-5, std::ios::end);
    const char b = static_cast<char>(io.get() ^ 0x7f);
    io.seekp(-5, std::ios::end);
    io.put(b);
  }
  Logged corrupt;
  {
    KvCache kv(1, 1, 32, options(dir, kernels::KvType::F16, &corrupt));
    EXPECT_EQ(kv.reuse_prefix(0, p), 0);
    EXPECT_EQ(kv.reuse_prefix(1, p), 0);  // logged once
    ASSERT_EQ(corrupt.lines.size(), 1u);
    EXPECT_NE(corrupt.lines[0].find("checksum"), std::string::npos) << corrupt.lines[0];
  }
  // Truncated.
  for (const fs::path& f : files) fs::resize_file(f, fs::file_size(f) / 2);
  Logged cut;
  KvCache kv(1, 1, 32, options(dir, kernels::KvType::F16, &cut));
  EXPECT_EQ(kv.reuse_prefix(0, p), 0);
  ASSERT_EQ(cut.lines.size(), 1u);
  EXPECT_NE(cut.lines[0].find("truncated"), std::string::npos) << cut.lines[0];
}

TEST(PrefixDisk, TheFolderStaysUnderItsLimit) {
  const std::string dir = test::temp_dir();
  KvCacheOptions o = options(dir, kernels::KvType::F32, nullptr);
  const uint64_t per_block = 2 * B * 32 * 4;  // K and V of one layer
  o.store = std::make_shared<PrefixStore>(dir, "model-a", 5 * per_block);
  {
    KvCache kv(1, 1, 32, o);
    for (int i = 0; i < 4; ++i) {
      fill(kv, i, prompt(2 * B + 1, 100 * i));
      kv.release(i);
    }
  }
  uint64_t bytes = 0;
  int n = 0;
  for (const auto& e : fs::directory_iterator(o.store->folder())) bytes += e.file_size(), ++n;
  EXPECT_LE(bytes, 5 * per_block);
  EXPECT_GT(n, 0);
}

}  // namespace
}  // namespace ferrum::runtime::prefix_disk_test
