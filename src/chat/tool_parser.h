// A model's answer split into text content and OpenAI tool calls, by the template's tool style
// (tools.h). Lenient as llama.cpp's parsers are: text that is not a well-formed call in the
// style's format stays content, so an answer never fails to parse.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "chat/tools.h"

namespace ferrum::chat {

struct ToolCall {
  std::string name;
  std::string arguments;  // the arguments object as compact JSON text (OpenAI's function.arguments)
};

struct ParsedAnswer {
  // The text before the calls, trailing whitespace dropped (the whole answer when there are none).
  std::string content;
  std::vector<ToolCall> calls;
};

// `cut`: the answer was stopped before its end (max_tokens, a full context). Then the calls it
// finished stand when a later one is unfinished (that one is dropped), instead of the whole answer
// staying content; a call cut inside its closing tag is finished.
ParsedAnswer parse_tool_answer(ToolStyle style, std::string_view text, bool cut = false);

}  // namespace ferrum::chat
