// Jinja lexer configured as Hugging Face does (trim_blocks, lstrip_blocks, keep_trailing_newline
// off): splits a template into text and tag tokens, applying whitespace control on the way.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ferrum::jinja {

enum class Tok { Text, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, Eof };

struct Token {
  Tok type;
  std::string text;  // Text/Name/String(unescaped)/Op
  int64_t ival = 0;
  double fval = 0;
  int line = 1, col = 1;
};

// Throws TemplateError (TemplateSyntaxError) naming "name:line:col" on malformed input.
std::vector<Token> lex(std::string_view source, const std::string& name);

}  // namespace ferrum::jinja
