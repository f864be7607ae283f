#include "chat/tool_grammar.h"

#include <fmt/format.h>

#include "chat/chat_error.h"
#include "grammar/json_schema.h"

namespace ferrum::chat {
namespace {

using json = nlohmann::json;
using grammar::gbnf_literal;

// A function's parameters schema; none means any object.
json parameters_of(const json& f) {
  if (f.contains("parameters") && f["parameters"].is_object()) return f["parameters"];
  return {{"type", "object"}, {"additionalProperties", true}};
}

}  // namespace

std::string harmony_call_prefill(const ToolRequest& req) {
  const std::string* name = harmony_call_head(req);
  return "<|channel|>commentary to=functions." + (name ? *name + kHarmonyArgsHeader : std::string());
}

const std::string* harmony_call_head(const ToolRequest& req) {
  if (req.choice.mode == ToolChoice::Mode::Named) return &req.choice.name;
  if (req.tools.size() == 1) return req.tools[0]["function"]["name"].get_ptr<const std::string*>();
  return nullptr;
}

std::string tool_call_gbnf(ToolStyle style, const ToolRequest& req) {
  const char* args_key = style == ToolStyle::Llama3 ? "parameters" : "arguments";
  std::string rules, calls;
  for (size_t i = 0; i < req.tools.size(); ++i) {
    const json& f = req.tools[i]["function"];
    const std::string name = f["name"].get<std::string>();
    if (req.choice.mode == ToolChoice::Mode::Named && name != req.choice.name) continue;
    const std::string args = fmt::format("args{}", i);
    try {
      rules += grammar::json_schema_gbnf(parameters_of(f), args) + "\n";
    } catch (const Error& e) {
      const std::string where = fmt::format("tools[{}].function.parameters", i);
      throw ChatError(where, fmt::format("{}: {}", where, e.what()));
    }
    if (style == ToolStyle::Harmony) {  // the header up to "to=functions." is in the prompt
      const std::string head = harmony_call_head(req) ? "" : name + kHarmonyArgsHeader;
      calls += fmt::format("{}{}{}", calls.empty() ? "" : " | ", head.empty() ? "" : gbnf_literal(head) + " ", args);
      continue;
    }
    const std::string head = fmt::format("{{\"name\": \"{}\", \"{}\": ", name, args_key);
    calls += fmt::format("{}{} {} \"}}\"", calls.empty() ? "" : " | ", gbnf_literal(head), args);
  }
  rules += "call ::= " + calls + "\n";
  switch (style) {
    case ToolStyle::Llama3:
    case ToolStyle::Harmony:
      return "root ::= call\n" + rules;
    case ToolStyle::Mistral:
      return fmt::format("root ::= \"[\" call {}\"]\"\n", req.parallel ? "(\", \" call)* " : "") + rules;
    case ToolStyle::Phi4:
      return fmt::format("root ::= \"<|tool_call|>[\" call {}\"]<|/tool_call|>\"\n",
                         req.parallel ? "(\", \" call)* " : "") +
             rules;
    case ToolStyle::Hermes:
    case ToolStyle::Default:
      break;
  }
  return fmt::format("root ::= block {}\nblock ::= \"<tool_call>\\n\" call \"\\n</tool_call>\"\n",
                     req.parallel ? "(\"\\n\" block)*" : "") +
         rules;
}

}  // namespace ferrum::chat
