#include "ferrum/sampler.h"

#include <algorithm>
#include <cmath>

#include "core/fail.h"
#include "core/profile.h"

namespace ferrum {

namespace {
void check(const ParamRange& r, double v) {
  if (!std::isfinite(v) || !r.contains(v)) fail("{} must be in [{}, {}], got {}", r.name, r.lo, r.hi, v);
}
}  // namespace

void SamplingParams::validate() const {
  namespace sr = sampling_range;
  check(sr::temperature, temperature);
  check(sr::top_k, top_k);
  check(sr::top_p, top_p);
  if (top_p == 0.0f) fail("top_p must be in (0, 1], got 0");
  check(sr::min_p, min_p);
  check(sr::repeat_penalty, repeat_penalty);
  check(sr::presence_penalty, presence_penalty);
  check(sr::frequency_penalty, frequency_penalty);
  check(sr::penalty_last_n, penalty_last_n);
}

int32_t argmax(const float* x, int n) {
  int32_t best = 0;
  for (int i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return best;
}

Sampler::Sampler(const SamplingParams& p, int n_vocab) : p_(p), n_vocab_(n_vocab), rng_(p.seed) {
  p_.validate();
  cand_.reserve(n_vocab);
  probs_.reserve(n_vocab);
  dist_.reserve(n_vocab);
}

int32_t Sampler::sample(const float* logits, std::span<const int32_t> history) {
  const profile::Scope scope(profile::Op::Sampling);
  return draw(distribution(logits, history));
}

std::span<const TokenProb> Sampler::distribution(const float* logits, std::span<const int32_t> history) {
  dist_.clear();
  const bool penalties =
      p_.repeat_penalty != 1.0f || p_.presence_penalty != 0.0f || p_.frequency_penalty != 0.0f;
  // Greedy with the logits as they are: the argmax straight from them (no copy of the vocabulary;
  // this runs for every sequence of every step on the engine thread).
  if (p_.temperature <= 0.0f && p_.logit_bias.empty() && (!penalties || history.empty())) {
    dist_.push_back({argmax(logits, n_vocab_), 1.0f});
    return dist_;
  }
  cand_.clear();
  for (int i = 0; i < n_vocab_; ++i) cand_.emplace_back(logits[i], i);
  for (const auto& [id, bias] : p_.logit_bias)
    if (id >= 0 && id < n_vocab_) cand_[id].first += bias;

  if (penalties && !history.empty()) {
    counts_.clear();
    const size_t n =
        p_.penalty_last_n < 0 ? history.size() : std::min<size_t>(history.size(), p_.penalty_last_n);
    for (size_t i = history.size() - n; i < history.size(); ++i) counts_[history[i]]++;
    for (const auto& [id, count] : counts_) {
      if (id < 0 || id >= n_vocab_) continue;
      float& l = cand_[id].first;
      if (p_.repeat_penalty != 1.0f) l = l > 0 ? l / p_.repeat_penalty : l * p_.repeat_penalty;
      l -= static_cast<float>(count) * p_.frequency_penalty + (count > 0 ? p_.presence_penalty : 0.0f);
    }
  }

  if (p_.temperature <= 0.0f) {
    int32_t best = 0;
    for (int i = 1; i < n_vocab_; ++i)
      if (cand_[i].first > cand_[best].first) best = i;
    dist_.push_back({best, 1.0f});
    return dist_;
  }

  // Sort candidates by logit (descending, lower id first on ties); top-k limits the sort.
  auto better = [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  size_t k = cand_.size();
  if (p_.top_k > 0 && static_cast<size_t>(p_.top_k) < k) {
    k = p_.top_k;
    std::partial_sort(cand_.begin(), cand_.begin() + k, cand_.end(), better);
    cand_.resize(k);
  } else {
    std::sort(cand_.begin(), cand_.end(), better);
  }

  // Softmax (at temperature 1) for top-p / min-p filtering.
  auto softmax = [&](float temp) {
    probs_.resize(cand_.size());
    const float mx = cand_[0].first;
    double sum = 0.0;
    for (size_t i = 0; i < cand_.size(); ++i) {
      probs_[i] = std::exp((cand_[i].first - mx) / temp);
      sum += probs_[i];
    }
    for (auto& p : probs_) p = static_cast<float>(p / sum);
  };
  softmax(1.0f);
  if (p_.top_p < 1.0f) {
    double cum = 0.0;
    size_t keep = cand_.size();
    for (size_t i = 0; i < cand_.size(); ++i) {
      cum += probs_[i];
      if (cum >= p_.top_p) {
        keep = i + 1;
        break;
      }
    }
    cand_.resize(keep);
    probs_.resize(keep);
  }
  if (p_.min_p > 0.0f) {
    const float thresh = probs_[0] * p_.min_p;
    size_t keep = 1;
    while (keep < cand_.size() && probs_[keep] >= thresh) ++keep;
    cand_.resize(keep);
  }
  softmax(p_.temperature);
  for (size_t i = 0; i < cand_.size(); ++i) dist_.push_back({cand_[i].second, probs_[i]});
  return dist_;
}

int32_t Sampler::draw(std::span<const TokenProb> dist) {
  if (dist.empty()) fail("Sampler::draw: empty distribution");
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  const double r = uni(rng_);
  double cum = 0.0;
  const TokenProb* last = &dist.front();  // rounding can leave r above the sum: the last token with mass
  for (const TokenProb& t : dist) {
    cum += t.p;
    if (r < cum) return t.id;
    if (t.p > 0) last = &t;
  }
  return last->id;
}

int32_t Sampler::verify(std::span<const TokenProb> p, int32_t draft, std::span<const TokenProb> q) {
  if (p.empty()) fail("Sampler::verify: empty distribution");
  if (q_dense_.empty()) q_dense_.assign(n_vocab_, 0.0f);
  if (q.empty()) {
    if (draft < 0 || draft >= n_vocab_) fail("Sampler::verify: draft token {} outside the vocabulary", draft);
    q_dense_[draft] = 1.0f;
  } else {
    for (const TokenProb& t : q) q_dense_[t.id] = t.p;  // ids come from a sampler: in range
  }
  float p_draft = 0.0f;
  for (const TokenProb& t : p)
    if (t.id == draft) p_draft = t.p;
  const float q_draft = q_dense_[draft];
  bool accept = q_draft > 0.0f && p_draft >= q_draft;  // ratio >= 1: no draw needed
  if (!accept && q_draft > 0.0f && p_draft > 0.0f) {
    std::uniform_real_distribution<double> uni(0.0, 1.0);
    accept = uni(rng_) * q_draft < p_draft;
  }
  int32_t out = draft;
  if (!accept) {
    residual_.clear();
    double sum = 0.0;
    for (const TokenProb& t : p) {
      const float r = std::max(0.0f, t.p - q_dense_[t.id]);
      if (r > 0.0f) {
        residual_.push_back({t.id, r});
        sum += r;
      }
    }
    if (residual_.empty()) {  // p == q up to rounding: any draw from p is as good
      out = draw(p);
    } else {
      for (TokenProb& t : residual_) t.p = static_cast<float>(t.p / sum);
      out = draw(residual_);
    }
  }
  if (q.empty())
    q_dense_[draft] = 0.0f;
  else
    for (const TokenProb& t : q) q_dense_[t.id] = 0.0f;
  return out;
}

}  // namespace ferrum
