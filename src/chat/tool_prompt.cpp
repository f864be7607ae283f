#include "chat/tool_prompt.h"

#include <fmt/format.h>

#include "chat/chat_error.h"

namespace ferrum::chat {
namespace {

using json = nlohmann::json;

// One assistant tool call, checked, with its arguments as an object.
json checked_call(const json& c, const std::string& where) {
  if (!c.is_object()) bad_field(where, where + " must be an object");
  if (c.contains("type") && c["type"] != "function")
    bad_field(where + ".type", where + ".type must be \"function\"");
  if (c.contains("id") && !c["id"].is_string()) bad_field(where + ".id", where + ".id must be a string");
  if (!c.contains("function") || !c["function"].is_object())
    bad_field(where + ".function", where + ".function must be an object");
  const json& f = c["function"];
  if (!f.contains("name") || !f["name"].is_string())
    bad_field(where + ".function.name", where + ".function.name must be a string");
  json args = f.contains("arguments") ? f["arguments"] : json::object();
  if (args.is_string()) {
    // Depth is bounded: the string came in a request body, whose own nesting was bounded, but
    // its contents were not; parse with a limit so templates never recurse on deep input.
    int deepest = 0;
    const json::parser_callback_t depth = [&deepest](int d, json::parse_event_t, json&) {
      deepest = std::max(deepest, d);
      return d <= 64;
    };
    json parsed = json::parse(args.get<std::string>(), depth, false);
    if (parsed.is_discarded() || deepest > 64 || !parsed.is_object())
      bad_field(where + ".function.arguments",
                where + ".function.arguments must be a JSON object (as a string)");
    args = std::move(parsed);
  }
  if (!args.is_object())
    bad_field(where + ".function.arguments", where + ".function.arguments must be a JSON object");
  json out = c;
  out["type"] = "function";
  out["function"]["arguments"] = std::move(args);
  return out;
}

// A message's role, "" when it has none or not a string (checked_messages reports those).
std::string role_of(const json& m) {
  return m.is_object() && m.contains("role") && m["role"].is_string() ? m["role"].get<std::string>() : "";
}

std::string call_text(const json& call) {
  return fmt::format("<tool_call>\n{{\"name\": {}, \"arguments\": {}}}\n</tool_call>",
                     call["function"]["name"].dump(), call["function"]["arguments"].dump());
}

// `content` (a string, text parts or null) with `text` added after it.
json appended(const json& content, const std::string& text, const std::string& sep) {
  if (content.is_string()) {
    const std::string& c = content.get_ref<const std::string&>();
    return c.empty() ? text : c + sep + text;
  }
  if (content.is_array()) {
    json parts = content;
    parts.push_back({{"type", "text"}, {"text", sep + text}});
    return parts;
  }
  return text;
}

// `text` followed by `content` (a string or text parts; anything else is left for checked_messages).
json prepended(const std::string& text, const json& content) {
  if (content.is_string()) return text + content.get<std::string>();
  if (!content.is_array()) return content;
  json parts = json::array({{{"type", "text"}, {"text", text}}});
  for (const json& part : content) parts.push_back(part);
  return parts;
}

// Phi-4-mini's call text: <|tool_call|>[{"name": ..., "arguments": {...}}, ...]<|/tool_call|>.
std::string phi4_calls_text(const json& calls) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();  // name first, as the model writes
  for (const json& c : calls) {
    nlohmann::ordered_json o;
    o["name"] = c["function"]["name"];
    o["arguments"] = c["function"]["arguments"];
    list.push_back(std::move(o));
  }
  return "<|tool_call|>" + list.dump() + "<|/tool_call|>";
}

// The function descriptions Phi-4-mini reads between <|tool|> and <|/tool|>: a JSON list of
// {name, description, parameters}.
std::string phi4_tools_text(const json& tools) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const json& t : tools) {
    const json& f = t["function"];
    nlohmann::ordered_json o;
    o["name"] = f["name"];
    if (f.contains("description")) o["description"] = f["description"];
    if (f.contains("parameters")) o["parameters"] = f["parameters"];
    list.push_back(std::move(o));
  }
  return list.dump();
}

// Earlier calls and results as text, for a template that knows nothing of them.
json as_default_text(const json& m) {
  json out = m;
  const std::string role = role_of(m);
  if (role == "assistant" && m.contains("tool_calls")) {
    std::string calls;
    for (const json& c : m["tool_calls"]) calls += (calls.empty() ? "" : "\n") + call_text(c);
    out.erase("tool_calls");
    out["content"] = appended(m.contains("content") ? m["content"] : json(), calls, "\n");
  } else if (role == "tool") {
    const json c = m.contains("content") ? m["content"] : json("");
    json content = c;  // neither a string nor parts: checked_messages reports it
    if (c.is_string()) {
      content = "<tool_response>\n" + c.get<std::string>() + "\n</tool_response>";
    } else if (c.is_array()) {
      content = json::array({{{"type", "text"}, {"text", "<tool_response>\n"}}});
      for (const json& part : c) content.push_back(part);
      content.push_back({{"type", "text"}, {"text", "\n</tool_response>"}});
    }
    out = {{"role", "user"}, {"content", std::move(content)}};
  }
  return out;
}

}  // namespace

std::string default_tools_text(const json& tools) {
  std::string s = "# Tools\n\nYou may call the following functions. Each is described by a JSON object:\n";
  for (const json& t : tools) s += t.dump() + "\n";
  s += "\nTo call functions, answer with one block per call and nothing else:\n<tool_call>\n{\"name\": "
       "<function "
       "name>, \"arguments\": <the arguments as a JSON object>}\n</tool_call>";
  return s;
}

ToolPrompt tool_prompt(ToolStyle style, const json& messages, const ToolRequest& req, bool system_role) {
  if (!messages.is_array()) return {messages, nullptr};  // ChatPrompt reports it
  ToolPrompt p{json::array(), req.active() && style != ToolStyle::Default ? req.tools : json()};
  for (size_t i = 0; i < messages.size(); ++i) {
    json m = messages[i];
    if (m.is_object() && m.contains("tool_calls")) {
      const std::string where = fmt::format("messages[{}].tool_calls", i);
      if (m["tool_calls"].is_null() || (m["tool_calls"].is_array() && m["tool_calls"].empty())) {
        m.erase("tool_calls");  // templates test for the key itself (Llama 3's `'tool_calls' in message`)
      } else {
        if (!m["tool_calls"].is_array()) bad_field(where, where + " must be an array");
        for (size_t k = 0; k < m["tool_calls"].size(); ++k)
          m["tool_calls"][k] = checked_call(m["tool_calls"][k], fmt::format("{}[{}]", where, k));
      }
    }
    if (role_of(m) == "tool" && m.contains("tool_call_id") && !m["tool_call_id"].is_string())
      bad_field(fmt::format("messages[{}].tool_call_id", i),
                fmt::format("messages[{}].tool_call_id must be a string", i));
    if (style == ToolStyle::Phi4 && role_of(m) == "assistant" && m.contains("tool_calls")) {
      m["content"] =
          appended(m.contains("content") ? m["content"] : json(), phi4_calls_text(m["tool_calls"]), "");
      m.erase("tool_calls");
    }
    // gpt-oss's template reads an assistant turn's reasoning from `thinking`; OpenAI-style clients
    // send back `reasoning_content` (it keeps the analysis of a turn that called a tool).
    if (style == ToolStyle::Harmony && role_of(m) == "assistant" && m.contains("reasoning_content") &&
        !m.contains("thinking") && m["reasoning_content"].is_string())
      m["thinking"] = m["reasoning_content"];
    p.messages.push_back(style == ToolStyle::Default && m.is_object() ? as_default_text(m) : m);
  }
  if (style == ToolStyle::Phi4) {  // the tools in the system message's `tools`, which the template writes
    p.tools = nullptr;
    if (!req.active() || p.messages.empty()) return p;
    if (role_of(p.messages[0]) != "system")
      p.messages.insert(
          p.messages.begin(),
          json{{"role", "system"}, {"content", "You are a helpful assistant with some tools."}});
    p.messages[0]["tools"] = phi4_tools_text(req.tools);
    return p;
  }
  if (style != ToolStyle::Default || !req.active() || p.messages.empty()) return p;
  const std::string text = default_tools_text(req.tools);
  if (!system_role) {
    for (json& m : p.messages)
      if (role_of(m) == "user") {
        m["content"] = prepended(text + "\n\n", m.contains("content") ? m["content"] : json(""));
        return p;
      }
  }
  json& first = p.messages[0];
  const std::string role = role_of(first);
  if (role == "system" || role == "developer")
    first["content"] = appended(first.contains("content") ? first["content"] : json(), text, "\n\n");
  else
    p.messages.insert(p.messages.begin(), json{{"role", "system"}, {"content", text}});
  return p;
}

}  // namespace ferrum::chat
