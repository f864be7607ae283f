// Turns an OpenAI `messages` array into prompt text with the model's chat template. Models
// without a template: ChatML when the vocabulary has <|im_start|>/<|im_end|>, else a plain
// "role: content" transcript ending in "assistant:".
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace ferrum::server {

class ChatPrompt {
 public:
  explicit ChatPrompt(const Tokenizer& tok);
  // Throws ApiError(400) for a malformed message or a template that raises.
  std::string render(const nlohmann::json& messages, const nlohmann::json& tools,
                     const nlohmann::json& template_kwargs) const;
  const std::string& kind() const { return kind_; }  // "model", "chatml", "plain"

 private:
  const Tokenizer& tok_;
  std::unique_ptr<ChatTemplate> tpl_;
  std::string kind_;
};

}  // namespace ferrum::server
