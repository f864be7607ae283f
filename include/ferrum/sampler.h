// Token sampling: greedy, temperature, top-k, top-p, min-p, repetition / presence / frequency
// penalties and logit bias, with a seeded RNG so a run is reproducible. The chain follows
// llama.cpp's default order: bias -> penalties -> top-k -> top-p -> min-p -> temperature -> draw.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ferrum {

// The accepted range of one sampling parameter (both ends included). One table for
// SamplingParams::validate(), the CLI's flags and the HTTP API's fields, so each refuses the same values.
struct ParamRange {
  const char* name;
  double lo, hi;
  bool contains(double v) const { return v >= lo && v <= hi; }
};
namespace sampling_range {
inline constexpr ParamRange temperature{"temperature", 0, 2};
inline constexpr ParamRange top_k{"top_k", -1, 1 << 30};  // -1 and 0: off
inline constexpr ParamRange top_p{"top_p", 0, 1};         // 0 itself is refused: nothing would be left
inline constexpr ParamRange min_p{"min_p", 0, 1};
inline constexpr ParamRange repeat_penalty{"repeat_penalty", 0.01, 10};
inline constexpr ParamRange presence_penalty{"presence_penalty", -2, 2};
inline constexpr ParamRange frequency_penalty{"frequency_penalty", -2, 2};
inline constexpr ParamRange penalty_last_n{"penalty_last_n", -1, 1 << 30};  // -1: all
}  // namespace sampling_range

struct SamplingParams {
  float temperature = 0.8f;       // <= 0: greedy (argmax, lowest id on ties)
  int top_k = 40;                 // <= 0: off
  float top_p = 0.95f;            // >= 1: off
  float min_p = 0.05f;            // <= 0: off
  float repeat_penalty = 1.0f;    // 1: off (llama.cpp semantics: divide positive, multiply negative logits)
  float presence_penalty = 0.0f;  // OpenAI semantics
  float frequency_penalty = 0.0f;
  int penalty_last_n = 64;  // how many recent tokens the penalties look at (-1: all)
  uint64_t seed = 0xF3C0FFEEull;
  std::unordered_map<int32_t, float> logit_bias;

  // Throws ferrum::Error naming the parameter when a value is out of range.
  void validate() const;
};

// One token of a sampling distribution and its probability.
struct TokenProb {
  int32_t id = 0;
  float p = 0;
};

class Sampler {
 public:
  Sampler(const SamplingParams& p, int n_vocab);

  // Picks the next token from raw logits: draw(distribution(logits, history)). `history` is
  // the context so far (prompt + output), used by the penalties. Does not allocate after
  // construction.
  int32_t sample(const float* logits, std::span<const int32_t> history);

  // The distribution the chain leaves, most likely first (greedy: the argmax with p = 1). Valid
  // until the next call on this sampler.
  std::span<const TokenProb> distribution(const float* logits, std::span<const int32_t> history);
  // Draws one token from `dist` with this sampler's RNG.
  int32_t draw(std::span<const TokenProb> dist);

  // Speculative decoding's acceptance rule (Leviathan et al. 2023): a proposer suggested `draft`
  // for a position whose distribution here is `p` (from distribution()). Returns `draft` when
  // accepted (with probability min(1, p(draft) / q(draft))), otherwise a token drawn from
  // norm(max(0, p - q)), so the output is distributed exactly as p whatever the proposer does.
  // `q` is the proposer's distribution at that position; empty means a deterministic proposal
  // (q = 1 at draft). Greedy p: accepts exactly when draft is the argmax, else gives the argmax.
  int32_t verify(std::span<const TokenProb> p, int32_t draft, std::span<const TokenProb> q);

  const SamplingParams& params() const { return p_; }

 private:
  SamplingParams p_;
  int n_vocab_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> cand_;  // (logit, id)
  std::vector<float> probs_;
  std::vector<TokenProb> dist_;
  std::vector<float> q_dense_;  // verify(): q by token id, zero outside q's support
  std::vector<TokenProb> residual_;
  std::unordered_map<int32_t, int> counts_;
};

// Index of the largest value (lowest index on ties).
int32_t argmax(const float* x, int n);

}  // namespace ferrum
