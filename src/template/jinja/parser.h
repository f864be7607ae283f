// Jinja parser: token stream -> statement tree. Unknown filters/tests, unsupported tags and
// malformed syntax fail here with the template line and column.
#pragma once

#include <string>
#include <vector>

#include "template/jinja/ast.h"
#include "template/jinja/lexer.h"

namespace ferrum::jinja {

Body parse(const std::vector<Token>& tokens, const std::string& name);

}  // namespace ferrum::jinja
