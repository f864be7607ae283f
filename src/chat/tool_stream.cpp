#include "chat/tool_stream.h"

namespace ferrum::chat {
namespace {

constexpr std::string_view kSpace = " \t\r\n";

// Where `marker` occurs in `text` from `from`, or where a prefix of it ends the text; npos if neither.
size_t possible_marker(std::string_view text, std::string_view marker, size_t from) {
  const size_t at = text.find(marker, from);
  if (at != std::string_view::npos) return at;
  for (size_t n = std::min(marker.size() - 1, text.size()); n > 0; --n)
    if (text.size() - n >= from && text.substr(text.size() - n) == marker.substr(0, n))
      return text.size() - n;
  return std::string_view::npos;
}

// Whether `s` (leading whitespace skipped) may still be, or is, the start of `start`-led text.
bool may_start_with(std::string_view s, std::string_view start) {
  const size_t b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return true;
  s.remove_prefix(b);
  return s.size() < start.size() ? start.starts_with(s) : s.starts_with(start);
}

}  // namespace

// How much of the text may be content, whatever follows.
size_t ToolStreamSplitter::releasable() const {
  if (forced_) return 0;
  const std::string_view t = text_;
  if (style_ == ToolStyle::Llama3)  // the call is the whole answer
    return may_start_with(t, "{") || may_start_with(t, "<|python_tag|>") ? 0 : t.size();
  const bool array = style_ == ToolStyle::Mistral || style_ == ToolStyle::Phi4;
  if (array && may_start_with(t, "[")) return 0;  // maybe a bare call array
  const std::string_view marker = style_ == ToolStyle::Mistral ? "[TOOL_CALLS]"
                                  : style_ == ToolStyle::Phi4  ? "<|tool_call|>"
                                                               : "<tool_call>";
  size_t end = possible_marker(t, marker, released_);
  if (end == std::string_view::npos) end = t.size();
  const size_t last = t.substr(0, end).find_last_not_of(kSpace);
  return last == std::string_view::npos ? 0 : last + 1;
}

std::string ToolStreamSplitter::push(std::string_view piece) {
  text_ += piece;
  const size_t upto = releasable();
  if (upto <= released_) return {};
  std::string out = text_.substr(released_, upto - released_);
  released_ = upto;
  return out;
}

}  // namespace ferrum::chat
