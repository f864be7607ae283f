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

class Sampler {
 public:
  Sampler(const SamplingParams& p, int n_vocab);

  // Picks the next token from raw logits. `history` is the context so far (prompt + output),
  // used by the penalties. Does not allocate after construction.
  int32_t sample(const float* logits, std::span<const int32_t> history);

  const SamplingParams& params() const { return p_; }

 private:
  SamplingParams p_;
  int n_vocab_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> cand_;  // (logit, id)
  std::vector<float> probs_;
  std::unordered_map<int32_t, int> counts_;
};

// Index of the largest value (lowest index on ties).
int32_t argmax(const float* x, int n);

}  // namespace ferrum
