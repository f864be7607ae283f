// Autoregressive generation for one sequence: prefill the prompt, then sample and decode token
// by token until a stop condition. Used by `ferrum run` (and later the server's engine).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "ferrum/model.h"
#include "ferrum/sampler.h"
#include "ferrum/tokenizer.h"

namespace ferrum {

struct GenerateOptions {
  int max_tokens = 256;  // new tokens; stops earlier at an end-of-generation token
  bool stop_at_eog = true;
  SamplingParams sampling;
};

struct GenerateResult {
  std::vector<int32_t> tokens;  // generated ids (without the prompt; includes the EOG token if hit)
  std::string finish_reason;    // "stop" (EOG) or "length"
  double prefill_seconds = 0, decode_seconds = 0;
};

// on_token(id) is called for every generated token as soon as it is sampled; returning false stops.
GenerateResult generate(Model& model, KvCache& kv, const Tokenizer& tok, int seq,
                        std::span<const int32_t> prompt, const GenerateOptions& opt,
                        const std::function<bool(int32_t)>& on_token);

}  // namespace ferrum
