#include "chat/chat_literal.h"

#include <charconv>

namespace ferrum::chat {
namespace {

constexpr std::string_view kMark = "\xF4\x8F\xBF\xBD";  // U+10FFFD, a private-use code point
constexpr std::string_view kMarkItself = "x";           // placeholder body for a literal U+10FFFD

// Appends s with every U+10FFFD written as a placeholder of its own.
void append_plain(std::string& out, std::string_view s) {
  size_t pos = 0;
  for (size_t at = s.find(kMark); at != std::string_view::npos; at = s.find(kMark, pos)) {
    out.append(s.substr(pos, at - pos));
    out.append(kMark).append(kMarkItself).append(kMark);
    pos = at + kMark.size();
  }
  out.append(s.substr(pos));
}

}  // namespace

std::string ChatLiteral::mark(std::string_view s) const {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  for (const Tokenizer::SpecialMatch& m : tok_.find_special(s)) {
    append_plain(out, s.substr(pos, m.begin - pos));
    out.append(kMark).append(std::to_string(m.id)).append(kMark);
    pos = m.end;
  }
  append_plain(out, s.substr(pos));
  return out;
}

ChatLiteral::Unmarked ChatLiteral::unmark(std::string_view s) const {
  Unmarked u;
  u.text.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t at = s.find(kMark, pos);
    if (at == std::string_view::npos) break;
    u.text.append(s.substr(pos, at - pos));
    const size_t body = at + kMark.size();
    const size_t close = s.find(kMark, body);
    const std::string_view inner = close == std::string_view::npos || close - body > 10
                                       ? std::string_view()
                                       : s.substr(body, close - body);
    int32_t id = -1;
    const auto [end, ec] = std::from_chars(inner.data(), inner.data() + inner.size(), id);
    if (inner == kMarkItself) {
      u.text.append(kMark);
    } else if (!inner.empty() && ec == std::errc() && end == inner.data() + inner.size() && id >= 0 &&
               id < tok_.n_vocab()) {
      const std::string& t = tok_.token_text(id);
      u.literal.push_back({u.text.size(), u.text.size() + t.size()});
      u.text.append(t);
    } else {  // not a placeholder (a template cut one apart): keep the bytes as they are
      u.text.append(kMark);
      pos = body;
      continue;
    }
    pos = close + kMark.size();
  }
  u.text.append(s.substr(std::min(pos, s.size())));
  return u;
}

}  // namespace ferrum::chat
