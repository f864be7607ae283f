#include "server/tool_answer.h"

#include <random>

#include "chat/tool_parser.h"

namespace ferrum::server {

std::string tool_call_id(chat::ToolStyle style) {
  static constexpr char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_int_distribution<size_t> pick(0, sizeof(kChars) - 2);
  const bool mistral = style == chat::ToolStyle::Mistral;
  std::string id = mistral ? "" : "call_";
  for (int i = 0; i < (mistral ? 9 : 24); ++i) id += kChars[pick(rng)];
  return id;
}

ToolAnswer tool_answer(chat::ToolStyle style, const chat::ToolRequest& req, const std::string& text,
                       const std::string& finish_reason) {
  chat::ParsedAnswer p = chat::parse_tool_answer(style, text, /*cut=*/finish_reason != "stop");
  if (!req.parallel && p.calls.size() > 1) p.calls.resize(1);
  ToolAnswer a;
  a.content = p.content.empty() && !p.calls.empty() ? nlohmann::json() : nlohmann::json(p.content);
  for (const chat::ToolCall& c : p.calls)
    a.tool_calls.push_back({{"id", tool_call_id(style)},
                            {"type", "function"},
                            {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  return a;
}

std::string tool_finish_reason(const ToolAnswer& a, const std::string& finish_reason) {
  return a.called() && finish_reason == "stop" ? "tool_calls" : finish_reason;
}

std::string unsent_content(const nlohmann::json& content, size_t released) {
  if (!content.is_string()) return "";
  const std::string& s = content.get_ref<const std::string&>();
  return s.size() > released ? s.substr(released) : "";
}

}  // namespace ferrum::server
