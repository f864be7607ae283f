// Tool calling (OpenAI `tools`, `tool_choice`, `parallel_tool_calls`): the validated request, and
// the tool-call format of a chat template ("style"), chosen from the template text as llama.cpp
// does:
//   Hermes   the template writes <tool_call> (Qwen 2.5/3, Hermes): calls are
//            <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>, one after another;
//   Llama3   the template has an ipython turn (Llama 3.1/3.2): the whole answer is one
//            {"name": ..., "parameters": {...}}, optionally after <|python_tag|>;
//   Mistral  the template writes [TOOL_CALLS] (Mistral Nemo): [TOOL_CALLS][{"name": ...,
//            "arguments": {...}}, ...];
//   Phi4     the template writes a system message's `tools` between <|tool|> and <|/tool|>
//            (Phi-4-mini): the tools go there as JSON text, calls are <|tool_call|>[{"name": ...,
//            "arguments": {...}}, ...]<|/tool_call|> (the closing marker often left out);
//   Harmony  the template writes <|channel|> and <|message|> (gpt-oss): calls are commentary messages
//            to functions.NAME; the server rewrites the answer into the Hermes form (harmony.h)
//            and parses that;
//   Default  no tool support in the template (or no template): the tools go into the system
//            prompt (tool_prompt.h) and calls are written as in Hermes.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace ferrum::chat {

enum class ToolStyle { Hermes, Llama3, Mistral, Phi4, Harmony, Default };

// The style of a chat template's text ("" for no template).
ToolStyle detect_tool_style(std::string_view chat_template);
const char* tool_style_name(ToolStyle s);

struct ToolChoice {
  enum class Mode { Auto, None, Required, Named };
  Mode mode = Mode::Auto;
  std::string name;  // Named: the function the model must call
};

struct ToolRequest {
  // Validated `tools`: {"type": "function", "function": {"name", "description"?, "parameters"?}}.
  nlohmann::json tools = nlohmann::json::array();
  ToolChoice choice;
  bool parallel = true;  // parallel_tool_calls: several calls in one answer

  bool has_tools() const { return !tools.empty(); }
  // Tools are offered to the model and its answer parsed for calls.
  bool active() const { return has_tools() && choice.mode != ToolChoice::Mode::None; }
  // The answer must be a call (required or a named function): the grammar enforces it.
  bool forced() const {
    return has_tools() &&
           (choice.mode == ToolChoice::Mode::Required || choice.mode == ToolChoice::Mode::Named);
  }
  // The `function` object of the tool called `name` (null when there is none).
  const nlohmann::json* function(const std::string& name) const;
};

// Request JSON reaches templates with its object keys sorted (the body parser's order). Tools and
// tool calls get back the order in which OpenAI documents them and models write them (tools:
// type, function; functions: name, description, parameters; calls: id, type, function; a call's
// function: name, arguments), other keys after those in sorted order. The values inside are not
// touched.
void order_tool_keys(nlohmann::ordered_json& tools);       // a `tools` array
void order_tool_call_keys(nlohmann::ordered_json& calls);  // an assistant message's `tool_calls`

// `tools`, `tool_choice` and `parallel_tool_calls` of a chat request body. Throws ChatError
// (chat_prompt.h) naming the field: "tools[1].function.name", "tool_choice", ...
ToolRequest parse_tool_request(const nlohmann::json& body);

}  // namespace ferrum::chat
