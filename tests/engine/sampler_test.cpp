#include "ferrum/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
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

std::map<int32_t, int> histogram(Sampler& s, const std::vector<float>& logits, int n,
                                 std::vector<int32_t> hist = {}) {
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
  SamplingParams p = plain(2.0f);  // flat enough that every kept token shows up
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

// --- speculative verification ----------------------------------------------------------------

// Chi-square goodness of fit of `counts` (n draws) against probabilities `p`.
double chi_square(const std::vector<int>& counts, const std::vector<double>& p, int n) {
  double chi = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double e = p[i] * n;
    chi += (counts[i] - e) * (counts[i] - e) / e;
  }
  return chi;
}

std::vector<double> softmax_of(const std::vector<float>& l) {
  double sum = 0;
  std::vector<double> p;
  for (float x : l) sum += std::exp(double(x));
  for (float x : l) p.push_back(std::exp(double(x)) / sum);
  return p;
}

// Whatever the proposer's q and whether its draft is accepted or replaced from the residual, the
// token that comes out is distributed as the target's p (Leviathan et al. 2023, theorem 1):
// chi-square over 8 tokens (7 df), 200000 draws, threshold 29.9 (significance 1e-4). Drawing a
// rejected draft's replacement from p instead of norm(max(0, p - q)) gives chi-square > 20000.
TEST(Sampler, VerifyKeepsTheTargetDistribution) {
  const std::vector<float> logits = {1.2f, 0.4f, -0.3f, 0.9f, -1.0f, 0.0f, 0.6f, -0.5f};
  const std::vector<double> p = softmax_of(logits);
  const std::vector<std::vector<TokenProb>> proposers = {
      {},  // deterministic: always token 0, the most likely
      {{3, 0.5f}, {4, 0.3f}, {6, 0.2f}},
      {{0, 0.05f}, {1, 0.05f}, {2, 0.3f}, {4, 0.4f}, {7, 0.2f}},
  };
  for (size_t k = 0; k < proposers.size(); ++k) {
    Sampler s(plain(1.0f), 8);
    std::mt19937_64 proposer_rng(7 + k);
    const auto& q = proposers[k];
    std::vector<int> counts(8, 0);
    constexpr int kDraws = 200000;
    int accepted = 0;
    for (int i = 0; i < kDraws; ++i) {
      int32_t draft = 0;
      if (!q.empty()) {
        double r = std::uniform_real_distribution<double>(0, 1)(proposer_rng), cum = 0;
        draft = q.back().id;
        for (const TokenProb& t : q)
          if (r < (cum += t.p)) {
            draft = t.id;
            break;
          }
      }
      const auto dist = s.distribution(logits.data(), {});
      const int32_t out = s.verify(dist, draft, q);
      accepted += out == draft;
      counts[out]++;
    }
    EXPECT_LT(chi_square(counts, p, kDraws), 29.9) << "proposer " << k;
    EXPECT_GT(accepted, 0) << "proposer " << k;
    EXPECT_LT(accepted, kDraws) << "proposer " << k;
  }
}

TEST(Sampler, GreedyVerifyAcceptsExactlyTheArgmax) {
  SamplingParams g = plain(0.0f);
  g.logit_bias[2] = 5.0f;  // the chain applies: the biased argmax is 2
  Sampler s(g, 4);
  const std::vector<float> l = {3.0f, 1.0f, 0.0f, 2.0f};
  const auto dist = s.distribution(l.data(), {});
  ASSERT_EQ(dist.size(), 1u);
  EXPECT_EQ(s.verify(dist, 2, {}), 2);
  EXPECT_EQ(s.verify(dist, 0, {}), 2);
  const std::vector<TokenProb> q = {{0, 0.7f}, {2, 0.3f}};
  EXPECT_EQ(s.verify(dist, 0, q), 2);
  EXPECT_EQ(s.verify(dist, 2, q), 2);
}

TEST(Sampler, SampleIsADrawFromTheDistribution) {
  SamplingParams p = plain(0.7f);
  p.top_k = 3;
  const std::vector<float> l = {0.1f, 2.0f, 1.5f, -1.0f, 1.9f};
  Sampler a(p, 5), b(p, 5);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.sample(l.data(), {}), b.draw(b.distribution(l.data(), {})));
  const auto dist = b.distribution(l.data(), {});
  ASSERT_EQ(dist.size(), 3u);
  EXPECT_EQ(dist[0].id, 1);
  EXPECT_EQ(dist[1].id, 4);
  EXPECT_EQ(dist[2].id, 2);
  EXPECT_NEAR(dist[0].p + dist[1].p + dist[2].p, 1.0f, 1e-6f);
}

}  // namespace
}  // namespace ferrum
