// Chat prompts: a conversation (role + content messages) rendered with the model's own chat
// template (GGUF tokenizer.chat_template, Hugging Face tokenizer_config.json / chat_template.jinja)
// into the prompt text or token ids that make the model answer as the assistant. A model without a
// template gets ChatML when its vocabulary has <|im_start|>/<|im_end|>, otherwise a plain
// "role: content" transcript ending in "assistant:". The generation prompt is always added.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ferrum/tokenizer.h"

namespace ferrum {

namespace chat {
class ChatPrompt;
}

struct ChatMessage {
  std::string role;  // "system", "developer", "user", "assistant" or "tool"
  std::string content;
};

// Parses the template once; render()/tokens() can then be called for any number of conversations
// (they are const). Keeps a reference to `tok`, which must outlive the formatter.
class ChatFormatter {
 public:
  explicit ChatFormatter(const Tokenizer& tok);  // throws ferrum::Error for a template that does not parse
  ~ChatFormatter();
  ChatFormatter(const ChatFormatter&) = delete;
  ChatFormatter& operator=(const ChatFormatter&) = delete;

  // The prompt text. Throws ferrum::Error for an unknown role, no messages, or a template that
  // raises (e.g. "roles must alternate").
  std::string render(std::span<const ChatMessage> messages) const;
  // render() tokenized, with a BOS unless the template wrote one itself. Control-token texts
  // inside message contents (e.g. "<|im_start|>") stay text unless special_tokens_in_messages:
  // a user cannot forge a turn.
  std::vector<int32_t> tokens(std::span<const ChatMessage> messages,
                              bool special_tokens_in_messages = false) const;
  // Which template is used: "model" (the model's own), "chatml" or "plain".
  const std::string& kind() const;

 private:
  std::unique_ptr<chat::ChatPrompt> impl_;
};

// One-shot forms of ChatFormatter(tok).render(messages) / .tokens(messages).
std::string render_chat(const Tokenizer& tok, std::span<const ChatMessage> messages);
std::vector<int32_t> chat_tokens(const Tokenizer& tok, std::span<const ChatMessage> messages);

}  // namespace ferrum
