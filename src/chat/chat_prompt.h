// Chat prompting: an OpenAI-style `messages` array (+ tools, template arguments) into prompt
// tokens, for the server and for `ferrum run`'s interactive chat. The model's own chat template
// when it has one; otherwise ChatML when the vocabulary has <|im_start|>/<|im_end|>, else a plain
// "role: content" transcript ending in "assistant:". Messages are validated (roles, content,
// text parts); control tokens written inside them stay text (chat_literal.h) unless the caller
// trusts its clients; a BOS is added unless the template wrote one.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chat/chat_error.h"
#include "chat/chat_literal.h"
#include "chat/reasoning.h"
#include "chat/tools.h"
#include "core/fail.h"
#include "ferrum/tokenizer.h"
#include "template/chat_template.h"

namespace ferrum::chat {

// The template used for a model that has none: ChatML when the vocabulary has its markers, else
// plain "role: text" turns. `ferrum template` shows it, so a user sees what the server sends.
struct FallbackTemplate {
  const char* source;
  const char* kind;  // "chatml" or "plain"
};
FallbackTemplate fallback_template(const Tokenizer& tok);

class ChatPrompt {
 public:
  // `chat_template`: Jinja text used instead of the tokenizer's ("" = the tokenizer's).
  explicit ChatPrompt(const Tokenizer& tok, const std::string& chat_template = "");
  // The rendered prompt and the spans of it that are request text to be read literally.
  struct Rendered {
    std::string text;
    std::vector<Tokenizer::TextSpan> literal;
  };
  // Throws ChatError for a malformed message or a template that raises.
  Rendered render(const nlohmann::json& messages, const nlohmann::json& tools,
                  const nlohmann::json& template_kwargs, bool special_tokens_in_messages = false) const;
  // render() tokenized, with a BOS unless the template wrote one itself; `reasoning` (when given and
  // the template thinks) is set to where the rendered prompt leaves the reasoning.
  std::vector<int32_t> tokens(const nlohmann::json& messages, const nlohmann::json& tools,
                              const nlohmann::json& template_kwargs, bool special_tokens_in_messages = false,
                              PromptReasoning* reasoning = nullptr) const;
  const std::string& kind() const { return kind_; }  // "model", "chatml", "plain"
  const std::string& source() const { return source_; }  // the template's Jinja text
  // How the template writes tool calls (Default for the ChatML and plain fallbacks).
  ToolStyle tool_style() const { return tool_style_; }
  // Whether the template writes a system message's content (Phi-3's drops system messages).
  bool system_role() const { return system_role_; }
  // The reasoning markers of a template that thinks (reasoning.h); nullopt otherwise.
  const std::optional<ReasoningMarkers>& reasoning() const { return reasoning_; }

 private:
  nlohmann::ordered_json checked_messages(const nlohmann::json& messages, bool mark) const;
  nlohmann::ordered_json request_value(const nlohmann::json& v, bool mark) const;
  const Tokenizer& tok_;
  ChatLiteral literal_;
  std::unique_ptr<ChatTemplate> tpl_;
  std::string kind_, source_;
  ToolStyle tool_style_ = ToolStyle::Default;
  bool system_role_ = true;
  std::optional<ReasoningMarkers> reasoning_;
};

}  // namespace ferrum::chat
