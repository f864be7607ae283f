// Turns an OpenAI `messages` array into prompt tokens with the model's chat template. Models
// without a template: ChatML when the vocabulary has <|im_start|>/<|im_end|>, else a plain
// "role: content" transcript ending in "assistant:". Control tokens written inside the request's
// strings stay text (chat_literal.h) unless the caller trusts its clients.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/chat_literal.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace ferrum::server {

class ChatPrompt {
 public:
  explicit ChatPrompt(const Tokenizer& tok);
  // The rendered prompt and the spans of it that are request text to be read literally.
  struct Rendered {
    std::string text;
    std::vector<Tokenizer::TextSpan> literal;
  };
  // Throws ApiError(400) for a malformed message or a template that raises.
  Rendered render(const nlohmann::json& messages, const nlohmann::json& tools,
                  const nlohmann::json& template_kwargs, bool special_tokens_in_messages = false) const;
  // render() tokenized, with a BOS unless the template wrote one itself.
  std::vector<int32_t> tokens(const nlohmann::json& messages, const nlohmann::json& tools,
                              const nlohmann::json& template_kwargs,
                              bool special_tokens_in_messages = false) const;
  const std::string& kind() const { return kind_; }  // "model", "chatml", "plain"

 private:
  nlohmann::ordered_json checked_messages(const nlohmann::json& messages, bool mark) const;
  nlohmann::ordered_json request_value(const nlohmann::json& v, bool mark) const;
  const Tokenizer& tok_;
  ChatLiteral literal_;
  std::unique_ptr<ChatTemplate> tpl_;
  std::string kind_;
};

}  // namespace ferrum::server
