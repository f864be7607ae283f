// The public chat API (ferrum/chat.h) over ChatPrompt, which takes OpenAI-style JSON messages.
#include <nlohmann/json.hpp>

#include "chat/chat_prompt.h"
#include "ferrum/chat.h"

namespace ferrum {
namespace {

nlohmann::json to_json(std::span<const ChatMessage> messages) {
  nlohmann::json a = nlohmann::json::array();
  for (const ChatMessage& m : messages) a.push_back({{"role", m.role}, {"content", m.content}});
  return a;
}

}  // namespace

ChatFormatter::ChatFormatter(const Tokenizer& tok) : impl_(std::make_unique<chat::ChatPrompt>(tok)) {}
ChatFormatter::~ChatFormatter() = default;

std::string ChatFormatter::render(std::span<const ChatMessage> messages) const {
  return impl_->render(to_json(messages), nullptr, nullptr).text;
}

std::vector<int32_t> ChatFormatter::tokens(std::span<const ChatMessage> messages,
                                           bool special_tokens_in_messages) const {
  return impl_->tokens(to_json(messages), nullptr, nullptr, special_tokens_in_messages);
}

const std::string& ChatFormatter::kind() const {
  return impl_->kind();
}

std::string render_chat(const Tokenizer& tok, std::span<const ChatMessage> messages) {
  return ChatFormatter(tok).render(messages);
}

std::vector<int32_t> chat_tokens(const Tokenizer& tok, std::span<const ChatMessage> messages) {
  return ChatFormatter(tok).tokens(messages);
}

}  // namespace ferrum
