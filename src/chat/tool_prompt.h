// The tool part of a chat prompt: the messages and `tools` value a chat template is rendered
// with. Assistant messages' tool_calls are checked; their `function.arguments` (a JSON string in
// OpenAI's API) become objects, as HF templates expect (they apply `tojson` to them).
//
// Templates without tool support (ToolStyle::Default) get the tools in the system prompt, in this
// documented default format (appended to the first system/developer message, or as a new system
// message in front; for a template without a system role, in front of the first user message):
//
//   # Tools
//
//   You may call the following functions. Each is described by a JSON object:
//   {"type": "function", "function": {"name": ..., "description": ..., "parameters": ...}}
//   ...
//
//   To call functions, answer with one block per call and nothing else:
//   <tool_call>
//   {"name": <function name>, "arguments": <the arguments as a JSON object>}
//   </tool_call>
//
// and the conversation's earlier calls and results are written as text in that format: an
// assistant message's calls as <tool_call> blocks after its content, a `tool` message as a user
// message holding <tool_response>\n...\n</tool_response>.
#pragma once

#include <nlohmann/json.hpp>

#include "chat/tools.h"

namespace ferrum::chat {

struct ToolPrompt {
  nlohmann::json messages;
  nlohmann::json tools;  // null: the template gets no `tools`
};

// Throws ChatError naming a malformed tool call ("messages[3].tool_calls[0].function.arguments").
// `system_role`: the template writes system messages (ChatPrompt::system_role()).
ToolPrompt tool_prompt(ToolStyle style, const nlohmann::json& messages, const ToolRequest& req,
                       bool system_role = true);

// The default format's system prompt text for `tools` (exposed for tests).
std::string default_tools_text(const nlohmann::json& tools);

}  // namespace ferrum::chat
