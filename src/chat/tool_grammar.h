// The grammar that makes an answer a tool call (tool_choice "required" or a named function), as
// GBNF text for the server's grammar cache: the style's call syntax around each allowed
// function's name and the JSON Schema of its `parameters` (grammar/json_schema.h; a function
// without parameters takes any object). Several calls only when parallel_tool_calls allows them
// and the style can write them (not Llama 3, whose templates take one call per turn).
//   Hermes, Default  <tool_call>\n{"name": "f", "arguments": ARGS}\n</tool_call>, joined by "\n"
//   Llama3           {"name": "f", "parameters": ARGS}
//   Mistral          [{"name": "f", "arguments": ARGS}, ...]  ([TOOL_CALLS] is a control token,
//                    which no grammar produces; the parser takes the bare array)
//   Harmony          (after harmony_call_prefill in the prompt) ARGS when the function is known,
//                    else f <|constrain|>json<|message|>ARGS, the markers spelled as text (the
//                    grammar produces no special token; the output is parsed as text). One call.
#pragma once

#include <string>

#include "chat/tools.h"

namespace ferrum::chat {

// Throws ChatError("tools[i].function.parameters", ...) for a schema the compiler does not support.
std::string tool_call_gbnf(ToolStyle style, const ToolRequest& req);

// A forced call in gpt-oss's harmony format begins the answer, in the prompt: the commentary
// channel's header to functions., with the function's name and the arguments' header when the
// call has one function to choose from (a named one, or "required" with one tool).
inline constexpr const char* kHarmonyArgsHeader = " <|constrain|>json<|message|>";
std::string harmony_call_prefill(const ToolRequest& req);
// The function a forced harmony call is to (null: the grammar chooses among several).
const std::string* harmony_call_head(const ToolRequest& req);

}  // namespace ferrum::chat
