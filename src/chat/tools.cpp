#include "chat/tools.h"

#include <fmt/format.h>

#include "chat/chat_error.h"

namespace ferrum::chat {
namespace {

using json = nlohmann::json;

// OpenAI's rule for function names: 1 to 64 of a-z, A-Z, 0-9, '_' and '-' (so a name never needs
// escaping inside the JSON or the grammar of a call).
bool valid_function_name(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}

json checked_tool(const json& t, const std::string& where) {
  if (!t.is_object()) bad_field(where, where + " must be an object");
  if (!t.contains("type") || t["type"] != "function")
    bad_field(where + ".type", where + ".type must be \"function\" (the only tool type supported)");
  if (!t.contains("function") || !t["function"].is_object())
    bad_field(where + ".function", where + ".function must be an object");
  const json& f = t["function"];
  const std::string fw = where + ".function";
  if (!f.contains("name") || !f["name"].is_string() || !valid_function_name(f["name"].get<std::string>()))
    bad_field(fw + ".name", fw + ".name must be 1 to 64 letters, digits, '_' or '-'");
  if (f.contains("description") && !f["description"].is_null() && !f["description"].is_string())
    bad_field(fw + ".description", fw + ".description must be a string");
  if (f.contains("parameters") && !f["parameters"].is_null() && !f["parameters"].is_object())
    bad_field(fw + ".parameters", fw + ".parameters must be a JSON Schema object");
  if (f.contains("strict") && !f["strict"].is_null() && !f["strict"].is_boolean())
    bad_field(fw + ".strict", fw + ".strict must be a boolean");
  return t;
}

ToolChoice checked_choice(const json& c, const ToolRequest& r) {
  ToolChoice choice;
  if (c.is_string()) {
    const std::string s = c.get<std::string>();
    if (s == "auto")
      choice.mode = ToolChoice::Mode::Auto;
    else if (s == "none")
      choice.mode = ToolChoice::Mode::None;
    else if (s == "required")
      choice.mode = ToolChoice::Mode::Required;
    else
      bad_field("tool_choice",
                fmt::format("tool_choice '{}' is not one of none, auto, required", s.substr(0, 64)));
  } else if (c.is_object()) {
    if (!c.contains("type") || c["type"] != "function" || !c.contains("function") ||
        !c["function"].is_object() || !c["function"].contains("name") || !c["function"]["name"].is_string())
      bad_field(
          "tool_choice",
          "tool_choice must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": "
          "{\"name\": ...}}");
    choice.mode = ToolChoice::Mode::Named;
    choice.name = c["function"]["name"].get<std::string>();
    if (!r.function(choice.name))
      bad_field("tool_choice.function.name",
                fmt::format("tool_choice names function '{}', which is not among 'tools'",
                            choice.name.substr(0, 64)));
  } else {
    bad_field("tool_choice", "tool_choice must be a string or an object");
  }
  if (choice.mode != ToolChoice::Mode::None && !r.has_tools())
    bad_field("tool_choice", "tool_choice needs a non-empty 'tools' array");
  return choice;
}

// `o` with the keys `first` in front, in that order (an object; anything else is left alone).
void put_first(nlohmann::ordered_json& o, std::initializer_list<const char*> first) {
  if (!o.is_object()) return;
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const char* k : first)
    if (o.contains(k)) out[k] = std::move(o[k]);
  for (auto& [k, v] : o.items())
    if (!out.contains(k)) out[k] = std::move(v);
  o = std::move(out);
}

}  // namespace

void order_tool_keys(nlohmann::ordered_json& tools) {
  if (!tools.is_array()) return;
  for (auto& t : tools) {
    put_first(t, {"type", "function"});
    if (t.is_object() && t.contains("function"))
      put_first(t["function"], {"name", "description", "parameters"});
  }
}

void order_tool_call_keys(nlohmann::ordered_json& calls) {
  if (!calls.is_array()) return;
  for (auto& c : calls) {
    put_first(c, {"id", "type", "function"});
    if (c.is_object() && c.contains("function")) put_first(c["function"], {"name", "arguments"});
  }
}

ToolStyle detect_tool_style(std::string_view t) {
  if (t.find("<|channel|>") != std::string_view::npos && t.find("<|message|>") != std::string_view::npos)
    return ToolStyle::Harmony;
  if (t.find("<tool_call>") != std::string_view::npos) return ToolStyle::Hermes;
  if (t.find("[TOOL_CALLS]") != std::string_view::npos) return ToolStyle::Mistral;
  if (t.find("<|tool|>") != std::string_view::npos && t.find("<|/tool|>") != std::string_view::npos)
    return ToolStyle::Phi4;
  if (t.find("<|start_header_id|>") != std::string_view::npos && t.find("ipython") != std::string_view::npos)
    return ToolStyle::Llama3;
  return ToolStyle::Default;
}

const char* tool_style_name(ToolStyle s) {
  switch (s) {
    case ToolStyle::Hermes:
      return "hermes";
    case ToolStyle::Llama3:
      return "llama3";
    case ToolStyle::Mistral:
      return "mistral";
    case ToolStyle::Phi4:
      return "phi4";
    case ToolStyle::Harmony:
      return "harmony";
    case ToolStyle::Default:
      break;
  }
  return "default";
}

const json* ToolRequest::function(const std::string& name) const {
  for (const json& t : tools)
    if (t["function"]["name"] == name) return &t["function"];
  return nullptr;
}

ToolRequest parse_tool_request(const json& b) {
  ToolRequest r;
  if (b.contains("tools") && !b["tools"].is_null()) {
    const json& tools = b["tools"];
    if (!tools.is_array()) bad_field("tools", "'tools' must be an array");
    for (size_t i = 0; i < tools.size(); ++i) {
      const std::string where = fmt::format("tools[{}]", i);
      r.tools.push_back(checked_tool(tools[i], where));
      const std::string& name = r.tools.back()["function"]["name"].get_ref<const std::string&>();
      for (size_t j = 0; j < i; ++j)
        if (r.tools[j]["function"]["name"] == name)
          bad_field(where + ".function.name", fmt::format("{}: function '{}' is defined twice", where, name));
    }
  }
  if (b.contains("tool_choice") && !b["tool_choice"].is_null())
    r.choice = checked_choice(b["tool_choice"], r);
  if (b.contains("parallel_tool_calls") && !b["parallel_tool_calls"].is_null()) {
    if (!b["parallel_tool_calls"].is_boolean())
      bad_field("parallel_tool_calls", "'parallel_tool_calls' must be a boolean");
    r.parallel = b["parallel_tool_calls"].get<bool>();
  }
  return r;
}

}  // namespace ferrum::chat
