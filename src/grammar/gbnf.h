// GBNF, llama.cpp's grammar format: `name ::= alternatives` rules (the start rule is `root`),
// "literals", [character classes] with ranges, negation [^...] and escapes (\n \r \t \\ \" \]
// \xHH \uHHHH \UHHHHHHHH), `.` (any character), ( groups ), `|`, postfix `*` `+` `?` `{m}`
// `{m,}` `{m,n}`, and `#` comments. Rules end at a newline outside parentheses; a line starting
// with `|` continues the previous rule.
#pragma once

#include <string_view>

#include "grammar/grammar.h"

namespace ferrum::grammar {

// Adds the rules of `text` to `b`. Throws ferrum::Error "grammar: line L, column C: ..." on a
// syntax error.
void parse_gbnf(std::string_view text, GrammarBuilder& b);

// parse_gbnf + build("root").
Grammar compile_gbnf(std::string_view text);

}  // namespace ferrum::grammar
