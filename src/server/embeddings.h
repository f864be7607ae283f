// POST /v1/embeddings: string / list-of-strings / token-array / list-of-token-arrays input,
// encoding_format float or base64, usage. Two kinds of model behind it: an encoder (BERT; one
// batch at a time, the encoder is not re-entrant) or a decoder behind the engine (hidden states
// pooled by models/decoder_embed.h, each forward taken between two generation steps). The server
// only parses the request and shapes the answer; the vectors come from the model side.
#pragma once

#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ferrum/tokenizer.h"
#include "models/bert_model.h"
#include "models/decoder_embed.h"

namespace ferrum {
class Engine;
}

namespace ferrum::server {

class Embedder {
 public:
  // An encoder, pooled as the model's files say unless `pooling` is given.
  Embedder(BertModel& model, const Tokenizer& tok, std::optional<Pooling> pooling = std::nullopt);
  // A decoder served by `engine` (which it must outlive): Last or Mean pooling; inputs up to the
  // engine's tokens per sequence.
  Embedder(Engine& engine, const DecoderEmbedOptions& opts);

  // The OpenAI response body; throws ApiError for a malformed request.
  nlohmann::json handle(const nlohmann::json& body, const std::string& model_name);
  const Tokenizer& tokenizer() const { return tok_; }
  const ModelConfig& config() const { return cfg_; }
  int64_t dim() const { return cfg_.n_embd; }
  Pooling pooling() const { return pooling_; }
  bool normalize() const { return normalize_; }

 private:
  using EmbedFn = std::function<std::vector<std::vector<float>>(const std::vector<std::vector<int32_t>>&)>;
  const Tokenizer& tok_;
  const ModelConfig& cfg_;
  Pooling pooling_;
  bool normalize_;
  int64_t max_tokens_;  // per input
  EmbedFn embed_;
  std::mutex mu_;  // the encoder's
};

}  // namespace ferrum::server
