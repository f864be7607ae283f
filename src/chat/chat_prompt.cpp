#include "chat/chat_prompt.h"

#include <algorithm>
#include <array>

namespace ferrum::chat {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

// ChatML as used by Qwen/Hermes-style models (format facts: <|im_start|>role\ncontent<|im_end|>\n).
constexpr const char* kChatML =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% "
    "endif %}";
constexpr const char* kPlain =
    "{% for message in messages %}{{ message['role'] + ': ' + message['content'] + '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ 'assistant:' }}{% endif %}";

constexpr std::array<const char*, 5> kRoles = {"system", "developer", "user", "assistant", "tool"};

bool has_token(const Tokenizer& tok, const std::string& text) {
  const auto ids = tok.encode(text, false, true);
  return ids.size() == 1;
}

// A message's content as one string: a string, or the concatenation of its text parts.
std::string content_text(const json& c, const std::string& where) {
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array())
    bad_field(where + ".content", where + ".content must be a string or an array of text parts");
  std::string text;
  for (size_t i = 0; i < c.size(); ++i) {
    const json& part = c[i];
    const std::string pw = fmt::format("{}.content[{}]", where, i);
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
      bad_field(pw, pw + " must be an object with a string 'type'");
    if (part["type"].get<std::string>() != "text")
      bad_field(pw, fmt::format("{}: content parts of type '{}' are not supported (only 'text')", pw,
                                part["type"].get<std::string>()));
    if (!part.contains("text") || !part["text"].is_string()) bad_field(pw, pw + ".text must be a string");
    text += part["text"].get<std::string>();
  }
  return text;
}

// Renders a system message with a probe text: a template that raises on it or leaves it out has
// no system role (llama.cpp probes templates the same way).
bool renders_system(const ChatTemplate& tpl, const Tokenizer& tok) {
  const std::string probe = "ferrum system probe 7f3a";
  const ojson msgs =
      ojson::array({{{"role", "system"}, {"content", probe}}, {{"role", "user"}, {"content", "hi"}}});
  ChatTemplateOptions opt;
  opt.bos_token = tok.bos_text();
  opt.eos_token = tok.eos_text();
  try {
    return tpl.render(msgs, opt).find(probe) != std::string::npos;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

FallbackTemplate fallback_template(const Tokenizer& tok) {
  if (has_token(tok, "<|im_start|>") && has_token(tok, "<|im_end|>")) return {kChatML, "chatml"};
  return {kPlain, "plain"};
}

ChatPrompt::ChatPrompt(const Tokenizer& tok, const std::string& chat_template) : tok_(tok), literal_(tok) {
  const std::string& source = chat_template.empty() ? tok.chat_template() : chat_template;
  source_ = source.empty() ? fallback_template(tok).source : source;
  if (!source.empty()) {
    tpl_ = std::make_unique<ChatTemplate>(source);
    kind_ = "model";
    tool_style_ = detect_tool_style(source);
    reasoning_ = template_reasoning(source, tok);
  } else {
    const FallbackTemplate fb = fallback_template(tok);
    tpl_ = std::make_unique<ChatTemplate>(fb.source, fb.kind);
    kind_ = fb.kind;
  }
  system_role_ = renders_system(*tpl_, tok);
}

// A request value as a template value; its strings (keys too) marked when `mark`. The depth is
// bounded by the body parser (json_body.h).
ojson ChatPrompt::request_value(const json& v, bool mark) const {
  if (v.is_string()) return mark ? literal_.mark(v.get_ref<const std::string&>()) : v.get<std::string>();
  if (v.is_array()) {
    ojson a = ojson::array();
    for (const json& x : v) a.push_back(request_value(x, mark));
    return a;
  }
  if (v.is_object()) {
    ojson o = ojson::object();
    for (const auto& [k, x] : v.items()) o[mark ? literal_.mark(k) : k] = request_value(x, mark);
    return o;
  }
  return ojson::parse(v.dump());  // number, boolean, null
}

ojson ChatPrompt::checked_messages(const json& messages, bool mark) const {
  if (!messages.is_array() || messages.empty()) bad_field("messages", "'messages' must be a non-empty array");
  ojson msgs = ojson::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    const json& m = messages[i];
    const std::string where = fmt::format("messages[{}]", i);
    if (!m.is_object()) bad_field(where, where + " must be an object");
    if (!m.contains("role") || !m["role"].is_string())
      bad_field(where + ".role", where + ".role must be a string");
    const std::string role = m["role"].get<std::string>();
    if (std::find(kRoles.begin(), kRoles.end(), role) == kRoles.end())
      bad_field(where + ".role",
                fmt::format("{}.role '{}' is not one of system, developer, user, assistant, tool", where,
                            role.substr(0, 64)));
    const bool has_calls = m.contains("tool_calls") && !m["tool_calls"].is_null();
    if (has_calls && role != "assistant")
      bad_field(where + ".tool_calls", "only assistant messages carry tool_calls");
    ojson om = request_value(m, mark);
    if (om.contains("tool_calls")) order_tool_call_keys(om["tool_calls"]);
    const json c = m.contains("content") ? m["content"] : json();
    if (c.is_null()) {
      if (!has_calls) bad_field(where + ".content", where + ".content is required (a string or text parts)");
      om["content"] = "";
    } else {
      const std::string text = content_text(c, where);
      om["content"] = mark ? literal_.mark(text) : text;
    }
    msgs.push_back(std::move(om));
  }
  return msgs;
}

ChatPrompt::Rendered ChatPrompt::render(const json& messages, const json& tools, const json& template_kwargs,
                                        bool special_tokens_in_messages) const {
  const bool mark = !special_tokens_in_messages;
  ojson msgs = checked_messages(messages, mark);
  ChatTemplateOptions opt;
  opt.add_generation_prompt = true;
  opt.bos_token = tok_.bos_text();
  opt.eos_token = tok_.eos_text();
  if (!tools.is_null()) {
    opt.tools = request_value(tools, mark);
    order_tool_keys(opt.tools);
  }
  if (template_kwargs.is_object()) opt.extra = request_value(template_kwargs, mark);
  std::string text;
  try {
    text = tpl_->render(msgs, opt);
  } catch (const Error& e) {
    throw ChatError("messages", std::string("chat template: ") + e.what());
  }
  if (!mark) return {std::move(text), {}};
  ChatLiteral::Unmarked u = literal_.unmark(text);
  return {std::move(u.text), std::move(u.literal)};
}

std::vector<int32_t> ChatPrompt::tokens(const json& messages, const json& tools, const json& template_kwargs,
                                        bool special_tokens_in_messages, PromptReasoning* reasoning) const {
  const Rendered r = render(messages, tools, template_kwargs, special_tokens_in_messages);
  if (reasoning) *reasoning = reasoning_ ? prompt_reasoning(r.text, *reasoning_) : PromptReasoning::None;
  // Templates that write the BOS text themselves get no second BOS (a user's literal one does not count).
  const std::string bos = tok_.bos_text();
  const bool template_bos =
      !bos.empty() && r.text.starts_with(bos) && (r.literal.empty() || r.literal.front().begin != 0);
  try {
    return tok_.encode_with_literal(r.text, !template_bos, r.literal);
  } catch (const Error& e) {
    bad_field("messages", e.what());
  }
}

}  // namespace ferrum::chat
