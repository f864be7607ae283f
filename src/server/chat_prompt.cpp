#include "server/chat_prompt.h"

#include "server/api_error.h"

namespace ferrum::server {
namespace {

// ChatML as used by Qwen/Hermes-style models (format facts: <|im_start|>role\ncontent<|im_end|>\n).
constexpr const char* kChatML =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% "
    "endif %}";
constexpr const char* kPlain =
    "{% for message in messages %}{{ message['role'] + ': ' + message['content'] + '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ 'assistant:' }}{% endif %}";

bool has_token(const Tokenizer& tok, const std::string& text) {
  const auto ids = tok.encode(text, false, true);
  return ids.size() == 1;
}

}  // namespace

ChatPrompt::ChatPrompt(const Tokenizer& tok) : tok_(tok) {
  if (!tok.chat_template().empty()) {
    tpl_ = std::make_unique<ChatTemplate>(tok.chat_template());
    kind_ = "model";
  } else if (has_token(tok, "<|im_start|>") && has_token(tok, "<|im_end|>")) {
    tpl_ = std::make_unique<ChatTemplate>(kChatML, "chatml");
    kind_ = "chatml";
  } else {
    tpl_ = std::make_unique<ChatTemplate>(kPlain, "plain");
    kind_ = "plain";
  }
}

std::string ChatPrompt::render(const nlohmann::json& messages, const nlohmann::json& tools,
                               const nlohmann::json& template_kwargs) const {
  if (!messages.is_array() || messages.empty())
    throw ApiError(400, "'messages' must be a non-empty array", "invalid_request_error", "messages");
  nlohmann::ordered_json msgs = nlohmann::ordered_json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    const auto& m = messages[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) throw ApiError(400, where + " must be an object", "invalid_request_error", where);
    if (!m.contains("role") || !m["role"].is_string())
      throw ApiError(400, where + ".role must be a string", "invalid_request_error", where + ".role");
    nlohmann::ordered_json om = nlohmann::ordered_json::parse(m.dump());
    const auto& c = m.contains("content") ? m["content"] : nlohmann::json();
    if (c.is_array()) {  // content parts: only text is supported
      std::string text;
      for (const auto& part : c) {
        if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
            !part["text"].is_string())
          throw ApiError(400,
                         where + ".content: only parts of type 'text' with a string 'text' are supported",
                         "invalid_request_error", where + ".content");
        text += part["text"].get<std::string>();
      }
      om["content"] = text;
    } else if (c.is_null()) {
      if (!m.contains("tool_calls")) om["content"] = "";
    } else if (!c.is_string()) {
      throw ApiError(400, where + ".content must be a string or an array of text parts",
                     "invalid_request_error", where + ".content");
    }
    msgs.push_back(std::move(om));
  }
  ChatTemplateOptions opt;
  opt.add_generation_prompt = true;
  opt.bos_token = tok_.bos_text();
  opt.eos_token = tok_.eos_text();
  if (!tools.is_null()) opt.tools = nlohmann::ordered_json::parse(tools.dump());
  if (template_kwargs.is_object()) opt.extra = nlohmann::ordered_json::parse(template_kwargs.dump());
  try {
    return tpl_->render(msgs, opt);
  } catch (const Error& e) {
    throw ApiError(400, std::string("chat template: ") + e.what(), "invalid_request_error", "messages");
  }
}

}  // namespace ferrum::server
