// POST /v1/embeddings: string / list-of-strings / token-array / list-of-token-arrays input,
// encoding_format float or base64, usage. The vectors come from ferrum/embeddings.h for either
// kind of model: an encoder served alone (one request at a time, a Model is not re-entrant) or a
// decoder behind the engine (each forward taken between two generation steps). The server only
// parses the request and shapes the answer.
#pragma once

#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ferrum/embeddings.h"
#include "ferrum/tokenizer.h"

namespace ferrum {
class Engine;
}

namespace ferrum::server {

class Embedder {
 public:
  // A model served for embeddings only (an encoder): inputs up to its position table, pooled
  // as its files say unless `opts` says otherwise.
  Embedder(Model& model, const Tokenizer& tok, const EmbedOptions& opts = {});
  // The model of `engine` (which it must outlive), a decoder: last or mean pooling; inputs up
  // to the engine's tokens per sequence.
  Embedder(Engine& engine, const EmbedOptions& opts);

  // The OpenAI response body; throws ApiError for a malformed request.
  nlohmann::json handle(const nlohmann::json& body, const std::string& model_name);
  const Tokenizer& tokenizer() const { return tok_; }
  const ModelConfig& config() const { return cfg_; }
  int64_t dim() const { return cfg_.n_embd; }
  Pooling pooling() const { return *opts_.pooling; }
  bool normalize() const { return *opts_.normalize; }

 private:
  using EmbedFn = std::function<std::vector<std::vector<float>>(const std::vector<std::vector<int32_t>>&)>;
  const Tokenizer& tok_;
  const ModelConfig& cfg_;
  int64_t max_tokens_;  // per input
  EmbedOptions opts_;   // pooling and normalization settled
  EmbedFn embed_;
  std::mutex mu_;  // the model's, when no engine owns it
};

}  // namespace ferrum::server
