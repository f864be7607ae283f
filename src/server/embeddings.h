// POST /v1/embeddings for encoder (BERT) models: string / list-of-strings / token-array input,
// encoding_format float or base64, usage. One batch at a time (the encoder is not re-entrant).
#pragma once

#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/bert_model.h"

namespace ferrum::server {

class Embedder {
 public:
  Embedder(BertModel& model, const Tokenizer& tok) : model_(model), tok_(tok) {}
  // The OpenAI response body; throws ApiError for a malformed request.
  nlohmann::json handle(const nlohmann::json& body, const std::string& model_name);
  const Tokenizer& tokenizer() const { return tok_; }
  const BertModel& model() const { return model_; }

 private:
  BertModel& model_;
  const Tokenizer& tok_;
  std::mutex mu_;
};

}  // namespace ferrum::server
