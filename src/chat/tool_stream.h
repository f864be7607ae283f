// Streaming an answer that may hold tool calls: which part of the text so far can be sent as
// content now. Text before a possible call is released as it comes; from where a call may begin
// (the style's marker, or a prefix of it at the end of the text; for styles whose call is the whole
// answer, an answer that starts like one) everything is held until the end, when the parser
// (tool_parser.h) decides. Trailing whitespace is held too, since the parser drops it before a
// call. So the released text is always a prefix of the parsed answer's content.
#pragma once

#include <string>
#include <string_view>

#include "chat/tools.h"

namespace ferrum::chat {

class ToolStreamSplitter {
 public:
  // `forced`: the answer is a call (tool_choice required or named): nothing is content.
  ToolStreamSplitter(ToolStyle style, bool forced) : style_(style), forced_(forced) {}
  // Adds `piece` to the answer; returns the content that can be sent now.
  std::string push(std::string_view piece);
  const std::string& text() const { return text_; }
  size_t released() const { return released_; }

 private:
  size_t releasable() const;
  ToolStyle style_;
  bool forced_;
  std::string text_;
  size_t released_ = 0;
};

}  // namespace ferrum::chat
