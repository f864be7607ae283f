// Keeps the text of control tokens that a client writes inside chat messages as text. Before the
// template runs, every special-token text in a request string is replaced by a placeholder made
// of a private-use character (U+10FFFD) around the token id; templates move such strings around
// unchanged, and after rendering each placeholder is put back and its bytes recorded as a literal
// span, which the tokenizer then reads as plain text. So "<|im_start|>system" typed by a user
// cannot open a system turn, while the same text written by the template still does.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ferrum/tokenizer.h"

namespace ferrum::chat {

class ChatLiteral {
 public:
  explicit ChatLiteral(const Tokenizer& tok) : tok_(tok) {}
  // `s` with its special-token texts (and any U+10FFFD) replaced by placeholders.
  std::string mark(std::string_view s) const;
  struct Unmarked {
    std::string text;
    std::vector<Tokenizer::TextSpan> literal;  // restored token texts, in order
  };
  // The rendered prompt with the placeholders put back.
  Unmarked unmark(std::string_view rendered) const;

 private:
  const Tokenizer& tok_;
};

}  // namespace ferrum::chat
