// Chat templates: renders a conversation with a model's Jinja chat template exactly as Hugging
// Face transformers' apply_chat_template does (Jinja2 with trim_blocks/lstrip_blocks, HF's
// tojson, raise_exception and strftime_now globals).
#pragma once

#include <ctime>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "template/jinja/template.h"

namespace ferrum {

// JSON inputs are ordered_json because Python dicts keep insertion order and templates print
// them with tojson (a nlohmann::json converts implicitly, with its keys sorted).
struct ChatTemplateOptions {
  bool add_generation_prompt = true;
  std::string bos_token, eos_token;
  nlohmann::ordered_json tools = nullptr;  // list of tool schemas, or null
  // Other template variables (enable_thinking, date_string, pad_token, ...); they override the above.
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  // strftime_now(fmt) as the template sees it; default: the local clock.
  std::function<std::string(const std::string&)> strftime_now;
};

// C strftime of a broken-down time (what Python's datetime.strftime does on Linux).
std::string strftime_at(const std::tm& t, const std::string& fmt);

class ChatTemplate {
 public:
  // Parses the template; throws jinja::TemplateError (a ferrum::Error) naming line and column.
  explicit ChatTemplate(std::string source, std::string name = "chat_template");

  // messages: array of {"role", "content", ...}. Throws jinja::TemplateError when the template
  // raises (raise_exception messages are kept verbatim in message()).
  std::string render(const nlohmann::ordered_json& messages, const ChatTemplateOptions& opt) const;

  const std::string& source() const { return source_; }
  const std::string& name() const { return tpl_.name(); }

 private:
  std::string source_;
  jinja::Template tpl_;
};

}  // namespace ferrum
