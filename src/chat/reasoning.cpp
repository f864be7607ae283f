#include "chat/reasoning.h"

namespace ferrum::chat {
namespace {

constexpr std::string_view kWhitespace = " \t\r\n";

std::string_view trim_left(std::string_view s) {
  const size_t b = s.find_first_not_of(kWhitespace);
  return b == std::string_view::npos ? std::string_view() : s.substr(b);
}

std::string_view trim_right(std::string_view s) {
  const size_t e = s.find_last_not_of(kWhitespace);
  return e == std::string_view::npos ? std::string_view() : s.substr(0, e + 1);
}

// `s` without a tail that is a proper prefix of `marker` (it may become the marker).
std::string_view without_marker_prefix(std::string_view s, std::string_view marker) {
  for (size_t n = std::min(marker.size() - 1, s.size()); n > 0; --n)
    if (s.substr(s.size() - n) == marker.substr(0, n)) return s.substr(0, s.size() - n);
  return s;
}

}  // namespace

std::optional<ReasoningMarkers> template_reasoning(std::string_view source, const Tokenizer& tok) {
  ReasoningMarkers m;
  if (source.find(m.end) != std::string_view::npos || source.find(m.start) != std::string_view::npos)
    return m;
  if (tok.encode(m.end, false, true).size() == 1 && tok.encode(m.start, false, true).size() == 1) return m;
  return std::nullopt;
}

PromptReasoning prompt_reasoning(std::string_view prompt, const ReasoningMarkers& m) {
  const size_t s = prompt.rfind(m.start);
  if (s == std::string_view::npos) return PromptReasoning::None;
  const size_t e = prompt.find(m.end, s);
  if (e == std::string_view::npos) return PromptReasoning::Open;
  // A closed block counts only when nothing but whitespace follows it: an earlier turn's reasoning
  // followed by a new turn's generation prompt leaves the choice to the model.
  return trim_left(prompt.substr(e + m.end.size())).empty() ? PromptReasoning::Closed : PromptReasoning::None;
}

ReasoningSplit split_reasoning(std::string_view t, const ReasoningMarkers& m, bool open, bool partial) {
  size_t pos = 0;
  if (!open) {
    const std::string_view rest = trim_left(t);
    if (rest.starts_with(m.start)) {
      pos = t.size() - rest.size() + m.start.size();
    } else if (partial && std::string_view(m.start).starts_with(rest)) {
      return {};  // undecided: whitespace, or the start marker's beginning
    } else {
      return {"", std::string(t)};
    }
  }
  const size_t e = t.find(m.end, pos);
  if (e == std::string_view::npos) {
    std::string_view r = t.substr(pos);
    if (partial) r = without_marker_prefix(r, m.end);
    return {std::string(trim_right(trim_left(r))), ""};
  }
  const std::string_view content = t.substr(e + m.end.size());
  return {std::string(trim_right(trim_left(t.substr(pos, e - pos)))), std::string(trim_left(content))};
}

ReasoningSplit ReasoningStream::delta(const ReasoningSplit& now) {
  ReasoningSplit d;
  if (now.reasoning.size() > sent_reasoning_) d.reasoning = now.reasoning.substr(sent_reasoning_);
  if (now.content.size() > sent_content_) d.content = now.content.substr(sent_content_);
  sent_reasoning_ = std::max(sent_reasoning_, now.reasoning.size());
  sent_content_ = std::max(sent_content_, now.content.size());
  return d;
}

ReasoningSplit ReasoningStream::push(std::string_view piece) {
  text_ += piece;
  if (piece.empty()) return {};
  return delta(split_reasoning(text_, m_, open_, /*partial=*/true));
}

ReasoningSplit ReasoningStream::finish() {
  return delta(split_reasoning(text_, m_, open_, /*partial=*/false));
}

ReasoningSplit stream_piece(std::optional<ReasoningStream>& r, std::string_view piece, bool last) {
  if (!r) return {"", std::string(piece)};
  ReasoningSplit d = r->push(piece);
  if (last) {
    const ReasoningSplit rest = r->finish();
    d.reasoning += rest.reasoning;
    d.content += rest.content;
  }
  return d;
}

}  // namespace ferrum::chat
