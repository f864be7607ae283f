#include "ferrum/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "ferrum/error.h"

namespace ferrum {
namespace {

SamplingParams plain(float temp) {
  SamplingParams p;
  p.temperature = temp;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  return p;
}

std::map<int32_t, int> histogram(Sampler& s, const std::vector<float>& logits, int n, std::vector<int32_t> hist = {}) {
  std::map<int32_t, int> h;
  for (int i = 0; i < n; ++i) h[s.sample(logits.data(), hist)]++;
  return h;
}

TEST(Sampler, GreedyPicksArgmaxLowestIdOnTies) {
  Sampler s(plain(0.0f), 5);
  std::vector<float> l = {1, 3, 3, 2, -1};
  EXPECT_EQ(s.sample(l.data(), {}), 1);
}

TEST(Sampler, SameSeedSameSequenceOtherSeedDiffers) {
  std::vector<float> l = {1.0f, 1.1f, 0.9f, 1.05f, 0.5f, 1.2f};
  auto run = [&](uint64_t seed) {
    SamplingParams p = plain(1.0f);
    p.seed = seed;
    Sampler s(p, l.size());
    std::vector<int32_t> out;
    for (int i = 0; i < 64; ++i) out.push_back(s.sample(l.data(), {}));
    return out;
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
}

TEST(Sampler, TemperatureOneFollowsSoftmax) {
  std::vector<float> l = {0.0f, std::log(3.0f)};  // p = 1/4, 3/4
  Sampler s(plain(1.0f), 2);
  auto h = histogram(s, l, 20000);
  EXPECT_NEAR(h[1] / 20000.0, 0.75, 0.02);
}

TEST(Sampler, TopKKeepsOnlyKMostLikely) {
  std::vector<float> l = {5, 4, 3, 2, 1, 0};
  SamplingParams p = plain(5.0f);  // flat enough that every kept token shows up
  p.top_k = 3;
  Sampler s(p, l.size());
  auto h = histogram(s, l, 3000);
  EXPECT_EQ(h.size(), 3u);
  for (auto& [id, n] : h) EXPECT_LT(id, 3);
}

TEST(Sampler, TopPKeepsSmallestSetReachingP) {
  // probs ~ 0.5, 0.3, 0.2 (logits = log p)
  std::vector<float> l = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  SamplingParams p = plain(1.0f);
  p.top_p = 0.75f;
  Sampler s(p, 3);
  auto h = histogram(s, l, 4000);
  EXPECT_EQ(h.count(2), 0u);
  EXPECT_NEAR(h[0] / 4000.0, 0.5 / 0.8, 0.03);
}

TEST(Sampler, MinPDropsTokensBelowFractionOfTop) {
  std::vector<float> l = {std::log(0.6f), std::log(0.3f), std::log(0.1f)};
  SamplingParams p = plain(1.0f);
  p.min_p = 0.2f;  // threshold 0.12: drops the 0.1 token
  Sampler s(p, 3);
  auto h = histogram(s, l, 4000);
  EXPECT_EQ(h.count(2), 0u);
  EXPECT_GT(h[1], 0);
}

TEST(Sampler, RepetitionPenaltyDividesPositiveMultipliesNegative) {
  std::vector<float> l = {2.0f, 1.5f, -1.0f, -1.2f};
  SamplingParams p = plain(0.0f);
  p.repeat_penalty = 2.0f;  // token 0: 2 -> 1 < 1.5
  Sampler s(p, 4);
  std::vector<int32_t> hist = {0};
  EXPECT_EQ(s.sample(l.data(), hist), 1);
  EXPECT_EQ(Sampler(plain(0.0f), 4).sample(l.data(), hist), 0);
}

TEST(Sampler, PresenceAndFrequencyPenalties) {
  std::vector<float> l = {2.0f, 1.5f, 0.0f};
  SamplingParams p = plain(0.0f);
  p.frequency_penalty = 0.3f;  // token 0 seen twice: 2 - 0.6 = 1.4 < 1.5
  Sampler s(p, 3);
  std::vector<int32_t> twice = {0, 0}, once = {0};
  EXPECT_EQ(s.sample(l.data(), twice), 1);
  EXPECT_EQ(s.sample(l.data(), once), 0);  // 2 - 0.3 = 1.7
  SamplingParams q = plain(0.0f);
  q.presence_penalty = 0.6f;  // once is enough
  EXPECT_EQ(Sampler(q, 3).sample(l.data(), once), 1);
}

TEST(Sampler, LogitBiasCanForceOrBanTokens) {
  std::vector<float> l = {2.0f, 1.0f, 0.0f};
  SamplingParams p = plain(0.0f);
  p.logit_bias[2] = 100.0f;
  EXPECT_EQ(Sampler(p, 3).sample(l.data(), {}), 2);
  SamplingParams q = plain(1.0f);
  q.logit_bias[0] = -INFINITY;
  Sampler s(q, 3);
  auto h = histogram(s, l, 500);
  EXPECT_EQ(h.count(0), 0u);
}

TEST(Sampler, RejectsOutOfRangeParameters) {
  SamplingParams p;
  p.top_p = 0.0f;
  EXPECT_THROW(p.validate(), Error);
  p = SamplingParams();
  p.min_p = 1.5f;
  EXPECT_THROW(p.validate(), Error);
  p = SamplingParams();
  p.repeat_penalty = 0.0f;
  EXPECT_THROW(p.validate(), Error);
  p = SamplingParams();
  p.temperature = NAN;
  EXPECT_THROW(p.validate(), Error);
}

}  // namespace
}  // namespace ferrum
