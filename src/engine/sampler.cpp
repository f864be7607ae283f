#include "ferrum/sampler.h"

#include <algorithm>
#include <cmath>

#include "core/fail.h"

namespace ferrum {

void SamplingParams::validate() const {
  if (!std::isfinite(temperature)) fail("temperature must be a finite number");
  if (top_p <= 0.0f || top_p > 1.0f || !std::isfinite(top_p)) fail("top_p must be in (0, 1], got {}", top_p);
  if (min_p < 0.0f || min_p > 1.0f || !std::isfinite(min_p)) fail("min_p must be in [0, 1], got {}", min_p);
  if (repeat_penalty <= 0.0f || !std::isfinite(repeat_penalty))
    fail("repeat_penalty must be > 0, got {}", repeat_penalty);
  if (!std::isfinite(presence_penalty) || presence_penalty < -2.0f || presence_penalty > 2.0f)
    fail("presence_penalty must be in [-2, 2], got {}", presence_penalty);
  if (!std::isfinite(frequency_penalty) || frequency_penalty < -2.0f || frequency_penalty > 2.0f)
    fail("frequency_penalty must be in [-2, 2], got {}", frequency_penalty);
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
}

int32_t Sampler::sample(const float* logits, std::span<const int32_t> history) {
  cand_.clear();
  for (int i = 0; i < n_vocab_; ++i) cand_.emplace_back(logits[i], i);
  for (const auto& [id, bias] : p_.logit_bias)
    if (id >= 0 && id < n_vocab_) cand_[id].first += bias;

  const bool penalties =
      p_.repeat_penalty != 1.0f || p_.presence_penalty != 0.0f || p_.frequency_penalty != 0.0f;
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
    return best;
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
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  const double r = uni(rng_);
  double cum = 0.0;
  size_t last = 0;  // rounding can leave r above the sum: the last candidate that has mass
  for (size_t i = 0; i < cand_.size(); ++i) {
    cum += probs_[i];
    if (r < cum) return cand_[i].second;
    if (probs_[i] > 0) last = i;
  }
  return cand_[last].second;
}

}  // namespace ferrum
