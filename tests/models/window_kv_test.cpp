// Windowed layers end to end (#32): a Gemma 2, Gemma 3 or Mistral fixture (tests/data/families,
// 16-token windows) decoding past 5x its window holds only the window in its windowed layers, gives
// the logits the cache that keeps every position gives, bit for bit, in both layouts, and a prefix
// cache hit past the window edge continues exactly as the sequence computed afresh does.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "model_test_util.h"
#include "test_util.h"

namespace ferrum::test {
namespace {

constexpr int64_t kLength = 80;  // positions decoded: 5 windows

class WindowKv : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    m_ = open_model(data_dir("families/" + GetParam() + "/hf"), Precision::Exact, 2, "f32", 256);
    prompt_ = load_json(data_path("families/" + GetParam() + "/reference.json"))["prompt"]["token_ids"]
                  .get<std::vector<int32_t>>();
    ASSERT_GT(m_->config().sliding_window, 0);
    ASSERT_LT(static_cast<int64_t>(prompt_.size()), kLength);
  }
  KvOptions options(KvLayout layout, bool prefix) const {
    KvOptions o;
    o.layout = layout;
    o.type = KvType::F32;
    o.capacity = 256;
    o.prefix_cache = prefix;
    o.rollback_tokens = 0;
    return o;
  }
  // The same shape without windows: every layer keeps every position.
  std::unique_ptr<KvCache> full_cache(const KvOptions& o) const {
    const ModelConfig& c = m_->config();
    return std::make_unique<KvCache>(c.n_layer, c.n_head_kv, c.head_dim, o, 256);
  }
  // Prompt, then greedy decode up to kLength positions: the logits of every step.
  std::vector<std::vector<float>> run(KvCache& kv, int seq, std::vector<int32_t>& tokens) const {
    const int V = m_->config().n_vocab;
    std::vector<std::vector<float>> steps(1, std::vector<float>(V));
    m_->model->prefill(kv, seq, tokens, steps[0].data());
    while (static_cast<int64_t>(tokens.size()) < kLength) {
      const std::vector<float>& last = steps.back();
      tokens.push_back(static_cast<int32_t>(std::max_element(last.begin(), last.end()) - last.begin()));
      steps.emplace_back(V);
      m_->model->decode(kv, seq, tokens.back(), kv.seq_len(seq), steps.back().data());
    }
    return steps;
  }
  std::unique_ptr<CachedModel> m_;
  std::vector<int32_t> prompt_;
};

TEST_P(WindowKv, HoldsOnlyTheWindowWithTheFullCachesLogits) {
  const ModelConfig& c = m_->config();
  int windowed = 0;
  for (int l = 0; l < c.n_layer; ++l) windowed += c.layer_uses_window(l);
  for (KvLayout layout : {KvLayout::Contiguous, KvLayout::Paged}) {
    const KvOptions o = options(layout, false);
    std::unique_ptr<KvCache> win = KvCache::for_model(*m_->model, o), full = full_cache(o);
    std::vector<int32_t> a = prompt_, b = prompt_;
    const auto got = run(*win, 0, a), want = run(*full, 0, b);
    EXPECT_EQ(a, b);
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_EQ(std::memcmp(got[i].data(), want[i].data(), got[i].size() * sizeof(float)), 0)
          << GetParam() << " step " << i << " layout " << kv_layout_name(layout);
    const KvUsage u = win->usage(), f = full->usage();
    const size_t layer_row = u.bytes_per_token / c.n_layer;  // K+V of one position in one layer
    EXPECT_EQ(u.window_layers, windowed);
    EXPECT_EQ(f.window_layers, 0);
    // Bytes measured: each windowed layer holds at most its window (whole blocks), the full cache
    // at least the whole sequence.
    EXPECT_LE(u.window_held_bytes, static_cast<size_t>(windowed * u.window_rows) * layer_row);
    EXPECT_LE(u.window_rows, 2 * c.sliding_window);
    EXPECT_GE(f.held_bytes, static_cast<size_t>(c.n_layer * kLength) * layer_row);
    EXPECT_LT(u.held_bytes, f.held_bytes);
  }
}

TEST_P(WindowKv, PrefixHitPastTheWindowEdge) {
  const int V = m_->config().n_vocab;
  const KvOptions o = options(KvLayout::Paged, true);
  std::unique_ptr<KvCache> win = KvCache::for_model(*m_->model, o),
                           full = full_cache(options(KvLayout::Paged, false));
  std::vector<int32_t> tokens = prompt_;
  run(*win, 0, tokens);
  win->release(0);
  std::vector<int32_t> again = prompt_;
  run(*full, 0, again);  // the same positions computed the same way, nothing reused
  const std::vector<int32_t> more = {tokens[3], tokens[1], tokens[4]};
  std::vector<int32_t> next = tokens;
  next.insert(next.end(), more.begin(), more.end());
  const int64_t reused = win->reuse_prefix(1, next);
  EXPECT_EQ(reused, kLength);
  EXPECT_GT(reused, m_->config().sliding_window);
  std::vector<float> got(V), want(V);
  SeqInput in = seq_input(1, std::span(next).subspan(reused));
  m_->model->forward(*win, std::span(&in, 1), ForwardOut{got.data(), nullptr});
  in = seq_input(0, more);
  m_->model->forward(*full, std::span(&in, 1), ForwardOut{want.data(), nullptr});
  EXPECT_EQ(std::memcmp(got.data(), want.data(), V * sizeof(float)), 0) << GetParam();
  EXPECT_EQ(win->usage().prefix_hits, 1);
}

INSTANTIATE_TEST_SUITE_P(Families, WindowKv, ::testing::Values("gemma2", "gemma3", "mistral", "gpt-oss"));

}  // namespace
}  // namespace ferrum::test
